/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Region markers of the cost model (docs/cost-model.md): instructions that do
 * nothing on any x86-64 CPU and that the plugin recognises when QEMU
 * translates them, so that a benchmark can say exactly which instructions it
 * times. QEMU 7.2 plugins cannot read registers, hence one encoding per
 * marker: the 8-byte NOP "nopl disp32(%rax,%rax,1)" (0f 1f 84 00 + disp32)
 * with a displacement no compiler or kernel NOP uses.
 *
 * Outside the model clock they cost one instruction each.
 */
#ifndef CM_MARKER_H
#define CM_MARKER_H

/* disp32 = CM_MARKER_MAGIC | op, stored little-endian after 0f 1f 84 00. */
#define CM_MARKER_MAGIC		0x4d4e4300u	/* "\0CNM" */
#define CM_MARKER_LEN		8
#define CM_OP_START		0x01
#define CM_OP_END		0x02

#define CM_MARKER_ASM(op)	".byte 0x0f,0x1f,0x84,0x00," #op ",0x43,0x4e,0x4d"

#if defined(__x86_64__)
/* The memory clobber keeps the compiler from moving work across a marker. */
#define cm_region_start()	__asm__ __volatile__(CM_MARKER_ASM(0x01) ::: "memory")
#define cm_region_end()		__asm__ __volatile__(CM_MARKER_ASM(0x02) ::: "memory")
#else
#define cm_region_start()	do { } while (0)
#define cm_region_end()		do { } while (0)
#endif

#endif
