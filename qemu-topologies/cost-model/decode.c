// SPDX-License-Identifier: GPL-2.0
/*
 * Just enough x86-64 decoding to classify an instruction when QEMU translates
 * it: is it one of our markers, and is it atomic (LOCK prefix, or xchg with
 * a memory operand, which the CPU locks without a prefix).
 */
#include <string.h>

#include "marker.h"
#include "model.h"

int cm_x86_marker(const uint8_t *insn, size_t len)
{
	static const uint8_t nop[4] = { 0x0f, 0x1f, 0x84, 0x00 };
	uint32_t disp;

	if (len != CM_MARKER_LEN || memcmp(insn, nop, sizeof(nop)))
		return 0;
	disp = insn[4] | insn[5] << 8 | insn[6] << 16 | (uint32_t)insn[7] << 24;
	if ((disp & ~0xffu) != CM_MARKER_MAGIC)
		return 0;
	disp &= 0xff;
	return disp == CM_OP_START || disp == CM_OP_END ? (int)disp : 0;
}

static bool cm_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0xf0: case 0xf2: case 0xf3:		/* lock, repne, rep */
	case 0x2e: case 0x36: case 0x3e: case 0x26:	/* segments */
	case 0x64: case 0x65:
	case 0x66: case 0x67:				/* operand, address size */
		return true;
	}
	return false;
}

bool cm_x86_atomic(const uint8_t *insn, size_t len)
{
	size_t i = 0;

	for (; i < len && cm_legacy_prefix(insn[i]); i++)
		if (insn[i] == 0xf0)
			return true;
	if (i < len && (insn[i] & 0xf0) == 0x40)	/* REX */
		i++;
	/* xchg r/m8, r8 and xchg r/m, r: locked when ModRM names memory. */
	if (i + 1 < len && (insn[i] == 0x86 || insn[i] == 0x87))
		return (insn[i + 1] >> 6) != 3;
	return false;
}
