/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A test and the children it forks, stepping together through flags in a
 * MAP_SHARED page: one side sets a flag, the other waits for it. Waits are
 * bounded, so a child that died or hung shows up as a timeout, not a hang.
 */
#ifndef NT_HANDSHAKE_H
#define NT_HANDSHAKE_H

#include <stdbool.h>

int nt_flag_get(const int *flag);
void nt_flag_set(int *flag, int value);
/* Waits until *flag >= want, looking every millisecond: false after timeout_s seconds. */
bool nt_flag_wait(const int *flag, int want, double timeout_s);
/* CLOCK_MONOTONIC in seconds. */
double nt_now_s(void);

#endif
