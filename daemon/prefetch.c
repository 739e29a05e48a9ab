// SPDX-License-Identifier: GPL-2.0-only
/*
 * prefetch.c - the readahead window of one process (prefetch.h).
 */
#include "prefetch.h"

static uint32_t prefetch_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The window the marker ended, left before its end. */
static void prefetch_missed(struct prefetch *pf, uint64_t now_ms, uint64_t *misses)
{
	*misses += pf->installed;
	pf->window = pf->window / 2 < PREFETCH_MIN_PAGES ? PREFETCH_MIN_PAGES : pf->window / 2;
	if (++pf->misses_in_row >= PREFETCH_OFF_MISSES) {
		pf->off_until_ms = now_ms + PREFETCH_OFF_MS;
		pf->misses_in_row = 0;
		pf->window = 0;
	}
}

void prefetch_fault(struct prefetch *pf, uint64_t pgno, uint64_t now_ms, uint32_t max_pages,
		    struct prefetch_window *w, uint64_t *hits, uint64_t *misses)
{
	uint64_t first = pgno + 1;
	bool open;

	w->pages = 0;
	if (pf->marker && pgno == pf->marker) {
		*hits += pf->installed;
		pf->misses_in_row = 0;
		pf->window *= 2;
		open = true;
		if (pf->end > first)
			first = pf->end; /* the window's second half is in already */
	} else {
		if (pf->marker)
			prefetch_missed(pf, now_ms, misses);
		open = pgno == pf->last + 1;
	}
	pf->marker = 0;
	pf->installed = 0;
	pf->last = pgno;
	if (!open || !max_pages || now_ms < pf->off_until_ms)
		return;
	if (pf->window < PREFETCH_MIN_PAGES)
		pf->window = PREFETCH_MIN_PAGES;
	pf->window = prefetch_min(pf->window, max_pages);
	w->first = first;
	w->pages = pf->window;
	w->marker_from = first + pf->window / 2;
}

void prefetch_installed(struct prefetch *pf, const struct prefetch_window *w, uint32_t installed,
			uint64_t marker)
{
	/* A window that installed nothing has nothing to settle. */
	pf->installed = installed;
	pf->marker = installed ? marker : 0;
	pf->end = w->first + w->pages;
}
