/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of QEMU's TCG plugin API (version 1, QEMU 4.2 to 7.2; see the
 * "TCG Plugins" chapter of QEMU 7.2's developer documentation) that the cost
 * model uses. Debian's qemu-system-x86 7.2 exports these functions but ships
 * no qemu-plugin.h, so they are declared here. Layouts and enumerator values
 * must match QEMU's exactly: qemu_plugin_install() checks the API version
 * QEMU reports and refuses any other.
 */
#ifndef CM_QEMU_PLUGIN_API_H
#define CM_QEMU_PLUGIN_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CM_PLUGIN_EXPORT	__attribute__((visibility("default")))

/* The API version this plugin is written against. */
#define CM_QEMU_PLUGIN_VERSION	1

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;

/* What QEMU passes to qemu_plugin_install(): valid during that call only. */
struct cm_qemu_info {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
};

enum cm_cb_flags {
	CM_CB_NO_REGS,
	CM_CB_R_REGS,
	CM_CB_RW_REGS,
};

enum cm_mem_rw {
	CM_MEM_R = 1,
	CM_MEM_W,
	CM_MEM_RW,
};

enum cm_inline_op {
	CM_INLINE_ADD_U64,
};

typedef void (*cm_udata_cb_t)(qemu_plugin_id_t id, void *udata);
typedef void (*cm_vcpu_udata_cb_t)(unsigned int vcpu, void *udata);
typedef void (*cm_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*cm_vcpu_mem_cb_t)(unsigned int vcpu, qemu_plugin_meminfo_t info,
				 uint64_t vaddr, void *udata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, cm_tb_trans_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, cm_udata_cb_t cb, void *udata);

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    cm_vcpu_udata_cb_t cb,
					    enum cm_cb_flags flags, void *udata);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn,
						enum cm_inline_op op, void *ptr,
						uint64_t imm);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
				      cm_vcpu_mem_cb_t cb, enum cm_cb_flags flags,
				      enum cm_mem_rw rw, void *udata);

unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info,
						  uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);

void qemu_plugin_outs(const char *string);

#endif
