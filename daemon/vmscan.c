// SPDX-License-Identifier: GPL-2.0-only
/*
 * vmscan.c - what /proc says of a process's memory, for picking and for
 * letting go: its evictable mappings, its evictable pages, and the runs a
 * batch is made of.
 *
 * Mappings come from /proc/PID/smaps, whose VmFlags line tells locked,
 * dontfork, wipeonfork, I/O and hugetlb mappings apart, which
 * /proc/PID/maps cannot: those that may be evicted (vmscan_parse), the
 * pages of them another process maps too (vmscan_shared_kb, for group
 * budgets), and those registered with a uffd (vmscan_registered, for the
 * drain and a take-over).  Pages come from /proc/PID/pagemap: present and
 * mapped by this process alone, read from a cursor on, once round at most
 * (vmscan_pick), or one by one (vmscan_pick_pages, for the log of loads),
 * gathered into runs with the 2 MiB chunks to register around them;
 * vmscan_runs_dedup() keeps a page out of a batch twice.  The order, and
 * what a sweep passes over, is evict_pick.c's: the callers decide, this
 * file reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comp.h"
#include "compat.h"
#include "daemon.h"
#include "vmscan.h"

#define VMSCAN_CHUNK ZS_REGISTER_CHUNK /* registration granularity (hazard 5, docs/design.md) */
#define VMSCAN_WINDOW 512	  /* pagemap entries per read: one 4 KiB read */

static const char *const vmscan_bad_flags[] = {
	"lo", /* mlocked: the app asked for it to stay */
	"dc", /* MADV_DONTFORK: a child would lack the mapping our copied index assumes */
	"wf", /* MADV_WIPEONFORK: a child must read zeros there, not the parent's pages */
	"io", "pf", "dd", /* device and PFN maps */
	"ht", /* hugetlb */
	"sh", /* shared */
};

static bool vmscan_flags_ok(const char *line)
{
	/* line: "VmFlags: rd wr mr mw me ac sd" */
	for (const char *p = line + 8; *p && *p != '\n';) {
		while (*p == ' ')
			p++;
		if (p[0] && p[1] && (p[2] == ' ' || p[2] == '\n' || p[2] == '\0')) {
			for (size_t i = 0; i < sizeof(vmscan_bad_flags) / sizeof(vmscan_bad_flags[0]); i++)
				if (p[0] == vmscan_bad_flags[i][0] && p[1] == vmscan_bad_flags[i][1])
					return false;
		}
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	return true;
}

static int vmscan_push(struct vma **v, size_t *n, size_t *cap, uint64_t start, uint64_t end)
{
	if (start >= end)
		return 0;
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct vma *nv = realloc(*v, ncap * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[*n].start = start;
	(*v)[*n].end = end;
	(*n)++;
	return 0;
}

/* Adds [start, end) minus every excluded range. */
static int vmscan_push_minus(struct vma **v, size_t *n, size_t *cap, uint64_t start, uint64_t end,
			     const struct zs_range *excl, unsigned nexcl)
{
	for (unsigned i = 0; i < nexcl; i++) {
		uint64_t es = excl[i].start, ee = excl[i].start + excl[i].len;

		if (ee <= start || es >= end)
			continue;
		int r = vmscan_push_minus(v, n, cap, start, es > start ? es : start, excl, nexcl);

		if (r < 0)
			return r;
		return vmscan_push_minus(v, n, cap, ee < end ? ee : end, end, excl, nexcl);
	}
	return vmscan_push(v, n, cap, start, end);
}

/*
 * If line is a mapping's header: true, with its range in *start, *end and
 * in *candidate whether it is private, writable and anonymous (or [heap]),
 * what its VmFlags line then decides on.
 */
static bool vmscan_header(const char *line, const char *nl, uint64_t *start, uint64_t *end,
			  bool *candidate)
{
	char perms[5], path[32] = "";
	unsigned long long s, e, off, inode;
	unsigned dmaj, dmin;
	int consumed = 0;
	const char *p;
	size_t plen;

	/* No blank after %llu: it would swallow the newline of a path-less line. */
	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu%n", &s, &e, perms, &off, &dmaj, &dmin,
		   &inode, &consumed) != 7)
		return false;
	p = line + consumed;
	while (*p == ' ' || *p == '\t')
		p++;
	plen = nl ? (size_t)(nl - p) : strlen(p);
	if (plen >= sizeof(path))
		plen = sizeof(path) - 1;
	memcpy(path, p, plen);
	path[plen] = '\0';
	*start = s;
	*end = e;
	*candidate = perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' && inode == 0 &&
		     (path[0] == '\0' || strcmp(path, "[heap]") == 0);
	return true;
}

int vmscan_parse(const char *smaps, const struct zs_range *excl, unsigned nexcl,
		 struct vma **ret_vmas, size_t *ret_n)
{
	struct vma *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t start = 0, end = 0;
	bool candidate = false;
	int r = 0;

	for (const char *line = smaps; line && *line;) {
		const char *nl = strchr(line, '\n');

		if (vmscan_header(line, nl, &start, &end, &candidate)) {
			/* the VmFlags line decides */
		} else if (strncmp(line, "VmFlags:", 8) == 0) {
			if (candidate && vmscan_flags_ok(line)) {
				r = vmscan_push_minus(&v, &n, &cap, start, end, excl, nexcl);
				if (r < 0)
					goto fail;
			}
			candidate = false;
		}
		line = nl ? nl + 1 : NULL;
	}
	*ret_vmas = v;
	*ret_n = n;
	return 0;
fail:
	free(v);
	return r;
}

uint64_t vmscan_shared_kb(const char *smaps)
{
	uint64_t start, end, sum = 0, vma_kb = 0;
	bool candidate = false;

	for (const char *line = smaps; line && *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long long kb;

		if (vmscan_header(line, nl, &start, &end, &candidate)) {
			vma_kb = 0;
		} else if (candidate && (sscanf(line, "Shared_Clean: %llu kB", &kb) == 1 ||
					 sscanf(line, "Shared_Dirty: %llu kB", &kb) == 1)) {
			vma_kb += kb;
		} else if (strncmp(line, "VmFlags:", 8) == 0) {
			if (candidate && vmscan_flags_ok(line))
				sum += vma_kb;
			candidate = false;
		}
		line = nl ? nl + 1 : NULL;
	}
	return sum;
}

uint64_t vmscan_total_pages(const struct vma *vmas, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += (vmas[i].end - vmas[i].start) >> ZS_PAGE_SHIFT;
	return sum;
}

/* Whether page addr of vma would lengthen run last rather than start one. */
static bool vmscan_extends(const struct vmscan_run *last, const struct vma *vma, uint64_t addr)
{
	return last && last->addr + ((uint64_t)last->npages << ZS_PAGE_SHIFT) == addr &&
	       last->reg_end >= vma->start && last->reg_start < vma->end;
}

static void vmscan_add_page(const struct vma *vma, uint64_t addr, struct vmscan_run *runs,
			    size_t *nruns)
{
	struct vmscan_run *last = *nruns ? &runs[*nruns - 1] : NULL;
	uint64_t cs = addr & ~(VMSCAN_CHUNK - 1), ce = cs + VMSCAN_CHUNK;

	if (cs < vma->start)
		cs = vma->start;
	if (ce > vma->end)
		ce = vma->end;
	if (vmscan_extends(last, vma, addr)) {
		last->npages++;
		if (ce > last->reg_end)
			last->reg_end = ce;
		return;
	}
	runs[*nruns] = (struct vmscan_run){ .addr = addr, .npages = 1, .reg_start = cs, .reg_end = ce };
	(*nruns)++;
}

static bool vmscan_evictable(uint64_t pm)
{
	return (pm & (PM_PRESENT | PM_MMAP_EXCLUSIVE)) == (PM_PRESENT | PM_MMAP_EXCLUSIVE);
}

uint32_t vmscan_evictable_prefix(int pagemap_fd, uint64_t addr, uint32_t npages)
{
	uint64_t pm[64];
	uint32_t kept = 0;

	while (kept < npages) {
		uint32_t n = npages - kept < 64 ? npages - kept : 64, k;
		ssize_t got = pread(pagemap_fd, pm, n * sizeof(pm[0]),
				    (off_t)(((addr >> ZS_PAGE_SHIFT) + kept) * sizeof(pm[0])));

		if (got <= 0)
			return got < 0 ? 0 : kept;
		n = (uint32_t)((size_t)got / sizeof(pm[0]));
		for (k = 0; k < n && vmscan_evictable(pm[k]); k++)
			kept++;
		if (k < n)
			break;
	}
	return kept;
}

/* First vma ending above cursor (wrapping to 0). */
static size_t vmscan_find(const struct vma *vmas, size_t n, uint64_t cursor)
{
	for (size_t i = 0; i < n; i++)
		if (vmas[i].end > cursor)
			return i;
	return 0;
}

/* Reads pagemap for [addr, end) and adds candidates; stops when the batch is full. */
struct vmscan_skip {
	bool (*fn)(uint64_t pgno, void *ctx);
	void *ctx;
};

static int vmscan_range(int pagemap_fd, const struct vma *vma, uint64_t addr, uint64_t end,
			uint32_t max_pages, uint64_t max_scan, struct vmscan_run *runs,
			size_t max_runs, const struct vmscan_skip *skip, struct vmscan_result *res)
{
	uint64_t pm[VMSCAN_WINDOW];

	while (addr < end) {
		uint64_t npm = (end - addr) >> ZS_PAGE_SHIFT;
		ssize_t got;

		if (npm > VMSCAN_WINDOW)
			npm = VMSCAN_WINDOW;
		got = pread(pagemap_fd, pm, npm * sizeof(pm[0]),
			    (off_t)((addr >> ZS_PAGE_SHIFT) * sizeof(pm[0])));
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		npm = (uint64_t)got / sizeof(pm[0]);
		for (uint64_t k = 0; k < npm; k++, addr += ZS_PAGE_SIZE) {
			if (res->npages == max_pages || res->scanned >= max_scan)
				goto full;
			if (vmscan_evictable(pm[k]) && skip->fn &&
			    skip->fn(addr >> ZS_PAGE_SHIFT, skip->ctx)) {
				/* passed over: the skip function counts why */
			} else if (vmscan_evictable(pm[k])) {
				struct vmscan_run *last = res->nruns ? &runs[res->nruns - 1] : NULL;
				bool extends = last && last->addr + ((uint64_t)last->npages
								     << ZS_PAGE_SHIFT) == addr;

				if (!extends && res->nruns == max_runs)
					goto full;
				vmscan_add_page(vma, addr, runs, &res->nruns);
				res->npages++;
			}
			res->scanned++;
		}
	}
	res->cursor = end;
	return 0;
full:
	res->cursor = addr;
	return 1;
}

int vmscan_pick(int pagemap_fd, const struct vma *vmas, size_t nvmas, uint64_t cursor,
		uint32_t max_pages, uint64_t max_scan, struct vmscan_run *runs, size_t max_runs,
		bool (*skip)(uint64_t pgno, void *ctx), void *ctx, struct vmscan_result *ret)
{
	const struct vmscan_skip sk = { skip, ctx };
	struct vmscan_result res = { 0 };
	uint64_t first_start;
	size_t i, first;
	int r = 0;

	if (nvmas == 0) {
		*ret = res;
		return 0;
	}
	first = i = vmscan_find(vmas, nvmas, cursor);
	if (cursor < vmas[i].start || cursor >= vmas[i].end)
		cursor = vmas[i].start;
	first_start = cursor;

	/* From the cursor to the end of its vma, every other vma once, then the
	 * part of the first vma before the cursor: each page at most once. */
	for (size_t step = 0; step <= nvmas; step++) {
		const struct vma *vma = &vmas[i];
		uint64_t from = step == 0 ? first_start : vma->start;
		uint64_t to = step == nvmas ? first_start : vma->end;

		if (step == nvmas && i != first)
			break;
		r = vmscan_range(pagemap_fd, vma, from, to, max_pages, max_scan, runs, max_runs,
				 &sk, &res);
		if (r != 0)
			break;
		i = (i + 1) % nvmas;
		res.cursor = vmas[i].start;
	}
	if (r < 0)
		return r;
	*ret = res;
	return 0;
}

int vmscan_pick_pages(int pagemap_fd, const struct vma *vmas, size_t nvmas, const uint64_t *pgnos,
		      size_t n, struct vmscan_run *runs, size_t max_runs,
		      struct vmscan_result *res)
{
	size_t v = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t addr = pgnos[i] << ZS_PAGE_SHIFT, pm;
		ssize_t got;

		if (i && pgnos[i] == pgnos[i - 1])
			continue; /* a page goes in at most once */
		while (v < nvmas && vmas[v].end <= addr)
			v++;
		if (v == nvmas)
			break;
		res->scanned++;
		if (addr < vmas[v].start)
			continue;
		got = pread(pagemap_fd, &pm, sizeof(pm), (off_t)(pgnos[i] * sizeof(pm)));
		if (got < 0)
			return -errno;
		if (got != sizeof(pm) || !vmscan_evictable(pm))
			continue;
		if (res->nruns == max_runs &&
		    !vmscan_extends(max_runs ? &runs[max_runs - 1] : NULL, &vmas[v], addr))
			break;
		vmscan_add_page(&vmas[v], addr, runs, &res->nruns);
		res->npages++;
	}
	return 0;
}

static int vmscan_run_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct vmscan_run *)a)->addr, y = ((const struct vmscan_run *)b)->addr;

	return x < y ? -1 : x > y;
}

uint32_t vmscan_runs_dedup(struct vmscan_run *runs, size_t *n)
{
	uint64_t covered = 0; /* end of what the runs kept so far hold */
	uint32_t removed = 0;
	size_t kept = 0;

	qsort(runs, *n, sizeof(*runs), vmscan_run_cmp);
	for (size_t i = 0; i < *n; i++) {
		struct vmscan_run r = runs[i];
		uint64_t end = r.addr + ((uint64_t)r.npages << ZS_PAGE_SHIFT);

		if (end <= covered) {
			removed += r.npages;
			continue;
		}
		if (r.addr < covered) {
			uint32_t left = (uint32_t)((end - covered) >> ZS_PAGE_SHIFT);

			removed += r.npages - left;
			r.addr = covered;
			r.npages = left;
		}
		covered = end;
		runs[kept++] = r;
	}
	*n = kept;
	return removed;
}

int vmscan_registered(const char *smaps, struct vma **ret_vmas, size_t *ret_n)
{
	struct vma *v = NULL;
	size_t n = 0, cap = 0;
	unsigned long long s = 0, e = 0;
	int r;

	for (const char *line = smaps; line && *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long long a, b;

		if (sscanf(line, "%llx-%llx ", &a, &b) == 2 && strchr(line, ' ') &&
		    strchr(line, ' ') < (nl ? nl : line + strlen(line))) {
			s = a;
			e = b;
		} else if (strncmp(line, "VmFlags:", 8) == 0) {
			const char *end = nl ? nl : line + strlen(line);
			bool reg = false;

			for (const char *p = line + 8; p + 2 <= end; p++)
				if (p[-1] == ' ' && (p[0] == 'u') && (p[1] == 'm' || p[1] == 'w') &&
				    (p + 2 == end || p[2] == ' '))
					reg = true;
			if (reg) {
				r = vmscan_push(&v, &n, &cap, s, e);
				if (r < 0) {
					free(v);
					return r;
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	*ret_vmas = v;
	*ret_n = n;
	return 0;
}
