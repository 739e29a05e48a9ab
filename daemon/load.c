// SPDX-License-Identifier: GPL-2.0-only
/*
 * load.c - the load (zswap_load): a fault on an evicted page served.
 *
 * Where the page is decides how: an entry in the pool is decompressed into
 * one page of scratch and mapped with UFFDIO_COPY, which wakes the thread;
 * a zero entry read (not written) is the zero page; an entry in the swap
 * file starts an asynchronous read and the fault is answered when it lands
 * (wb.c), so the loop serves everyone else meanwhile.  A page with no entry
 * in a registered chunk was never evicted: it is a zero page, as the
 * kernel would have given it.  The entry goes once the page is back
 * (target_page_loaded): the page is the app's again, and a later eviction
 * makes a new one.
 *
 * Used for faults (fault.c), for the faults that waited on a batch
 * (evict.c, evict_flight.c), and to bring pages back unasked (restore.c,
 * drain.c): the same path, so a page comes back the same way whoever asks.
 */
#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "idx.h"
#include "log.h"
#include "uffd.h"

/* How far past a window the marker is looked for: resident pages between
 * are read without a fault, and the reader's next fault is still the marker. */
#define LOAD_MARKER_SEARCH 64u

/* The page at addr was never evicted: zeros, as the kernel would give it. */
static int load_zero_fill(struct target *t, uint64_t addr, bool write)
{
	struct daemon *d = t->d;
	int r;

	if (write) {
		/* A written zero page would be copied at once: give a page. */
		memset(d->buf.page, 0, ZS_PAGE_SIZE);
		r = uffd_copy(t->uffd_w.fd, addr, d->buf.page, true);
	} else {
		r = uffd_zeropage(t->uffd_w.fd, addr);
	}
	if (r == -EEXIST && target_unmark(t, addr) == 1) {
		/* Marked as evicted and named by no entry (hazard 8): its data
		 * is lost.  A SIGBUS where it is touched, never zeros. */
		d->st.uffd_errors++;
		log_error("pid %d: page %#llx is marked evicted and no entry names it: poisoned",
			  (int)t->pid, (unsigned long long)addr);
		return uffd_poison(t->uffd_w.fd, addr);
	}
	if (r == 0)
		d->st.zero_fills++;
	return r;
}

/*
 * Maps e's contents at addr; what the fill said, -EAGAIN to try again.
 * Times its two steps (load_decompress_nsec, load_map_nsec): with
 * fault_stall_usec they say where a load's time goes (docs/benchmarks.md).
 */
static int load_from_pool(struct target *t, uint64_t addr, bool write, struct entry *e)
{
	struct daemon *d = t->d;
	uint64_t t0, t1;
	int r;

	if (e->readahead) {
		d->st.readahead_hits++;
		e->readahead = 0;
		wb_readahead(t, addr); /* a sequential reader keeps its readahead going */
	}
	/* A marked page (hazard 8) refuses ZEROPAGE, and clearing the marker
	 * first costs two reads of pagemap and a write-protect: a copy of
	 * zeros writes over it, as the kernel's own swap-in gives a page. */
	if (entry_is_zero(e) && !write && !target_marks(t)) {
		t0 = now_nsec();
		r = uffd_zeropage(t->uffd_w.fd, addr);
		d->st.load_map_nsec += now_nsec() - t0;
		return target_fill_checked(t, addr, r);
	}
	t0 = now_nsec();
	r = entry_load(d, e, d->buf.page);
	t1 = now_nsec();
	d->st.load_decompress_nsec += t1 - t0;
	if (r < 0) {
		/* Never map garbage: the page stays missing and the app waits
		 * rather than reading corrupt data.  This is a daemon bug. */
		log_error_errno(r, "pid %d: entry at %#llx does not decompress: %m", (int)t->pid,
				(unsigned long long)addr);
		d->st.uffd_errors++;
		return -EBADMSG;
	}
	r = uffd_copy(t->uffd_w.fd, addr, d->buf.page, true);
	d->st.load_map_nsec += now_nsec() - t1;
	return target_fill_checked(t, addr, r);
}

/*
 * Maps the n pages decompressed into d->buf.prefetch at first on, in one
 * UFFDIO_COPY (each ioctl is a system call and a walk of the page table:
 * for a window of 16, one instead of 16).  Their entries go.  Returns how
 * many were mapped; short if a page there was mapped meanwhile (dropped
 * too: stale), or the mm is changing.
 */
static uint32_t load_prefetch_run(struct target *t, uint64_t first, struct entry **run, uint32_t n)
{
	uint64_t copied = 0, addr = first << ZS_PAGE_SHIFT;
	uint32_t done;
	int r;

	if (!n)
		return 0;
	r = uffd_copy_run(t->uffd_w.fd, addr, t->d->buf.prefetch, (uint64_t)n * ZS_PAGE_SIZE,
			  &copied);
	done = (uint32_t)(copied / ZS_PAGE_SIZE);
	for (uint32_t i = 0; i < done; i++)
		target_page_prefetched(t, addr + (uint64_t)i * ZS_PAGE_SIZE, run[i]);
	if (r == -EEXIST && done < n &&
	    target_fill_checked(t, addr + (uint64_t)done * ZS_PAGE_SIZE, r) == -EEXIST)
		target_page_prefetched(t, addr + (uint64_t)done * ZS_PAGE_SIZE, run[done]);
	t->d->st.prefetch_pages += done;
	return done;
}

/*
 * Installs the evicted pages of w that are in the pool, as a fault on each
 * would: runs of consecutive pages decompressed side by side and mapped in
 * one ioctl, a zero page on its own.  Leaves the marker out (prefetch.h),
 * and records the window and the marker.  Stops at a page on disk
 * (the swap file's own readahead is wb.c's), and at a fill that failed (an
 * event under way); a page not evicted it passes over.
 */
static void load_prefetch(struct target *t, const struct prefetch_window *w)
{
	struct daemon *d = t->d;
	struct entry *run[PREFETCH_MAX_PAGES];
	uint64_t pgno, end = w->first + w->pages, marker = 0, run_first = w->first;
	uint32_t installed = 0, n = 0;
	bool failed = false;

	for (pgno = w->first; pgno < end + LOAD_MARKER_SEARCH && !failed && (pgno < end || !marker);
	     pgno++) {
		struct entry *e = idx_lookup(t->idx, pgno);
		bool zero;

		if (!e)
			continue;
		if (e->where == ENTRY_ON_DISK)
			break; /* its fault is not the pool's: no marker */
		if (!marker && pgno >= w->marker_from) {
			marker = pgno; /* left out: its fault asks for the next window */
			continue;
		}
		if (pgno >= end)
			break;
		zero = entry_is_zero(e) && !target_marks(t); /* as load_from_pool() */
		if (n && (zero || pgno != run_first + n)) {
			uint32_t done = load_prefetch_run(t, run_first, run, n);

			installed += done;
			failed = done < n;
			n = 0;
			if (failed)
				break;
		}
		e->readahead = 0;
		if (zero) {
			int r = target_fill_checked(t, pgno << ZS_PAGE_SHIFT,
						    uffd_zeropage(t->uffd_w.fd, pgno << ZS_PAGE_SHIFT));

			if (r != 0 && r != -EEXIST)
				break;
			target_page_prefetched(t, pgno << ZS_PAGE_SHIFT, e);
			d->st.prefetch_pages++;
			installed++;
			continue;
		}
		if (entry_load(d, e, d->buf.prefetch + (size_t)n * ZS_PAGE_SIZE) < 0)
			break; /* load_serve() says so if it is ever wanted */
		if (!n)
			run_first = pgno;
		run[n++] = e;
	}
	if (n) {
		uint32_t done = load_prefetch_run(t, run_first, run, n);

		installed += done;
		failed = done < n;
	}
	prefetch_installed(&t->prefetch, w, installed, failed ? 0 : marker);
}

/* load_serve() with the entry at addr already looked up (NULL: none). */
static int load_serve_entry(struct target *t, uint64_t addr, bool write, struct entry *e)
{
	int r;

	if (!e) {
		r = load_zero_fill(t, addr, write);
	} else if (e->where == ENTRY_ON_DISK) {
		/* Answered when the block arrives (wb.c). */
		r = wb_read(t, addr, e);
		if (r == 0)
			wb_readahead(t, addr);
		log_debug("pid %d: fault at %#llx on disk: %d", (int)t->pid,
			  (unsigned long long)addr, r);
		return r < 0 ? -EAGAIN : 0;
	} else {
		r = load_from_pool(t, addr, write, e);
		if (r == -EBADMSG)
			return 0;
		/* EEXIST: mapped meanwhile by a COPY of ours; the entry is stale either way. */
		if (r == 0 || r == -EEXIST)
			target_page_loaded(t, addr, e);
	}
	log_debug("pid %d: fault at %#llx (%s%s): %d", (int)t->pid, (unsigned long long)addr,
		  e ? "entry" : "no entry", write ? ", write" : "", r);
	switch (r) {
	case 0:
		t->limit.faults_since_check++;
		return 0;
	case -EAGAIN:
		return -EAGAIN;
	case -EEXIST:
	case -ENOENT:
	case -EFAULT:
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		return 0;
	case -ESRCH:
		target_kill(t, "mm gone");
		return 0;
	default:
		t->d->st.uffd_errors++;
		log_warning_errno(r, "pid %d: cannot serve fault at %#llx: %m", (int)t->pid,
				  (unsigned long long)addr);
		uffd_wake(t->uffd_w.fd, addr, ZS_PAGE_SIZE);
		return 0;
	}
}

int load_serve(struct target *t, uint64_t addr, bool write)
{
	return load_serve_entry(t, addr, write, idx_lookup(t->idx, addr >> ZS_PAGE_SHIFT));
}

int load_fault(struct target *t, uint64_t addr, bool write, bool may_prefetch)
{
	uint64_t pgno = addr >> ZS_PAGE_SHIFT;
	struct entry *e = idx_lookup(t->idx, pgno);
	bool pooled = e && e->where != ENTRY_ON_DISK;
	struct prefetch_window w;
	int r = load_serve_entry(t, addr, write, e);

	if (r != 0 || !pooled || t->dead)
		return r;
	prefetch_fault(&t->prefetch, pgno, now_usec() / 1000,
		       may_prefetch ? t->d->cfg.fault.prefetch_pages : 0, &w, &t->d->st.prefetch_hits,
		       &t->d->st.prefetch_misses);
	if (w.pages)
		load_prefetch(t, &w);
	return r;
}
