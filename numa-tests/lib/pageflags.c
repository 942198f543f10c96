// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pageflags.h"
#include "tap.h"

#define PM_PRESENT	(UINT64_C(1) << 63)
#define PM_PFN_MASK	((UINT64_C(1) << 55) - 1)
#define MAX_REPORTED	8

static int read_exact(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len) {
		n = pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (char *)buf + n;
		len -= n;
		off += n;
	}
	return 0;
}

static int frame_flags(int kfd, uint64_t entry, uint64_t *flags)
{
	uint64_t pfn = entry & PM_PFN_MASK;

	if (!(entry & PM_PRESENT)) {
		*flags = NT_PAGE_ABSENT;
		return 0;
	}
	if (!pfn)		/* present but hidden: pagemap zeroes PFNs for the unprivileged */
		return -EPERM;
	return read_exact(kfd, flags, sizeof(*flags), pfn * sizeof(*flags));
}

int nt_pages_flags(const void *start, size_t npages, size_t page_size, uint64_t *flags)
{
	size_t base = sysconf(_SC_PAGESIZE), step = page_size / base, i;
	uint64_t *entries;
	int pfd, kfd, err;

	entries = malloc(npages * step * sizeof(*entries));
	if (!entries)
		return -ENOMEM;
	pfd = open("/proc/self/pagemap", O_RDONLY);
	kfd = open("/proc/kpageflags", O_RDONLY);
	err = pfd < 0 || kfd < 0 ? -errno : 0;
	if (!err)
		err = read_exact(pfd, entries, npages * step * sizeof(*entries),
				 (uintptr_t)start / base * sizeof(*entries));
	for (i = 0; !err && i < npages; i++)
		err = frame_flags(kfd, entries[i * step], &flags[i]);
	if (pfd >= 0)
		close(pfd);
	if (kfd >= 0)
		close(kfd);
	free(entries);
	if (err)
		nt_tap_diag("reading pagemap and kpageflags: %s", strerror(-err));
	return err;
}

/* What is wrong with one page's flags, or NULL. */
static const char *page_problem(uint64_t f, const struct nt_flags_want *want, bool *head)
{
	bool lock_flags = true;

	*head = false;
	if (f & NT_PAGE_ABSENT)
		return "not present";
	if (want->thp_pages) {
		if (!(f & NT_KPF(NT_KPF_THP)))
			return "not part of a huge page (KPF_THP clear)";
		*head = f & NT_KPF(NT_KPF_COMPOUND_HEAD);
		lock_flags = *head;
	}
	if (lock_flags && !!(f & NT_KPF(NT_KPF_MLOCKED)) != want->mlocked)
		return want->mlocked ? "KPF_MLOCKED clear" : "KPF_MLOCKED set";
	if (lock_flags && !!(f & NT_KPF(NT_KPF_UNEVICTABLE)) != want->unevictable)
		return want->unevictable ? "KPF_UNEVICTABLE clear" : "KPF_UNEVICTABLE set";
	return NULL;
}

long nt_check_flags(const void *start, size_t npages, size_t page_size,
		    const struct nt_flags_want *want)
{
	uint64_t *flags;
	long bad = 0;
	const char *why;
	size_t i, heads = 0;
	bool head;
	int err;

	flags = malloc(npages * sizeof(*flags));
	if (!flags)
		return -ENOMEM;
	err = nt_pages_flags(start, npages, page_size, flags);
	for (i = 0; !err && i < npages; i++) {
		why = page_problem(flags[i], want, &head);
		heads += head;
		if (!why)
			continue;
		if (bad++ < MAX_REPORTED)
			nt_tap_diag("page %zu (%p): %s (kpageflags %#llx)", i,
				    (const char *)start + i * page_size, why,
				    (unsigned long long)flags[i]);
	}
	if (!err && want->thp_pages && heads * want->thp_pages != npages && !bad) {
		/* Each huge page has exactly one head. */
		nt_tap_diag("%zu huge page heads among %zu pages", heads, npages);
		bad = 1;
	}
	free(flags);
	if (bad > MAX_REPORTED)
		nt_tap_diag("... %ld pages in all", bad);
	return err ? err : bad;
}

bool nt_thp_heads_unmlocked(const void *start, size_t npages, size_t page_size,
			    size_t thp_pages)
{
	uint64_t *flags, f;
	size_t i, heads = 0;
	bool ok;

	flags = malloc(npages * sizeof(*flags));
	if (!flags)
		return false;
	ok = thp_pages && !nt_pages_flags(start, npages, page_size, flags);
	for (i = 0; ok && i < npages; i++) {
		f = flags[i];
		ok = !(f & NT_PAGE_ABSENT) && (f & NT_KPF(NT_KPF_THP));
		if (ok && (f & NT_KPF(NT_KPF_COMPOUND_HEAD))) {
			heads++;
			ok = !(f & NT_KPF(NT_KPF_MLOCKED));
		}
	}
	free(flags);
	return ok && heads * thp_pages == npages;
}

int nt_pages_pfns(const void *start, size_t npages, size_t page_size, uint64_t *pfns)
{
	size_t base = sysconf(_SC_PAGESIZE), step = page_size / base, i;
	uint64_t entry;
	int fd, err = 0;
	off_t off;

	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -errno;
	for (i = 0; !err && i < npages; i++) {
		off = ((uintptr_t)start / base + i * step) * sizeof(entry);
		if (pread(fd, &entry, sizeof(entry), off) != sizeof(entry))
			err = -EIO;
		else if ((entry & PM_PRESENT) && !(entry & PM_PFN_MASK))
			err = -EPERM;	/* frame numbers hidden: not root */
		else
			pfns[i] = entry & PM_PRESENT ? entry & PM_PFN_MASK : 0;
	}
	close(fd);
	return err;
}

uint64_t *nt_flags_of(const void *start, size_t npages, size_t page_size)
{
	uint64_t *f = calloc(npages, sizeof(*f));
	int err;

	if (!f)
		nt_tap_bail("no memory for the flags of %zu pages", npages);
	err = nt_pages_flags(start, npages, page_size, f);
	if (err)
		nt_tap_bail("reading the flags of the pages at %p: %s", start, strerror(-err));
	return f;
}

long nt_frames_flagged(uint64_t mask, struct nt_frame *out, size_t max)
{
	uint64_t f[512], c[512];
	int kf, kc;
	long found = 0;
	ssize_t nf, nc;
	off_t off = 0;
	size_t i;

	kf = open("/proc/kpageflags", O_RDONLY);
	kc = open("/proc/kpagecount", O_RDONLY);
	if (kf < 0 || kc < 0) {
		found = -errno;
		goto out;
	}
	for (;;) {
		nf = pread(kf, f, sizeof(f), off);
		nc = pread(kc, c, sizeof(c), off);
		if (nf < 0 || nc < 0) {
			found = -errno;
			break;
		}
		if (!nf || !nc)
			break;
		for (i = 0; i < (size_t)(nf < nc ? nf : nc) / sizeof(f[0]); i++) {
			if (!(f[i] & mask))
				continue;
			if ((size_t)found < max) {
				out[found].pfn = off / sizeof(f[0]) + i;
				out[found].flags = f[i];
				out[found].mapcount = c[i];
			}
			found++;
		}
		off += nf < nc ? nf : nc;
	}
out:
	if (kf >= 0)
		close(kf);
	if (kc >= 0)
		close(kc);
	return found;
}
