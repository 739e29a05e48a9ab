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

/* The page at addr was never evicted: zeros, as the kernel would give it. */
static int load_zero_fill(struct target *t, uint64_t addr, bool write)
{
	struct daemon *d = t->d;
	int r;

	if (write) {
		/* A written zero page would be copied at once: give a page. */
		memset(d->page_buf, 0, ZS_PAGE_SIZE);
		r = uffd_copy(t->uffd_w.fd, addr, d->page_buf, true);
	} else {
		r = uffd_zeropage(t->uffd_w.fd, addr);
	}
	if (r == 0)
		d->st.zero_fills++;
	return r;
}

/* Maps e's contents at addr; what the fill said, -EAGAIN to try again. */
static int load_from_pool(struct target *t, uint64_t addr, bool write, struct entry *e)
{
	struct daemon *d = t->d;
	int r;

	if (e->readahead) {
		d->st.readahead_hits++;
		e->readahead = 0;
		wb_readahead(t, addr); /* a sequential reader keeps its readahead going */
	}
	if (entry_is_zero(e) && !write)
		return target_fill_checked(t, addr, uffd_zeropage(t->uffd_w.fd, addr));
	r = entry_load(d, e, d->page_buf);
	if (r < 0) {
		/* Never map garbage: the page stays missing and the app waits
		 * rather than reading corrupt data.  This is a daemon bug. */
		log_error_errno(r, "pid %d: entry at %#llx does not decompress: %m", (int)t->pid,
				(unsigned long long)addr);
		d->st.uffd_errors++;
		return -EBADMSG;
	}
	return target_fill_checked(t, addr, uffd_copy(t->uffd_w.fd, addr, d->page_buf, true));
}

int load_serve(struct target *t, uint64_t addr, bool write)
{
	struct entry *e = idx_lookup(t->idx, addr >> ZS_PAGE_SHIFT);
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
		t->faults_since_check++;
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
