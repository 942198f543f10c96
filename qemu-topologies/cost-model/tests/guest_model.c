// SPDX-License-Identifier: GPL-2.0
/*
 * In a guest under the model clock (run-guest --clock model): the cost model
 * sees what this program does between its markers. Known instruction
 * sequences give exact counts; a buffer bound to each memory node misses on
 * that node; and the cost of a miss grows with the SLIT distance the guest's
 * kernel reports. Skips, saying why, under any other clock.
 *
 * Records come back through the file named by NUMA_MATRIX_MODEL (run-guest
 * sets it), one line per region: "region=N vcpu=V insns=... cycles=...".
 */
#include <errno.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "marker.h"
#include "nodes.h"
#include "placement.h"
#include "tap.h"

#define BUF_SIZE	(32UL << 20)	/* twice the default LLC */
#define LINE		64

struct rec {
	unsigned long long region, user, kernel, atomics, llc_miss, remote, cycles;
	unsigned long long node_miss[NT_MAX_NODES];
	int nodes;
};

static const char *model_file;

/* The last record of the model file; -ENOENT when there is none. */
static int last_record(struct rec *r)
{
	char line[4096], last[4096] = "", *tok, *save;
	FILE *f = fopen(model_file, "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "region=", 7))
			strcpy(last, line);
	fclose(f);
	if (!last[0])
		return -ENOENT;
	memset(r, 0, sizeof(*r));
	for (tok = strtok_r(last, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		unsigned long long *field = NULL;
		char *eq = strchr(tok, '=');

		if (!eq)
			continue;
		*eq++ = 0;
		if (!strcmp(tok, "region"))
			field = &r->region;
		else if (!strcmp(tok, "user"))
			field = &r->user;
		else if (!strcmp(tok, "kernel"))
			field = &r->kernel;
		else if (!strcmp(tok, "atomics"))
			field = &r->atomics;
		else if (!strcmp(tok, "llc_miss"))
			field = &r->llc_miss;
		else if (!strcmp(tok, "remote"))
			field = &r->remote;
		else if (!strcmp(tok, "cycles"))
			field = &r->cycles;
		if (field) {
			*field = strtoull(eq, NULL, 10);
		} else if (!strcmp(tok, "node_miss")) {
			for (char *p = eq; *p && r->nodes < NT_MAX_NODES; r->nodes++) {
				r->node_miss[r->nodes] = strtoull(p, &p, 10);
				if (*p == ':')
					p++;
			}
		}
	}
	return 0;
}

static void record_or_bail(struct rec *r, const char *what)
{
	int err = last_record(r);

	if (err)
		nt_tap_bail("no model record after %s in %s: %s", what, model_file,
			    strerror(-err));
}

static void test_instructions(void)
{
	struct rec r;

	cm_region_start();
	__asm__ __volatile__("mov $1000, %%ecx\n1: dec %%ecx\njnz 1b" ::: "ecx", "cc");
	cm_region_end();
	record_or_bail(&r, "a counted loop");
	nt_tap_result(r.user == 2001, "a 1000-round loop of 2 instructions + 1 is 2001 "
		      "user instructions (%llu)", r.user);
}

static void test_atomics(void)
{
	unsigned int counter = 0, slot = 0;
	struct rec r;

	cm_region_start();
	__asm__ __volatile__("mov $100, %%ecx\n"
			     "1: lock incl %0\n"
			     "xchg %%eax, %1\n"
			     "dec %%ecx\njnz 1b"
			     : "+m"(counter), "+m"(slot) : : "eax", "ecx", "cc");
	cm_region_end();
	record_or_bail(&r, "the atomics loop");
	/* An interrupt taken inside the region may add the kernel's own. */
	nt_tap_result(r.atomics >= 200 && r.atomics <= 200 + r.kernel,
		      "100 lock incl + 100 xchg with memory are 200 atomics (%llu, %llu "
		      "kernel instructions)", r.atomics, r.kernel);
}

static void test_markers(void)
{
	struct rec before, after;

	record_or_bail(&before, "the earlier regions");
	cm_region_end();
	record_or_bail(&after, "an end marker alone");
	nt_tap_result(after.region == before.region,
		      "an end marker without a start writes no record");
	cm_region_start();
	cm_region_start();
	__asm__ __volatile__("nop");
	cm_region_end();
	record_or_bail(&after, "a restarted region");
	nt_tap_result(after.region == before.region + 1 && after.user == 1,
		      "a second start restarts the region: one record, 1 instruction (%llu)",
		      after.user);
}

static unsigned int distance(int from, int to)
{
	char path[128];
	unsigned int d = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/distance", from);
	f = fopen(path, "r");
	if (!f)
		nt_tap_bail("cannot read %s: %s", path, strerror(errno));
	for (i = 0; i <= to; i++)
		if (fscanf(f, "%u", &d) != 1)
			nt_tap_bail("%s has no distance to node %d", path, to);
	fclose(f);
	return d;
}

/* Reads one byte per line of a buffer bound to node: the record of it. */
static void read_on_node(int node, struct rec *r)
{
	unsigned long mask[NT_MAX_NODES / (8 * sizeof(long)) + 1] = { 0 };
	size_t page = sysconf(_SC_PAGESIZE), npages = BUF_SIZE / page, i;
	volatile char *buf;
	int *status;
	char sum = 0;

	buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	status = calloc(npages, sizeof(*status));
	if (buf == MAP_FAILED || !status)
		nt_tap_bail("cannot map %lu MiB: %s", BUF_SIZE >> 20, strerror(errno));
	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
	if (mbind((void *)buf, BUF_SIZE, MPOL_BIND, mask, NT_MAX_NODES + 1, 0))
		nt_tap_bail("mbind to node %d: %s", node, strerror(errno));
	memset((void *)buf, 1, BUF_SIZE);
	if (nt_pages_nodes((void *)buf, npages, page, status))
		nt_tap_bail("move_pages query: %s", strerror(errno));
	for (i = 0; i < npages; i++)
		if (status[i] != node)
			nt_tap_bail("page %zu of the buffer bound to node %d is on %d", i, node,
				    status[i]);
	cm_region_start();
	for (i = 0; i < BUF_SIZE; i += LINE)
		sum += buf[i];
	cm_region_end();
	record_or_bail(r, "reading a buffer");
	munmap((void *)buf, BUF_SIZE);
	free(status);
	(void)sum;
}

static void test_nodes(const struct nt_topology *t, int cpu_node)
{
	unsigned long long lines = BUF_SIZE / LINE, per_miss[NT_MAX_NODES] = { 0 };
	struct rec r;
	int n, m;
	bool ok;

	nt_mask_for_each(n, &t->memory) {
		read_on_node(n, &r);
		ok = n < r.nodes && r.node_miss[n] >= lines * 95 / 100;
		nt_tap_result(ok, "a %lu MiB buffer bound to node %d misses on node %d: %llu "
			      "of %llu lines", BUF_SIZE >> 20, n, n,
			      n < r.nodes ? r.node_miss[n] : 0, lines);
		per_miss[n] = r.llc_miss ? r.cycles / r.llc_miss : 0;
		nt_tap_diag("node %d: %llu misses, %llu remote, %llu cycles, %llu per miss",
			    n, r.llc_miss, r.remote, r.cycles, per_miss[n]);
	}
	/* Cost per miss must order like the SLIT distances the kernel reports. */
	ok = true;
	nt_mask_for_each(n, &t->memory)
		nt_mask_for_each(m, &t->memory)
			if (distance(cpu_node, n) < distance(cpu_node, m) &&
			    per_miss[n] >= per_miss[m])
				ok = false;
	nt_tap_result(ok, "cycles per miss grow with the SLIT distance from node %d", cpu_node);
}

int main(void)
{
	struct nt_topology t;
	int cpu_node, err;

	nt_tap_start();
	model_file = getenv("NUMA_MATRIX_MODEL");
	if (!model_file)
		nt_tap_skip_all("not under the model clock (run-guest --clock model sets "
				"NUMA_MATRIX_MODEL)");
	err = nt_topology_read(&t);
	if (err)
		nt_tap_bail("cannot read the NUMA topology: %s", strerror(-err));
	cpu_node = nt_memory_node_with_cpus(&t);
	if (cpu_node < 0)
		nt_tap_bail("no memory node has this task's CPU");
	nt_tap_plan(5 + nt_mask_weight(&t.memory));
	test_instructions();
	test_atomics();
	test_markers();
	test_nodes(&t, cpu_node);
	return nt_tap_finish();
}
