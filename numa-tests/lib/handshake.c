// SPDX-License-Identifier: GPL-2.0
#include <time.h>
#include <unistd.h>

#include "handshake.h"

int nt_flag_get(const int *flag)
{
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

void nt_flag_set(int *flag, int value)
{
	__atomic_store_n(flag, value, __ATOMIC_RELEASE);
}

double nt_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

bool nt_flag_wait(const int *flag, int want, double timeout_s)
{
	double end = nt_now_s() + timeout_s;

	while (nt_flag_get(flag) < want) {
		if (nt_now_s() > end)
			return false;
		usleep(1000);
	}
	return true;
}
