// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of counting and modelled cycles (cost.c) and of the plugin
 * arguments (params.c). Expected cycles are worked out by hand from the
 * formula in docs/cost-model.md.
 */
#include <stdint.h>
#include <string.h>

#include "model.h"
#include "tap.h"

#define MiB	(1ULL << 20)

static struct cm_params params(void)
{
	struct cm_params p;

	cm_params_default(&p);
	p.lat_l2 = 14;
	p.lat_llc = 50;
	p.lat_mem = 400;
	p.lat_atomic = 8;
	p.nr_nodes = 2;
	p.slit[0][1] = 21;
	p.slit[1][0] = 21;
	return p;
}

static void test_count_line(void)
{
	static const uint64_t size[] = { 512 * MiB, 512 * MiB };
	struct cm_counts k;
	struct cm_layout l;
	struct cm_hier h;
	uint64_t gpa;
	int home, i;

	memset(&k, 0, sizeof(k));
	if (cm_layout_init(&l, 2, size) || cm_cache_init(&h.level[0], 128, 2, 64) ||
	    cm_cache_init(&h.level[1], 256, 4, 64) || cm_cache_init(&h.level[2], 512, 8, 64))
		nt_tap_bail("cannot set up the layout and caches");
	gpa = 512 * MiB + 4096;
	home = cm_layout_node(&l, gpa);
	cm_count_line(&k, &h, 0, gpa, home);
	nt_tap_result(k.c[CM_L1_MISS] == 1 && k.c[CM_L2_MISS] == 1 && k.c[CM_LLC_MISS] == 1 &&
		      k.c[CM_REMOTE] == 1 && k.node_miss[1] == 1,
		      "a cold line of node 1 from a CPU on node 0: missed everywhere, remote");
	cm_count_line(&k, &h, 0, gpa, home);
	nt_tap_result(k.c[CM_L1_MISS] == 1 && k.c[CM_LLC_MISS] == 1,
		      "the same line again hits L1: no new misses");
	cm_count_line(&k, &h, 0, 4096, 0);
	nt_tap_result(k.c[CM_LLC_MISS] == 2 && k.c[CM_REMOTE] == 1 && k.node_miss[0] == 1,
		      "a cold line of node 0 is a local miss");
	for (i = 1; i <= 2; i++)
		cm_count_line(&k, &h, 0, 8192 + i * 64, 0);
	cm_count_line(&k, &h, 0, gpa, home);
	nt_tap_result(k.c[CM_L1_MISS] == 5 && k.c[CM_L2_MISS] == 4 && k.c[CM_LLC_MISS] == 4,
		      "pushed out of the 2-line L1 only, the line is an L2 hit");
	cm_count_line(&k, &h, 0, 3ULL << 30, -1);
	nt_tap_result(k.c[CM_UNMAPPED] == 1 && k.c[CM_LLC_MISS] == 5 && k.c[CM_REMOTE] == 1,
		      "a miss of no node's memory counts as unmapped, not remote");
	for (i = 0; i < CM_LEVELS; i++)
		cm_cache_free(&h.level[i]);
}

static void counts(struct cm_counts *k)
{
	memset(k, 0, sizeof(*k));
	k->c[CM_INSN_USER] = 400;
	k->c[CM_INSN_KERNEL] = 600;
	k->c[CM_L1_MISS] = 100;
	k->c[CM_L2_MISS] = 40;
	k->c[CM_LLC_MISS] = 10;
	k->node_miss[0] = 4;
	k->node_miss[1] = 6;
	k->c[CM_REMOTE] = 6;
	k->c[CM_ATOMICS] = 5;
}

static void test_cycles(void)
{
	struct cm_params p = params();
	struct cm_counts k, before, d;
	char buf[1024];

	counts(&k);
	/* 1000 + 60 x 14 + 30 x 50 + 4 x 400 + 6 x 400 x 2.1 + 5 x 8 */
	nt_tap_result(cm_cycles(&p, 0, &k) == 10020, "CPU on node 0: 10020 cycles (%llu)",
		      (unsigned long long)cm_cycles(&p, 0, &k));
	/* 1000 + 840 + 1500 + 4 x 400 x 2.1 + 6 x 400 + 40 */
	nt_tap_result(cm_cycles(&p, 1, &k) == 9140, "CPU on node 1: 9140 cycles (%llu)",
		      (unsigned long long)cm_cycles(&p, 1, &k));
	memset(&k, 0, sizeof(k));
	k.c[CM_INSN_KERNEL] = 1000;
	k.c[CM_L1_MISS] = 1;
	k.c[CM_L2_MISS] = 1;
	k.c[CM_LLC_MISS] = 1;
	k.node_miss[1] = 1;
	p.lat_mem = 3;
	p.slit[0][1] = 16;
	nt_tap_result(cm_cycles(&p, 0, &k) == 1004, "3 x 1.6 = 4.8 cycles round down: 1004");
	k.c[CM_UNMAPPED] = 1;
	k.c[CM_LLC_MISS] = 2;
	k.c[CM_L1_MISS] = 2;
	k.c[CM_L2_MISS] = 2;
	nt_tap_result(cm_cycles(&p, 0, &k) == 1007, "an unmapped miss costs local memory: 1007");

	p = params();
	counts(&k);
	cm_format(buf, sizeof(buf), &p, 0, &k);
	nt_tap_result(strstr(buf, "insns=1000 user=400 kernel=600 atomics=5 ") &&
		      strstr(buf, " node_miss=4:6 cycles=10020"),
		      "the record carries counts, misses per node and cycles: %s", buf);
	before = k;
	k.c[CM_INSN_USER] += 7;
	k.node_miss[1] += 2;
	cm_counts_sub(&d, &k, &before);
	nt_tap_result(d.c[CM_INSN_USER] == 7 && d.c[CM_INSN_KERNEL] == 0 && d.node_miss[1] == 2,
		      "a region is the difference of two snapshots");
}

static int set(struct cm_params *p, const char *arg)
{
	char err[256];

	return cm_params_set(p, arg, err, sizeof(err));
}

static int check(struct cm_params *p, const char *want)
{
	char err[256] = "";
	int ret = cm_params_check(p, err, sizeof(err));

	return ret && strstr(err, want);
}

static void test_params(void)
{
	struct cm_params p;
	char err[256];
	bool ok;

	cm_params_default(&p);
	ok = !set(&p, "nodes=512M:0:1G") && !set(&p, "slit=10:20:30:20:10:20:30:20:10") &&
	     !set(&p, "vcpu_nodes=2") && !set(&p, "l1d=48K:12") && !set(&p, "llc=16M:16") &&
	     !set(&p, "lat_mem=300") && !set(&p, "out=/x/model.log");
	ok = ok && p.nr_nodes == 3 && p.node_size[1] == 0 && p.node_size[2] == 1024 * MiB &&
	     p.slit[0][2] == 30 && p.vcpu_node[0] == 2 && p.cache_size[0] == 48 << 10 &&
	     p.cache_ways[0] == 12 && p.lat_mem == 300 && !strcmp(p.out, "/x/model.log");
	nt_tap_result(ok && !cm_params_check(&p, err, sizeof(err)),
		      "a full set of arguments parses and checks");
	nt_tap_result(cm_params_set(&p, "latency=3", err, sizeof(err)) && strstr(err, "latency"),
		      "an unknown argument is refused by name");
	nt_tap_result(set(&p, "slit=10:20:20") && set(&p, "nodes=12X") && set(&p, "l2=1M") &&
		      set(&p, "lat_l2=-1") && set(&p, "out"),
		      "malformed values are refused");
	cm_params_default(&p);
	set(&p, "out=/x");
	nt_tap_result(check(&p, "nodes="), "no nodes= is refused");
	set(&p, "nodes=512M:512M");
	set(&p, "slit=10:20:20:20:10:20:20:20:10");
	nt_tap_result(check(&p, "3x3 for 2 nodes"), "a SLIT of another size is refused");
	set(&p, "slit=10:20:20:11");
	nt_tap_result(check(&p, "1->1 is 11"), "a local distance other than 10 is refused");
	set(&p, "slit=10:10:10:10");
	nt_tap_result(check(&p, "0->1 is 10"), "a remote distance of 10 is refused");
	set(&p, "slit=10:20:20:10");
	set(&p, "vcpu_nodes=0:2");
	nt_tap_result(check(&p, "vCPU 1 on node 2"), "a vCPU on a missing node is refused");
	set(&p, "vcpu_nodes=0");
	set(&p, "llc=1000:16");
	nt_tap_result(check(&p, "cache level 3"),
		      "an LLC size that is not ways x lines is refused");
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(20);
	test_count_line();
	test_cycles();
	test_params();
	return nt_tap_finish();
}
