// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodemask.h"

void nt_mask_clear(struct nt_nodemask *m)
{
	memset(m, 0, sizeof(*m));
}

void nt_mask_set(struct nt_nodemask *m, int node)
{
	if (node < 0 || node >= NT_MAX_NODES)
		return;
	m->bits[node / NT_LONG_BITS] |= 1UL << (node % NT_LONG_BITS);
}

bool nt_mask_isset(const struct nt_nodemask *m, int node)
{
	if (node < 0 || node >= NT_MAX_NODES)
		return false;
	return m->bits[node / NT_LONG_BITS] & (1UL << (node % NT_LONG_BITS));
}

int nt_mask_weight(const struct nt_nodemask *m)
{
	int node, n = 0;

	nt_mask_for_each(node, m)
		n++;
	return n;
}

int nt_mask_next(const struct nt_nodemask *m, int node)
{
	for (node++; node < NT_MAX_NODES; node++)
		if (nt_mask_isset(m, node))
			return node;
	return -1;
}

int nt_mask_nth(const struct nt_nodemask *m, int n)
{
	int node;

	nt_mask_for_each(node, m)
		if (n-- == 0)
			return node;
	return -1;
}

void nt_mask_and(struct nt_nodemask *dst, const struct nt_nodemask *a,
		 const struct nt_nodemask *b)
{
	size_t i;

	for (i = 0; i < NT_MASK_LONGS; i++)
		dst->bits[i] = a->bits[i] & b->bits[i];
}

static int parse_node(const char **s, int *node)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**s))
		return -EINVAL;
	errno = 0;
	v = strtol(*s, &end, 10);
	if (errno || v >= NT_MAX_NODES)
		return -ERANGE;
	*node = v;
	*s = end;
	return 0;
}

/* One "a" or "a-b" item of a list. */
static int parse_range(const char **s, struct nt_nodemask *m)
{
	int first, last, err;

	err = parse_node(s, &first);
	if (err)
		return err;
	last = first;
	if (**s == '-') {
		(*s)++;
		err = parse_node(s, &last);
		if (err)
			return err;
		if (last < first)
			return -EINVAL;
	}
	for (; first <= last; first++)
		nt_mask_set(m, first);
	return 0;
}

int nt_mask_parse(const char *s, struct nt_nodemask *m)
{
	int err;

	nt_mask_clear(m);
	while (*s && !isspace((unsigned char)*s)) {
		err = parse_range(&s, m);
		if (err)
			return err;
		if (*s == ',')
			s++;
		else if (*s && !isspace((unsigned char)*s))
			return -EINVAL;
	}
	/* Only trailing white space (sysfs ends lists with a newline). */
	while (isspace((unsigned char)*s))
		s++;
	return *s ? -EINVAL : 0;
}

char *nt_mask_format(const struct nt_nodemask *m, char *buf, size_t len)
{
	size_t used = 0;
	int first, last;

	if (len)
		buf[0] = '\0';
	for (first = nt_mask_next(m, -1); first >= 0 && used < len;
	     first = nt_mask_next(m, last)) {
		last = first;
		while (nt_mask_isset(m, last + 1))
			last++;
		used += snprintf(buf + used, len - used, "%s%d", used ? "," : "", first);
		if (last > first && used < len)
			used += snprintf(buf + used, len - used, "-%d", last);
	}
	return buf;
}

/* Position of node among the nodes of m, or -1 when it is not in m. */
static int mask_ord(const struct nt_nodemask *m, int node)
{
	int n, ord = 0;

	if (!nt_mask_isset(m, node))
		return -1;
	nt_mask_for_each(n, m) {
		if (n == node)
			break;
		ord++;
	}
	return ord;
}

int nt_node_remap(int node, const struct nt_nodemask *old, const struct nt_nodemask *new)
{
	int ord = mask_ord(old, node), w = nt_mask_weight(new);

	if (ord < 0 || !w)
		return node;
	return nt_mask_nth(new, ord % w);
}

void nt_mask_remap(struct nt_nodemask *dst, const struct nt_nodemask *src,
		   const struct nt_nodemask *old, const struct nt_nodemask *new)
{
	struct nt_nodemask out;
	int node;

	nt_mask_clear(&out);
	nt_mask_for_each(node, src)
		nt_mask_set(&out, nt_node_remap(node, old, new));
	*dst = out;
}

void nt_mask_fold(struct nt_nodemask *dst, const struct nt_nodemask *orig, int sz)
{
	struct nt_nodemask out;
	int node;

	nt_mask_clear(&out);
	if (sz > 0)
		nt_mask_for_each(node, orig)
			nt_mask_set(&out, node % sz);
	*dst = out;
}

void nt_mask_onto(struct nt_nodemask *dst, const struct nt_nodemask *orig,
		  const struct nt_nodemask *relmap)
{
	struct nt_nodemask out;
	int node, m = 0;

	nt_mask_clear(&out);
	nt_mask_for_each(node, relmap) {
		if (nt_mask_isset(orig, m))
			nt_mask_set(&out, node);
		m++;
	}
	*dst = out;
}

bool nt_mask_equal(const struct nt_nodemask *a, const struct nt_nodemask *b)
{
	return !memcmp(a->bits, b->bits, sizeof(a->bits));
}

bool nt_mask_empty(const struct nt_nodemask *m)
{
	return nt_mask_next(m, -1) < 0;
}
