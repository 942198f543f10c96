/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counter snapshots for tests that check mlock accounting across several
 * processes: taken with or without draining every CPU's batches first
 * (counters.h explains why it matters), and compared per node. Errors
 * reading the counters end the test (Bail out!).
 */
#ifndef NT_SNAPSHOT_H
#define NT_SNAPSHOT_H

#include <stdbool.h>

#include "counters.h"

/* Reads every counter of the nodes in nodes, after nt_drain_all() when drain is set. */
void nt_snapshot(struct nt_counters *c, const struct nt_nodemask *nodes, bool drain);
/*
 * Whether, for every node in nodes, now_kb[node] - base_kb[node] is
 * pages[node] pages of page_kb (pages NULL: 0). Says which node is off, and
 * by how much, for name ("Mlocked").
 */
bool nt_nodes_moved(const struct nt_nodemask *nodes, const long *now_kb, const long *base_kb,
		    const long *pages, long page_kb, const char *name);
/*
 * Whether nr_mlock moved by unevictable_pgs_mlocked - munlocked - stranded -
 * cleared between base and now (every NR_MLOCK update comes with one of
 * these events in 6.1: lib/locked.h). Prints all the deltas, prefixed by label.
 */
bool nt_events_agree(const struct nt_counters *now, const struct nt_counters *base,
		     const char *label);

#endif
