// SPDX-License-Identifier: GPL-2.0
/*
 * The instruction profile of marked regions (profile=PATH): how many
 * instructions each guest virtual address executed between a start and an
 * end marker, summed over every region of the run (docs/profile.md).
 *
 * Each translated instruction gets a slot whose counter the plugin
 * increments inline every time the instruction runs, region or not: the
 * same kind of inline add as the region's own instruction count, at the
 * same place, so the two agree to the instruction. A start marker notes
 * every counter, an end marker adds what each counted since to its sum;
 * the slots are walked at markers only, so the cost between markers is the
 * inline add alone. An instruction translated more than once (another
 * block, a flushed cache) has a slot per translation, merged by address
 * when the file is written.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define CHUNK_SLOTS	65536

void cm_profile_init(struct cm_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->sink.vaddr = CM_PROFILE_NOWHERE;
}

static struct cm_profile_slot *new_slot(struct cm_profile *p)
{
	struct cm_profile_slot **chunks;
	size_t i = p->nr_slots % CHUNK_SLOTS;

	if (!i && p->nr_slots / CHUNK_SLOTS == p->nr_chunks) {
		chunks = realloc(p->chunks, (p->nr_chunks + 1) * sizeof(*chunks));
		if (!chunks)
			return NULL;
		p->chunks = chunks;
		p->chunks[p->nr_chunks] = calloc(CHUNK_SLOTS, sizeof(**chunks));
		if (!p->chunks[p->nr_chunks])
			return NULL;
		p->nr_chunks++;
	}
	return &p->chunks[p->nr_slots / CHUNK_SLOTS][i];
}

uint64_t *cm_profile_slot(struct cm_profile *p, uint64_t vaddr)
{
	struct cm_profile_slot *s = new_slot(p);

	if (!s) {
		/* Out of memory: counted all the same, at no address. */
		p->lost++;
		return &p->sink.count;
	}
	/* Zeroed: translated inside a region, it has run 0 times since its start. */
	p->nr_slots++;
	s->vaddr = vaddr;
	return &s->count;
}

static void each_slot(struct cm_profile *p, void (*fn)(struct cm_profile_slot *s))
{
	size_t i;

	for (i = 0; i < p->nr_slots; i++)
		fn(&p->chunks[i / CHUNK_SLOTS][i % CHUNK_SLOTS]);
	fn(&p->sink);
}

static void mark_start(struct cm_profile_slot *s)
{
	s->start = s->count;
}

static void add_region(struct cm_profile_slot *s)
{
	s->sum += s->count - s->start;
}

void cm_profile_start(struct cm_profile *p)
{
	each_slot(p, mark_start);
}

void cm_profile_end(struct cm_profile *p)
{
	each_slot(p, add_region);
	p->regions++;
}

static int by_vaddr(const void *a, const void *b)
{
	const struct cm_profile_slot *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

int cm_profile_write(struct cm_profile *p, FILE *f, uint64_t region_insns)
{
	struct cm_profile_slot *all;
	uint64_t total = 0;
	size_t i, n = 0;

	all = malloc((p->nr_slots + 1) * sizeof(*all));
	if (!all)
		return -1;
	for (i = 0; i < p->nr_slots; i++) {
		struct cm_profile_slot *s = &p->chunks[i / CHUNK_SLOTS][i % CHUNK_SLOTS];

		if (s->sum)
			all[n++] = *s;
	}
	if (p->sink.sum)
		all[n++] = p->sink;
	qsort(all, n, sizeof(*all), by_vaddr);
	for (i = 0; i < n; i++)
		total += all[i].sum;
	fprintf(f, "# costmodel profile: instructions executed inside marked "
		"regions, by guest virtual address (docs/profile.md)\n");
	fprintf(f, "# regions=%" PRIu64 " insns=%" PRIu64 " region_insns=%" PRIu64
		" translations=%zu lost=%" PRIu64 "\n", p->regions, total, region_insns,
		p->nr_slots, p->lost);
	for (i = 0; i < n; i++) {
		uint64_t sum = all[i].sum;

		while (i + 1 < n && all[i + 1].vaddr == all[i].vaddr)
			sum += all[++i].sum;
		fprintf(f, "%016" PRIx64 " %" PRIu64 "\n", all[i].vaddr, sum);
	}
	free(all);
	return ferror(f) ? -1 : 0;
}

void cm_profile_free(struct cm_profile *p)
{
	size_t i;

	for (i = 0; i < p->nr_chunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	cm_profile_init(p);
}
