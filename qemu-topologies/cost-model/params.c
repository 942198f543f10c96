// SPDX-License-Identifier: GPL-2.0
/*
 * The plugin's arguments, "key=value" each (QEMU passes them as given after
 * the plugin's file name). run-guest writes them from the topology file;
 * docs/cost-model.md lists them and the published source of each default.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/*
 * Defaults: one core of an AMD EPYC 7742 (Zen 2). docs/cost-model.md,
 * "Parameters", gives the published source of each figure; do not change one
 * to make a result come out.
 */
#define DEF_LINE	64		/* CPUID of an EPYC 7742 */
#define DEF_L1_SIZE	(32ULL << 10)	/* 8-way */
#define DEF_L1_WAYS	8
#define DEF_L2_SIZE	(512ULL << 10)	/* 8-way */
#define DEF_L2_WAYS	8
#define DEF_LLC_SIZE	(16ULL << 20)	/* one CCX's L3, 16-way */
#define DEF_LLC_WAYS	16
#define DEF_LAT_L2	13		/* AnandTech's Rome review: cycles */
#define DEF_LAT_LLC	34
#define DEF_LAT_MEM	384		/* 113 ns (NPS4) x 3.4 GHz */
#define DEF_LAT_ATOMIC	18		/* LOCK ADD [m64], r64: 17.7 cycles */

#define LOCAL_DISTANCE	10
#define REMOTE_DEFAULT	20	/* QEMU's SLIT when none is given */

void cm_params_default(struct cm_params *p)
{
	unsigned int a, b;

	memset(p, 0, sizeof(*p));
	p->line = DEF_LINE;
	p->cache_size[0] = DEF_L1_SIZE;
	p->cache_ways[0] = DEF_L1_WAYS;
	p->cache_size[1] = DEF_L2_SIZE;
	p->cache_ways[1] = DEF_L2_WAYS;
	p->cache_size[2] = DEF_LLC_SIZE;
	p->cache_ways[2] = DEF_LLC_WAYS;
	p->lat_l2 = DEF_LAT_L2;
	p->lat_llc = DEF_LAT_LLC;
	p->lat_mem = DEF_LAT_MEM;
	p->lat_atomic = DEF_LAT_ATOMIC;
	p->nr_vcpus = 1;
	for (a = 0; a < CM_MAX_NODES; a++)
		for (b = 0; b < CM_MAX_NODES; b++)
			p->slit[a][b] = a == b ? LOCAL_DISTANCE : REMOTE_DEFAULT;
}

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* "64", "32K", "1M", "2G" -> bytes. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end || v > (1ULL << 50))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uint(const char *s, unsigned int max, unsigned int *out)
{
	uint64_t v;

	if (parse_size(s, &v) || strpbrk(s, "KMG") || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * "a:b:c" -> up to max values no larger than limit, sizes (K/M/G suffixes)
 * when sizes is set; the count, or -EINVAL.
 */
static int parse_list(const char *s, uint64_t *v, unsigned int max, bool sizes,
		      uint64_t limit)
{
	char buf[4096], *tok, *save;
	unsigned int n = 0;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
		if (n == max || parse_size(tok, &v[n]) || v[n] > limit ||
		    (!sizes && strpbrk(tok, "KMG")))
			return -EINVAL;
		n++;
	}
	return n ? (int)n : -EINVAL;
}

static int set_cache(struct cm_params *p, unsigned int level, const char *v)
{
	const char *colon = strchr(v, ':');
	char size[64];

	if (!colon || (size_t)(colon - v) >= sizeof(size))
		return -EINVAL;
	memcpy(size, v, colon - v);
	size[colon - v] = 0;
	if (parse_size(size, &p->cache_size[level]))
		return -EINVAL;
	return parse_uint(colon + 1, 64, &p->cache_ways[level]);
}

static int set_nodes(struct cm_params *p, const char *v)
{
	int count = parse_list(v, p->node_size, CM_MAX_NODES, true, 1ULL << 50);

	if (count < 0)
		return count;
	p->nr_nodes = count;
	return 0;
}

static int set_slit(struct cm_params *p, const char *v)
{
	static uint64_t d[CM_MAX_NODES * CM_MAX_NODES];
	unsigned int n, i;
	int count;

	count = parse_list(v, d, CM_MAX_NODES * CM_MAX_NODES, false, 255);
	if (count < 0)
		return count;
	for (n = 1; n * n < (unsigned int)count; n++)
		;
	if (n * n != (unsigned int)count)
		return -EINVAL;
	for (i = 0; i < (unsigned int)count; i++)
		p->slit[i / n][i % n] = d[i];
	p->slit_nodes = n;
	return 0;
}

static int set_vcpu_nodes(struct cm_params *p, const char *v)
{
	uint64_t node[CM_MAX_VCPUS];
	int count, i;

	count = parse_list(v, node, CM_MAX_VCPUS, false, CM_MAX_NODES - 1);
	if (count < 0)
		return count;
	for (i = 0; i < count; i++)
		p->vcpu_node[i] = node[i];
	p->nr_vcpus = count;
	return 0;
}

/* A file name into one of the PATH_MAX-sized fields. */
static int set_path(char *dst, size_t size, const char *v)
{
	if (!*v || strlen(v) >= size)
		return -EINVAL;
	strcpy(dst, v);
	return 0;
}

static int set_out(struct cm_params *p, const char *v)
{
	return set_path(p->out, sizeof(p->out), v);
}

static int set_profile(struct cm_params *p, const char *v)
{
	return set_path(p->profile, sizeof(p->profile), v);
}

static int set_l1d(struct cm_params *p, const char *v)
{
	return set_cache(p, 0, v);
}

static int set_l2(struct cm_params *p, const char *v)
{
	return set_cache(p, 1, v);
}

static int set_llc(struct cm_params *p, const char *v)
{
	return set_cache(p, 2, v);
}

/* An argument: a setter, or an unsigned field at offset up to limit. */
struct cm_arg {
	const char *key;
	int (*set)(struct cm_params *p, const char *v);
	size_t offset;
	unsigned int limit;
};

#define SET_ARG(name)		{ .key = #name, .set = set_ ## name }
#define UINT_ARG(name, max)	{ .key = #name, .offset = offsetof(struct cm_params, name), \
				  .limit = max }

static const struct cm_arg cm_args[] = {
	SET_ARG(l1d), SET_ARG(l2), SET_ARG(llc), SET_ARG(nodes), SET_ARG(slit),
	SET_ARG(vcpu_nodes), SET_ARG(out), SET_ARG(profile),
	UINT_ARG(line, 4096),
	UINT_ARG(lat_l2, 100000), UINT_ARG(lat_llc, 100000),
	UINT_ARG(lat_mem, 100000), UINT_ARG(lat_atomic, 100000),
};

int cm_params_set(struct cm_params *p, const char *arg, char *err, size_t len)
{
	const char *eq = strchr(arg, '=');
	const struct cm_arg *a;
	size_t i, klen;
	int ret;

	if (!eq)
		return fail(err, len, "argument '%s': expected key=value", arg);
	klen = eq - arg;
	for (i = 0; i < sizeof(cm_args) / sizeof(cm_args[0]); i++) {
		a = &cm_args[i];
		if (strlen(a->key) != klen || strncmp(arg, a->key, klen))
			continue;
		if (a->set)
			ret = a->set(p, eq + 1);
		else
			ret = parse_uint(eq + 1, a->limit,
					 (unsigned int *)((char *)p + a->offset));
		if (ret)
			return fail(err, len, "bad value in '%s' (docs/cost-model.md gives "
				    "the format)", arg);
		return 0;
	}
	return fail(err, len, "unknown argument '%.*s' (docs/cost-model.md lists them)",
		    (int)klen, arg);
}

int cm_params_check(const struct cm_params *p, char *err, size_t len)
{
	unsigned int a, b, i;

	if (!p->nr_nodes)
		return fail(err, len, "no nodes= argument: give each node's memory size");
	if (!p->out[0])
		return fail(err, len, "no out= argument: give the file for region records");
	if (p->slit_nodes && p->slit_nodes != p->nr_nodes)
		return fail(err, len, "slit= is %ux%u for %u nodes", p->slit_nodes,
			    p->slit_nodes, p->nr_nodes);
	for (a = 0; a < p->nr_nodes; a++)
		for (b = 0; b < p->nr_nodes; b++) {
			if (a == b && p->slit[a][b] != LOCAL_DISTANCE)
				return fail(err, len, "slit: distance %u->%u is %u, not 10", a, b,
					    p->slit[a][b]);
			if (a != b && (p->slit[a][b] <= LOCAL_DISTANCE || p->slit[a][b] > 254))
				return fail(err, len, "slit: distance %u->%u is %u, not 11..254",
					    a, b, p->slit[a][b]);
		}
	for (i = 0; i < p->nr_vcpus; i++)
		if (p->vcpu_node[i] >= p->nr_nodes)
			return fail(err, len, "vcpu_nodes: vCPU %u on node %u of %u", i,
				    p->vcpu_node[i], p->nr_nodes);
	for (i = 0; i < CM_LEVELS; i++)
		if (!p->cache_ways[i] || !p->line ||
		    p->cache_size[i] % ((uint64_t)p->cache_ways[i] * p->line))
			return fail(err, len, "cache level %u: %" PRIu64 " bytes is not a "
				    "multiple of %u ways x %u-byte lines", i + 1,
				    p->cache_size[i], p->cache_ways[i], p->line);
	return 0;
}
