// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the cost model's caches (cache.c) on synthetic address
 * traces: hits and misses, LRU eviction order within a set, set indexing,
 * geometry checks, and which level of the hierarchy serves an access.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "tap.h"

#define LINE	64

/* A tiny cache: 4 sets x 2 ways x 64 bytes = 512 bytes. */
static void tiny(struct cm_cache *c)
{
	if (cm_cache_init(c, 512, 2, LINE))
		nt_tap_bail("cm_cache_init(512, 2, 64) failed");
}

/* The address of the k-th line that maps to set s of a 4-set cache. */
static uint64_t in_set(unsigned int s, unsigned int k)
{
	return ((uint64_t)k * 4 + s) * LINE;
}

static void test_hits_misses(void)
{
	struct cm_cache c;

	tiny(&c);
	nt_tap_result(!cm_cache_access(&c, 0x1000), "first access to a line misses");
	nt_tap_result(cm_cache_access(&c, 0x1000), "second access to the line hits");
	nt_tap_result(cm_cache_access(&c, 0x103f), "another byte of the same line hits");
	nt_tap_result(!cm_cache_access(&c, 0x1040), "the next line misses");
	nt_tap_result(cm_cache_holds(&c, 0x1000) && cm_cache_holds(&c, 0x1040) &&
		      !cm_cache_holds(&c, 0x2000),
		      "holds() sees filled lines and not others");
	cm_cache_free(&c);
}

static void test_lru_order(void)
{
	struct cm_cache c;
	bool ok;

	tiny(&c);
	/* Two ways: A, B fill set 1; C evicts the least recent, A. */
	cm_cache_access(&c, in_set(1, 0));
	cm_cache_access(&c, in_set(1, 1));
	cm_cache_access(&c, in_set(1, 2));
	ok = !cm_cache_holds(&c, in_set(1, 0)) && cm_cache_holds(&c, in_set(1, 1)) &&
	     cm_cache_holds(&c, in_set(1, 2));
	nt_tap_result(ok, "a third line in a 2-way set evicts the least recently used");

	/* Touch B, then D: C is now least recent and goes, B stays. */
	cm_cache_access(&c, in_set(1, 1));
	cm_cache_access(&c, in_set(1, 3));
	ok = cm_cache_holds(&c, in_set(1, 1)) && !cm_cache_holds(&c, in_set(1, 2)) &&
	     cm_cache_holds(&c, in_set(1, 3));
	nt_tap_result(ok, "a hit makes a line most recent: the other one is evicted");

	/* Lines of other sets were not disturbed by set 1's traffic. */
	cm_cache_access(&c, in_set(0, 0));
	cm_cache_access(&c, in_set(2, 0));
	cm_cache_access(&c, in_set(1, 4));
	cm_cache_access(&c, in_set(1, 5));
	ok = cm_cache_holds(&c, in_set(0, 0)) && cm_cache_holds(&c, in_set(2, 0));
	nt_tap_result(ok, "traffic in one set evicts nothing from other sets");
	cm_cache_free(&c);
}

static void test_streaming(void)
{
	struct cm_cache c;
	unsigned int i, hits = 0;

	tiny(&c);
	/* Cyclic access to 3 lines of one 2-way set: every access misses. */
	for (i = 0; i < 90; i++)
		hits += cm_cache_access(&c, in_set(2, i % 3));
	nt_tap_result(hits == 0, "a cycle one line larger than its set never hits "
		      "(LRU): %u hits", hits);
	/* Cyclic access to 8 lines: only the first round misses. */
	cm_cache_free(&c);
	tiny(&c);
	for (hits = 0, i = 0; i < 80; i++)
		hits += cm_cache_access(&c, (uint64_t)(i % 8) * LINE);
	nt_tap_result(hits == 72, "a cycle that fits hits after the first round: %u of 80",
		      hits);
	cm_cache_free(&c);
}

static void test_geometry(void)
{
	struct cm_cache c;
	int ok;

	nt_tap_result(cm_cache_init(&c, 1000, 2, LINE) == -EINVAL,
		      "a size that is not ways x line x sets is refused");
	nt_tap_result(cm_cache_init(&c, 512, 2, 48) == -EINVAL,
		      "a line size that is not a power of two is refused");
	nt_tap_result(cm_cache_init(&c, 512, 0, LINE) == -EINVAL, "zero ways are refused");
	/* 20 ways x 1024 sets: not a power of two ways, but a valid cache. */
	ok = !cm_cache_init(&c, 1280 << 10, 20, LINE);
	nt_tap_result(ok && c.sets == 1024, "1.25 MiB 20-way has 1024 sets");
	if (ok)
		cm_cache_free(&c);
	/* 3 sets: indexing by modulo, line 3 shares set 0 with line 0. */
	ok = !cm_cache_init(&c, 3 * LINE, 1, LINE);
	if (ok) {
		cm_cache_access(&c, 0);
		cm_cache_access(&c, 3 * LINE);
		ok = !cm_cache_holds(&c, 0) && cm_cache_holds(&c, 3 * LINE);
		cm_cache_free(&c);
	}
	nt_tap_result(ok, "a cache of 3 sets indexes by line modulo 3");
}

static void test_hierarchy(void)
{
	struct cm_hier h;
	unsigned int i, level;
	bool ok = true;

	/* L1 2 lines, L2 4 lines, LLC 8 lines, all fully associative. */
	if (cm_cache_init(&h.level[0], 2 * LINE, 2, LINE) ||
	    cm_cache_init(&h.level[1], 4 * LINE, 4, LINE) ||
	    cm_cache_init(&h.level[2], 8 * LINE, 8, LINE))
		nt_tap_bail("cannot set up the hierarchy");
	nt_tap_result(cm_hier_access(&h, 0) == CM_MEMORY, "a cold line comes from memory");
	nt_tap_result(cm_hier_access(&h, 0) == 0, "then it hits L1");
	/* Lines 1 and 2 push line 0 out of the 2-line L1, not out of L2. */
	cm_hier_access(&h, 1 * LINE);
	cm_hier_access(&h, 2 * LINE);
	nt_tap_result(cm_hier_access(&h, 0) == 1, "evicted from L1, it is served by L2");
	/* Five more lines push it out of the 4-line L2; the LLC still has it. */
	for (i = 3; i < 8; i++)
		cm_hier_access(&h, i * LINE);
	nt_tap_result(cm_hier_access(&h, 0) == 2, "evicted from L2, it is served by the LLC");
	/* Nine other lines flush the 8-line LLC too. */
	for (i = 8; i < 17; i++)
		cm_hier_access(&h, i * LINE);
	nt_tap_result(cm_hier_access(&h, 0) == CM_MEMORY,
		      "evicted from every level, it comes from memory again");
	for (i = 0; i < CM_LEVELS; i++)
		ok = ok && cm_cache_holds(&h.level[i], 0);
	nt_tap_result(ok, "a line from memory is filled into every level");
	level = cm_hier_access(&h, 16 * LINE);
	nt_tap_result(level == 0, "the last line before it is still in L1 (level %u)", level);
	for (i = 0; i < CM_LEVELS; i++)
		cm_cache_free(&h.level[i]);
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(22);
	test_hits_misses();
	test_lru_order();
	test_streaming();
	test_geometry();
	test_hierarchy();
	return nt_tap_finish();
}
