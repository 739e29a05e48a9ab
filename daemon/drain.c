// SPDX-License-Identifier: GPL-2.0-only
/*
 * drain.c - stopping without losing a page (hazard 2, docs/design.md).
 *
 * The pool lives in our memory, so before we exit every evicted page goes
 * back into its process (UFFDIO_COPY, as a fault would), batches in flight
 * finish or are put back from staging, and every registration is removed
 * (UFFDIO_UNREGISTER of the vmas smaps marks "um"/"uw"): a registration that
 * outlived us would leave a first touch in a registered chunk waiting for
 * an answer forever, since the shim keeps its uffd open.  The beacon page
 * is filled first (drain_mark_beacon), for a forked child no shim claimed.
 * Then ZS_BYE tells the agent the stop was orderly.  The loop keeps
 * serving faults and events throughout, because the apps keep running.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "daemon.h"
#include "persist/persist.h"
#include "idx.h"
#include "log.h"
#include "uffd.h"
#include "vmscan.h"
#include "persist/journal.h"

#define DRAIN_BATCH_TIMEOUT_USEC (5 * 1000000ull)  /* an agent that long silent is stopped */
#define DRAIN_TIMEOUT_USEC (60 * 1000000ull)

void drain_begin(struct daemon *d)
{
	uint64_t pages = 0;

	if (d->stop.active)
		return;
	d->stop.active = true;
	d->stop.usec = now_usec();
	if (d->listen_w.fd >= 0) {
		watch_del(d->epfd, &d->listen_w);
		close(d->listen_w.fd);
		d->listen_w.fd = -1;
	}
	for (struct target *t = d->targets; t; t = t->next) {
		pages += t->dead ? 0 : idx_count(t->idx);
		reclaim_end(t, -ESHUTDOWN);
		restore_end(t, -ESHUTDOWN);
	}
	log_info("stopping: faulting %llu pages back into their processes",
		 (unsigned long long)pages);
	if (d->sd.notify)
		sd_notify(0, "STOPPING=1");
	notify_status(d);
}

static int drain_one(uint64_t pgno, void *val, void *arg)
{
	uint64_t addr = pgno << ZS_PAGE_SHIFT;
	struct target *t = arg;
	struct entry *e = val;
	int r;

	if (e->where == ENTRY_ON_DISK) {
		/* Stopping: a blocking read is fine, and simpler than waiting. */
		r = wb_load_sync(t->d, e, t->d->buf.page);
		if (r == 0)
			r = uffd_copy(t->uffd_w.fd, addr, t->d->buf.page, true);
		if (r == -EAGAIN)
			return r;
		if (r < 0 && r != -EEXIST && r != -ENOENT) {
			/* The page is lost to the process either way: say so. */
			log_error_errno(r, "pid %d: cannot return page %#llx from the swap file: %m",
					(int)t->pid, (unsigned long long)addr);
			journal_unlink(t, addr);
			idx_erase(t->idx, pgno);
			t->counts.compressed_bytes -= e->len;
			entry_put(t->d, e);
		} else {
			target_page_loaded(t, addr, e);
		}
		return 0;
	}
	r = load_serve(t, addr, true);
	if (r == -EAGAIN)
		return r; /* an event is pending: read it first, then go on */
	if (idx_lookup(t->idx, pgno)) {
		/* The address is not mapped any more (ENOENT): nothing to restore. */
		struct entry *e;

		journal_unlink(t, addr);
		e = idx_erase(t->idx, pgno);

		t->counts.compressed_bytes -= e->len;
		entry_put(t->d, e);
	}
	return 0;
}

static void drain_unregister(struct target *t)
{
	char path[64], *smaps;
	struct vma *v;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)t->pid);
	if (read_full_file(path, &smaps, NULL) < 0)
		return;
	if (vmscan_registered(smaps, &v, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			int r = uffd_unregister(t->uffd_w.fd, v[i].start, v[i].end - v[i].start);

			if (r < 0 && r != -ESRCH)
				log_warning_errno(r, "pid %d: cannot unregister %#llx-%#llx: %m",
						  (int)t->pid, (unsigned long long)v[i].start,
						  (unsigned long long)v[i].end);
		}
		free(v);
	}
	free(smaps);
}

/*
 * Marks the beacon page drained (ZS_BEACON_DRAINED): a forked child whose
 * shim could not reach us, and finds its registrations gone, knows by it
 * that we returned its pages before we went.  -EAGAIN: an event first.
 */
static int drain_mark_beacon(struct target *t)
{
	uint8_t *page = t->d->buf.page;
	int r;

	if (!t->agent.beacon)
		return 0;
	memset(page, 0, ZS_PAGE_SIZE);
	memcpy(page, ZS_BEACON_DRAINED, sizeof(ZS_BEACON_DRAINED));
	r = uffd_copy(t->uffd_w.fd, t->agent.beacon, page, true);
	return r == -EAGAIN ? r : 0; /* present already (EEXIST), or the mm is gone */
}

/* Returns true when the target needs nothing more. */
static bool drain_target(struct target *t, uint64_t now)
{
	if (t->dead || t->drained)
		return true;
	if (t->evict.batch) {
		if (now - t->evict.batch->started_usec < DRAIN_BATCH_TIMEOUT_USEC)
			return false;
		log_warning("pid %d: agent silent for %llus, putting its batch back", (int)t->pid,
			    (unsigned long long)(DRAIN_BATCH_TIMEOUT_USEC / 1000000));
		evict_abort(t);
	}
	if (idx_walk(t->idx, 0, IDX_PGNO_MAX, drain_one, t) < 0 || idx_count(t->idx) || t->waits.nretry ||
	    t->waits.nthrottled)
		return false;
	if (drain_mark_beacon(t) == -EAGAIN)
		return false;
	if (t->pid)
		drain_unregister(t);
	if (t->conn)
		proto_send(t->conn->w.fd, ZS_BYE, 0, NULL, 0, NULL, 0);
	t->drained = true;
	return true;
}

bool drain_step(struct daemon *d)
{
	uint64_t now = now_usec(), left = 0;
	bool done = true;

	for (struct target *t = d->targets; t; t = t->next)
		if (!drain_target(t, now)) {
			done = false;
			left += idx_count(t->idx);
		}
	/* Writes in flight hold entries: let them land before we go. */
	if (wb_busy(d))
		done = false;
	if (done) {
		log_info("stopped: every page is back (%llu loads)", (unsigned long long)d->st.loads);
		return true;
	}
	if (now - d->stop.usec > DRAIN_TIMEOUT_USEC) {
		log_error("gave up draining after %llus with %llu pages still evicted",
			  (unsigned long long)(DRAIN_TIMEOUT_USEC / 1000000), (unsigned long long)left);
		d->stop.exit_code = 1;
		return true;
	}
	return false;
}
