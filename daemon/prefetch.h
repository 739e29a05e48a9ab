/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * prefetch.h - when a fault on an evicted page should bring the pages
 * after it back too: swap readahead for the pool.
 *
 * A process reading its evicted memory in address order (a scan, a garbage
 * collector's walk, a memcpy of a large buffer) costs one round trip to
 * zswapd per page.  Kernel swap reads a cluster around each fault for the
 * same reason.  The pool is not a disk and pays nothing to read ahead, but
 * each page installed is memory the process holds again, and one it will
 * not touch is a page to evict once more.
 *
 * Whether the pages were wanted cannot be seen: there are no access bits.
 * So one page of the window is left out, the *marker*, as the kernel's
 * file readahead marks a page of its own: the first evicted page of the
 * window's second half.  A fault on the marker says the process read
 * that far (a hit: the next window, which starts where this one ends, is
 * twice as long, up to the maximum); a fault anywhere else while a marker
 * waits says it did not (the window's pages were misses, the next window
 * is half as long), and after PREFETCH_OFF_MISSES such windows in a row
 * the process gets none for PREFETCH_OFF_MS.  With the marker halfway,
 * the next window is made while the process reads the rest of this one,
 * as the kernel's asynchronous readahead overlaps its reads: a reader
 * waits on the marker's round trip, not on a whole window's
 * decompression.  A window opens only on a fault at the page right after
 * the last fault's, or on the marker: a random pattern almost never makes
 * one, and costs one comparison a fault.
 *
 * Pure: the caller installs the window and says how far it got
 * (prefetch_installed); nothing here reads the clock.
 */
#ifndef ZSWAPD_PREFETCH_H
#define ZSWAPD_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

#define PREFETCH_MIN_PAGES 4u
#define PREFETCH_MAX_PAGES 64u /* the most prefetch_pages may say */
#define PREFETCH_OFF_MISSES 4u
#define PREFETCH_OFF_MS 10000u

struct prefetch {
	uint64_t last;	    /* page number of the last fault */
	uint64_t marker;    /* the evicted page left out of the window; 0: none waits */
	uint64_t end;	    /* the first page after the window */
	uint32_t window;    /* length of the next window in pages; 0 before the first */
	uint32_t installed; /* pages installed by the window the marker ends */
	uint32_t misses_in_row; /* windows left before their end, since the last hit */
	uint64_t off_until_ms;
};

/* The pages to install after a fault: [first, first + pages), evicted ones
 * only, but for the marker: the first evicted page from marker_from on. */
struct prefetch_window {
	uint64_t first;
	uint32_t pages; /* 0: none */
	uint64_t marker_from;
};

/*
 * A fault at pgno, served from the pool.  Settles the waiting window: adds
 * its pages to *hits or *misses.  Fills *w with the window to install now
 * (none if max_pages is 0, the process is off until later, or the fault
 * does not follow the last one).
 */
void prefetch_fault(struct prefetch *pf, uint64_t pgno, uint64_t now_ms, uint32_t max_pages,
		    struct prefetch_window *w, uint64_t *hits, uint64_t *misses);
/* What the caller installed of window w, and the marker it left out (0:
 * none found: the window ends the run). */
void prefetch_installed(struct prefetch *pf, const struct prefetch_window *w, uint32_t installed,
			uint64_t marker);

#endif
