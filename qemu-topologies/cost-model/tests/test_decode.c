// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the translation-time decoding (decode.c): the markers as
 * the assembler encodes marker.h's macros are recognised and near misses are
 * not; LOCK-prefixed instructions and xchg with memory are atomics, the same
 * instructions patched for one CPU (DS prefix) or on registers are not.
 */
#include <stdint.h>

#include "marker.h"
#include "model.h"
#include "tap.h"

/* The bytes of the markers exactly as the guest's macros assemble them. */
__asm__(".pushsection .rodata\n"
	"cm_test_start: " CM_MARKER_ASM(0x01) "\n"
	"cm_test_end: " CM_MARKER_ASM(0x02) "\n"
	".popsection\n");
extern const uint8_t cm_test_start[], cm_test_end[];

#define CHECK_ATOMIC(want, name, ...)						\
	do {									\
		static const uint8_t b[] = { __VA_ARGS__ };			\
		nt_tap_result(cm_x86_atomic(b, sizeof(b)) == (want), "%s", name);	\
	} while (0)

#define CHECK_MARKER(want, name, ...)						\
	do {									\
		static const uint8_t b[] = { __VA_ARGS__ };			\
		nt_tap_result(cm_x86_marker(b, sizeof(b)) == (want), "%s", name);	\
	} while (0)

static void test_markers(void)
{
	nt_tap_result(cm_x86_marker(cm_test_start, CM_MARKER_LEN) == CM_OP_START,
		      "cm_region_start() as assembled is the start marker");
	nt_tap_result(cm_x86_marker(cm_test_end, CM_MARKER_LEN) == CM_OP_END,
		      "cm_region_end() as assembled is the end marker");
	nt_tap_result(cm_x86_marker(cm_test_start, CM_MARKER_LEN - 1) == 0,
		      "a marker cut short is not a marker");
	CHECK_MARKER(0, "the compilers' and kernel's nopl 0x0(%rax,%rax,1) is not a marker",
		     0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00);
	CHECK_MARKER(0, "an unknown marker op (3) is not a marker",
		     0x0f, 0x1f, 0x84, 0x00, 0x03, 0x43, 0x4e, 0x4d);
	CHECK_MARKER(0, "one byte of the magic changed is not a marker",
		     0x0f, 0x1f, 0x84, 0x00, 0x01, 0x43, 0x4e, 0x4c);
	CHECK_MARKER(0, "the same displacement on another NOP form is not a marker",
		     0x66, 0x0f, 0x1f, 0x84, 0x00, 0x01, 0x43, 0x4e, 0x4d);
	CHECK_ATOMIC(false, "a marker is not an atomic",
		     0x0f, 0x1f, 0x84, 0x00, 0x01, 0x43, 0x4e, 0x4d);
}

static void test_atomics(void)
{
	CHECK_ATOMIC(true, "lock cmpxchg %rcx,(%rdx) is atomic", 0xf0, 0x48, 0x0f, 0xb1, 0x0a);
	CHECK_ATOMIC(true, "lock incl (%rdi) is atomic", 0xf0, 0xff, 0x07);
	CHECK_ATOMIC(true, "lock after an operand-size prefix (lock xadd %ax) is atomic",
		     0x66, 0xf0, 0x0f, 0xc1, 0x07);
	CHECK_ATOMIC(true, "xchg %rax,(%rdi) is atomic without a prefix", 0x48, 0x87, 0x07);
	CHECK_ATOMIC(true, "xchg %al,(%rdi) is atomic", 0x86, 0x07);
	CHECK_ATOMIC(true, "xchg with a displacement, xchg %eax,0x10(%rbx), is atomic",
		     0x87, 0x43, 0x10);
	CHECK_ATOMIC(false, "xchg %rax,%rdi (registers) is not atomic", 0x48, 0x87, 0xc7);
	CHECK_ATOMIC(false, "ds cmpxchg (LOCK patched out for one CPU) is not atomic",
		     0x3e, 0x48, 0x0f, 0xb1, 0x0a);
	CHECK_ATOMIC(false, "mov %rax,(%rdi) is not atomic", 0x48, 0x89, 0x07);
	CHECK_ATOMIC(false, "nop is not atomic", 0x90);
	CHECK_ATOMIC(false, "a lone xchg opcode byte is not atomic", 0x87);
}

static void test_kernel(void)
{
	nt_tap_result(cm_x86_kernel(0xffffffff81000000ULL) &&
		      cm_x86_kernel(0xffff888000000000ULL),
		      "kernel text and direct map are kernel addresses");
	nt_tap_result(!cm_x86_kernel(0x401000) && !cm_x86_kernel(0x00007ffff7dd0000ULL),
		      "program text and shared libraries are user addresses");
}

int main(void)
{
	nt_tap_start();
	nt_tap_plan(21);
	test_markers();
	test_atomics();
	test_kernel();
	return nt_tap_finish();
}
