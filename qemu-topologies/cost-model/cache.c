// SPDX-License-Identifier: GPL-2.0
/*
 * Set-associative caches with true LRU replacement. Each set keeps its lines
 * in recency order, most recent first, so a hit moves one line to the front
 * and a miss shifts the set by one and drops the last line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

int cm_cache_init(struct cm_cache *c, uint64_t size, unsigned int ways,
		  unsigned int line)
{
	uint64_t sets;

	memset(c, 0, sizeof(*c));
	if (!line || (line & (line - 1)) || !ways || ways > 64)
		return -EINVAL;
	if (!size || size % ((uint64_t)ways * line))
		return -EINVAL;
	sets = size / ways / line;
	if (sets > (1u << 24))
		return -EINVAL;
	c->lines = calloc(sets * ways, sizeof(*c->lines));
	if (!c->lines)
		return -ENOMEM;
	c->sets = sets;
	c->ways = ways;
	c->line_shift = __builtin_ctz(line);
	return 0;
}

void cm_cache_free(struct cm_cache *c)
{
	free(c->lines);
	c->lines = NULL;
}

static uint64_t *cm_set(const struct cm_cache *c, uint64_t line)
{
	/* A division per lookup is measurable in the plugin: mask when we can. */
	uint64_t set = (c->sets & (c->sets - 1)) ? line % c->sets : line & (c->sets - 1);

	return c->lines + set * c->ways;
}

bool cm_cache_access(struct cm_cache *c, uint64_t addr)
{
	uint64_t line = addr >> c->line_shift, tag = line + 1;
	uint64_t *set = cm_set(c, line);
	unsigned int i;

	for (i = 0; i < c->ways && set[i]; i++) {
		if (set[i] != tag)
			continue;
		memmove(set + 1, set, i * sizeof(*set));
		set[0] = tag;
		return true;
	}
	/* Miss: the last way (empty or least recent) makes room. */
	memmove(set + 1, set, (c->ways - 1) * sizeof(*set));
	set[0] = tag;
	return false;
}

bool cm_cache_holds(const struct cm_cache *c, uint64_t addr)
{
	uint64_t line = addr >> c->line_shift, tag = line + 1;
	const uint64_t *set = cm_set(c, line);
	unsigned int i;

	for (i = 0; i < c->ways && set[i]; i++)
		if (set[i] == tag)
			return true;
	return false;
}

unsigned int cm_hier_access(struct cm_hier *h, uint64_t addr)
{
	unsigned int level;

	for (level = 0; level < CM_LEVELS; level++)
		if (cm_cache_access(&h->level[level], addr))
			return level;
	return CM_MEMORY;
}
