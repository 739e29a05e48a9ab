/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vmscan.h - which pages of a process may be evicted, and which to try next.
 */
#ifndef ZSWAPD_VMSCAN_H
#define ZSWAPD_VMSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zswap_proto.h"

struct vma {
	uint64_t start;
	uint64_t end;
};

/*
 * Parses /proc/PID/smaps text into the ranges we may evict from: private,
 * writable, anonymous (or [heap]) mappings that are not locked, not
 * DONTFORK/WIPEONFORK (a forked child must see exactly the parent's layout
 * for shared entries to be right), not I/O or PFN maps, not hugetlb, minus
 * the shim's own ranges in excl.  Sorted by address.
 */
int vmscan_parse(const char *smaps, const struct zs_range *excl, unsigned nexcl,
		 struct vma **ret_vmas, size_t *ret_n);
/*
 * kB of those mappings' pages that another process maps too (Shared_Clean
 * + Shared_Dirty: a fork's copy-on-write pages), which eviction passes over
 * (vmscan_pick takes pages this process maps alone).
 */
uint64_t vmscan_shared_kb(const char *smaps);

struct vmscan_run {
	uint64_t addr;
	uint32_t npages;
	uint64_t reg_start; /* the 2 MiB-aligned chunk(s) to register, clipped to the vma */
	uint64_t reg_end;
};

struct vmscan_result {
	size_t nruns;
	uint32_t npages;
	uint64_t cursor;  /* where the next pick should start */
	uint64_t scanned; /* pages looked at */
};

/*
 * Walks the vmas from cursor (wrapping once) and picks up to max_pages pages
 * that are present and mapped by this process alone (PM_MMAP_EXCLUSIVE:
 * evicting a page still shared copy-on-write with a fork frees nothing),
 * reading pagemap_fd (/proc/PID/pagemap) 512 entries at a time.  Gives up
 * after scanning max_scan pages.  Contiguous pages form one run.  A
 * candidate for which skip (if not NULL) says true is passed over.
 */
int vmscan_pick(int pagemap_fd, const struct vma *vmas, size_t nvmas, uint64_t cursor,
		uint32_t max_pages, uint64_t max_scan, struct vmscan_run *runs, size_t max_runs,
		bool (*skip)(uint64_t pgno, void *ctx), void *ctx, struct vmscan_result *ret);

/*
 * Adds those of the pages pgnos[0..n) (page numbers, ascending; a repeated
 * one is taken once) that lie in
 * vmas and are evictable now (as vmscan_pick takes them) to runs, from
 * res->nruns on, one pagemap read each: for pages chosen one by one (the
 * log of loads) rather than by a sweep.  Stops early when max_runs runs are
 * used; res->scanned counts the pages looked at.
 */
int vmscan_pick_pages(int pagemap_fd, const struct vma *vmas, size_t nvmas, const uint64_t *pgnos,
		      size_t n, struct vmscan_run *runs, size_t max_runs,
		      struct vmscan_result *res);

/* How many of the npages from addr on are, in a row, present and mapped by
 * this process alone (what vmscan_pick takes); 0 on a read error. */
uint32_t vmscan_evictable_prefix(int pagemap_fd, uint64_t addr, uint32_t npages);

/*
 * Sorts runs[0..*n) by address and takes out what a run shares with one
 * before it (trimmed, or dropped if nothing is left), so that no page is in
 * a batch twice: a fault looks its page up in the first run that holds it,
 * and would find that copy committed (nothing to serve) while the other
 * was still on its way to the index, and read zeros.  Returns the pages
 * taken out.
 */
uint32_t vmscan_runs_dedup(struct vmscan_run *runs, size_t *n);

/* Sum of the pages in vmas. */
uint64_t vmscan_total_pages(const struct vma *vmas, size_t n);

#endif
