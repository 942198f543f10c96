// SPDX-License-Identifier: GPL-2.0
#include "snapshot.h"
#include "tap.h"

void nt_snapshot(struct nt_counters *c, const struct nt_nodemask *nodes, bool drain)
{
	if (drain && nt_drain_all())
		nt_tap_bail("draining every CPU's batches");
	if (nt_counters_read(c, nodes))
		nt_tap_bail("reading the mlock counters");
}

bool nt_nodes_moved(const struct nt_nodemask *nodes, const long *now_kb, const long *base_kb,
		    const long *pages, long page_kb, const char *name)
{
	long want, got;
	bool ok = true;
	int node;

	nt_mask_for_each(node, nodes) {
		want = pages ? pages[node] * page_kb : 0;
		got = now_kb[node] - base_kb[node];
		if (got == want)
			continue;
		nt_tap_diag("node %d: %s %+ld kB, expected %+ld kB", node, name, got, want);
		ok = false;
	}
	return ok;
}

bool nt_events_agree(const struct nt_counters *now, const struct nt_counters *base,
		     const char *label)
{
	struct nt_counters d;
	long sum;

	nt_counters_delta(now, base, &d);
	sum = d.vmstat[NT_PGS_MLOCKED] - d.vmstat[NT_PGS_MUNLOCKED] - d.vmstat[NT_PGS_STRANDED] -
	      d.vmstat[NT_PGS_CLEARED];
	nt_tap_diag("%s: events mlocked %+ld munlocked %+ld culled %+ld rescued %+ld stranded %+ld cleared %+ld; nr_mlock %+ld",
		    label, d.vmstat[NT_PGS_MLOCKED], d.vmstat[NT_PGS_MUNLOCKED],
		    d.vmstat[NT_PGS_CULLED], d.vmstat[NT_PGS_RESCUED], d.vmstat[NT_PGS_STRANDED],
		    d.vmstat[NT_PGS_CLEARED], d.vmstat[NT_NR_MLOCK]);
	return d.vmstat[NT_NR_MLOCK] == sum;
}
