// SPDX-License-Identifier: GPL-2.0
/*
 * costmodel.so: a QEMU TCG plugin that gives a guest a deterministic cost
 * clock (docs/cost-model.md). It counts instructions (user and kernel apart),
 * atomics and memory accesses per vCPU, runs every access through a
 * per-vCPU L1D/L2/LLC model by guest-physical address, finds the home node of
 * each miss from the q35 layout of the topology's nodes, and between a start
 * and an end marker (marker.h) appends one record to the file out= names:
 *
 *   region=N vcpu=V insns=... cycles=...
 *
 * run-guest (--clock model) loads it with the topology's nodes, SLIT and
 * vCPU placement; the guest reads the records back through the run
 * directory's share. With profile=PATH it also counts, inside regions, the
 * instructions of each guest virtual address and writes them to PATH at
 * exit (profile.c, docs/profile.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "marker.h"
#include "model.h"
#include "qemu-plugin-api.h"

CM_PLUGIN_EXPORT int qemu_plugin_version = CM_QEMU_PLUGIN_VERSION;

struct cm_vcpu {
	struct cm_counts now;		/* since boot */
	struct cm_counts start;		/* at the open region's start marker */
	struct cm_hier hier;
	unsigned int node;
	bool open;
	uint64_t regions;
	/* The virtual line of the last RAM access: the most recent L1 line. */
	uint64_t last_vline;
};

static struct cm_params params;
static struct cm_layout layout;
static struct cm_vcpu *vcpus;
static unsigned int nr_vcpus;
/* One vCPU: count instructions with inline adds (exact and cheap). */
static bool inline_counts;
static unsigned int line_shift;
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t unmatched_end, restarted;
/* profile=: the file, the counters, the instructions of closed regions. */
static FILE *profile_out;
static struct cm_profile profile;
static uint64_t region_insns;

#define KIND_ATOMIC	0x100

static void on_insn(unsigned int vcpu, void *udata)
{
	uintptr_t kind = (uintptr_t)udata;

	if (vcpu >= nr_vcpus)
		return;
	vcpus[vcpu].now.c[kind & 0xff]++;
	if (kind & KIND_ATOMIC)
		vcpus[vcpu].now.c[CM_ATOMICS]++;
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
		   void *udata)
{
	unsigned int size = 1u << qemu_plugin_mem_size_shift(info);
	uint64_t vline = vaddr >> line_shift, gpa, end;
	struct qemu_plugin_hwaddr *hw;
	struct cm_vcpu *v;
	int home;

	(void)udata;
	if (vcpu >= nr_vcpus)
		return;
	v = &vcpus[vcpu];
	v->now.c[qemu_plugin_mem_is_store(info) ? CM_STORES : CM_LOADS]++;
	/*
	 * The same line as the access just before (rep stos, a struct's
	 * fields): the most recent line of L1, a hit. Saves the address
	 * lookups that dominate the plugin's cost; the counts are the same.
	 */
	if (vline == v->last_vline && (vaddr + size - 1) >> line_shift == vline)
		return;
	hw = qemu_plugin_get_hwaddr(info, vaddr);
	if (!hw || qemu_plugin_hwaddr_is_io(hw)) {
		v->now.c[CM_IO]++;
		v->last_vline = UINT64_MAX;
		return;
	}
	gpa = qemu_plugin_hwaddr_phys_addr(hw);
	home = cm_layout_from_qemu72(&layout, gpa, &gpa);
	cm_count_line(&v->now, &v->hier, v->node, gpa, home);
	v->last_vline = vline;
	/* An access across a line boundary (in one page) touches both lines. */
	end = gpa + size - 1;
	if ((end ^ gpa) >= params.line && (end >> 12) == (gpa >> 12)) {
		cm_count_line(&v->now, &v->hier, v->node, end, home);
		v->last_vline = (vaddr + size - 1) >> line_shift;
	}
}

static void write_record(unsigned int vcpu, struct cm_vcpu *v)
{
	struct cm_counts d;
	char buf[2048];

	cm_counts_sub(&d, &v->now, &v->start);
	cm_format(buf, sizeof(buf), &params, v->node, &d);
	pthread_mutex_lock(&out_lock);
	fprintf(out, "region=%" PRIu64 " vcpu=%u %s\n", v->regions, vcpu, buf);
	/* The guest reads the record right after the end marker. */
	fflush(out);
	pthread_mutex_unlock(&out_lock);
}

static void on_marker(unsigned int vcpu, void *udata)
{
	struct cm_vcpu *v;

	if (vcpu >= nr_vcpus)
		return;
	v = &vcpus[vcpu];
	if ((uintptr_t)udata == CM_OP_START) {
		/* A start inside a region starts it again (counted at exit). */
		if (v->open)
			__atomic_add_fetch(&restarted, 1, __ATOMIC_RELAXED);
		v->start = v->now;
		v->open = true;
		if (profile_out)
			cm_profile_start(&profile);
		return;
	}
	if (!v->open) {
		__atomic_add_fetch(&unmatched_end, 1, __ATOMIC_RELAXED);
		return;
	}
	v->open = false;
	v->regions++;
	if (profile_out) {
		cm_profile_end(&profile);
		region_insns += v->now.c[CM_INSN_USER] - v->start.c[CM_INSN_USER] +
				v->now.c[CM_INSN_KERNEL] - v->start.c[CM_INSN_KERNEL];
	}
	write_record(vcpu, v);
}

static void instrument(struct qemu_plugin_insn *insn)
{
	const uint8_t *data = qemu_plugin_insn_data(insn);
	size_t size = qemu_plugin_insn_size(insn);
	uintptr_t kind;
	int op;

	op = cm_x86_marker(data, size);
	if (op) {
		/* Markers are not counted: a region holds what is between them. */
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, CM_CB_NO_REGS,
						       (void *)(uintptr_t)op);
		return;
	}
	kind = cm_x86_kernel(qemu_plugin_insn_vaddr(insn)) ? CM_INSN_KERNEL : CM_INSN_USER;
	if (cm_x86_atomic(data, size))
		kind |= KIND_ATOMIC;
	if (inline_counts) {
		qemu_plugin_register_vcpu_insn_exec_inline(insn, CM_INLINE_ADD_U64,
							   &vcpus[0].now.c[kind & 0xff], 1);
		if (kind & KIND_ATOMIC)
			qemu_plugin_register_vcpu_insn_exec_inline(insn, CM_INLINE_ADD_U64,
								   &vcpus[0].now.c[CM_ATOMICS], 1);
	} else {
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, CM_CB_NO_REGS,
						       (void *)kind);
	}
	/* The same inline add as the count above: the two agree exactly. */
	if (profile_out)
		qemu_plugin_register_vcpu_insn_exec_inline(
			insn, CM_INLINE_ADD_U64,
			cm_profile_slot(&profile, qemu_plugin_insn_vaddr(insn)), 1);
	qemu_plugin_register_vcpu_mem_cb(insn, on_mem, CM_CB_NO_REGS, CM_MEM_RW, NULL);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (i = 0; i < n; i++)
		instrument(qemu_plugin_tb_get_insn(tb, i));
}

static void on_qemu_exit(qemu_plugin_id_t id, void *udata)
{
	char buf[2048];
	unsigned int i;

	(void)id;
	(void)udata;
	for (i = 0; i < nr_vcpus; i++) {
		cm_format(buf, sizeof(buf), &params, vcpus[i].node, &vcpus[i].now);
		fprintf(out, "# total vcpu=%u regions=%" PRIu64 " %s\n", i,
			vcpus[i].regions, buf);
	}
	fprintf(out, "# markers: %" PRIu64 " end without start, %" PRIu64
		" start inside a region\n", unmatched_end, restarted);
	fclose(out);
	if (profile_out) {
		if (cm_profile_write(&profile, profile_out, region_insns) | fclose(profile_out))
			fprintf(stderr, "costmodel: error: cannot write %s\n", params.profile);
		cm_profile_free(&profile);
	}
}

static int fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "costmodel: error: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return -1;
}

static int setup(const struct cm_qemu_info *info)
{
	unsigned int i, level;
	char err[256];
	int ret;

	if (cm_params_check(&params, err, sizeof(err)))
		return fail("%s", err);
	ret = cm_layout_init(&layout, params.nr_nodes, params.node_size);
	if (ret)
		return fail("nodes=: %s", "no node has memory");
	nr_vcpus = info->system.max_vcpus;
	if (params.nr_vcpus < nr_vcpus) {
		snprintf(err, sizeof(err), "vcpu_nodes= places %u vCPUs, QEMU has %u",
			 params.nr_vcpus, nr_vcpus);
		return fail("%s", err);
	}
	vcpus = calloc(nr_vcpus, sizeof(*vcpus));
	if (!vcpus)
		return fail("%s", strerror(ENOMEM));
	line_shift = __builtin_ctz(params.line);
	for (i = 0; i < nr_vcpus; i++) {
		vcpus[i].node = params.vcpu_node[i];
		vcpus[i].last_vline = UINT64_MAX;
		for (level = 0; level < CM_LEVELS; level++)
			if (cm_cache_init(&vcpus[i].hier.level[level], params.cache_size[level],
					  params.cache_ways[level], params.line))
				return fail("%s", "cannot set up the caches (out of memory?)");
	}
	inline_counts = nr_vcpus == 1;
	out = fopen(params.out, "w");
	if (!out)
		return fail("cannot write %s", params.out);
	if (params.profile[0]) {
		/* One vCPU: the profile's counters, like the inline counts, are shared. */
		if (nr_vcpus > 1) {
			snprintf(err, sizeof(err), "profile= counts the regions of one vCPU, "
				 "as the model clock runs; QEMU has %u", nr_vcpus);
			return fail("%s", err);
		}
		cm_profile_init(&profile);
		profile_out = fopen(params.profile, "w");
		if (!profile_out)
			return fail("cannot write %s", params.profile);
	}
	return 0;
}

CM_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					 const struct cm_qemu_info *info,
					 int argc, char **argv)
{
	char err[512];
	int i;

	/*
	 * The structures above and cm_layout_from_qemu72() follow API version 1
	 * as QEMU 7.2 implements it; another API version may lay them out or
	 * compute addresses differently.
	 */
	if (info->version.cur != CM_QEMU_PLUGIN_VERSION) {
		fprintf(stderr, "costmodel: error: this QEMU offers plugin API versions "
			"%d to %d; the cost model is written for version %d as QEMU 7.2 "
			"has it (Debian 12's qemu-system-x86): run it with that QEMU, or "
			"port plugin.c and check docs/cost-model.md's address mapping\n",
			info->version.min, info->version.cur, CM_QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (!info->system_emulation || strcmp(info->target_name, "x86_64"))
		return fail("runs in qemu-system-x86_64 only, not in %s", info->target_name);
	cm_params_default(&params);
	for (i = 0; i < argc; i++)
		if (cm_params_set(&params, argv[i], err, sizeof(err)))
			return fail("%s", err);
	if (setup(info))
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
	return 0;
}
