// SPDX-License-Identifier: GPL-2.0-only
/*
 * evict_pick.c - which pages the next batch takes: the clock hand.
 *
 * A sweep walks the target's evictable ranges (vmscan.c reads which from
 * smaps, and which pages are present from pagemap) from where the last one
 * stopped, a chunk of address space per loop turn, passing over pages that
 * came back within the hot window (hot.h) and pages that compressed poorly
 * lately.  When a whole sweep finds under half a batch of cold pages (a
 * tight limit: every resident page came back lately), the pages are taken
 * from the log of loads instead (loadlog.h), the one back longest ago
 * first, with as many second chances as its refault distance earns it;
 * a process without a log gets a second sweep, hot pages in.  The pick
 * writes what it scanned into the reclaim it serves, which reads no
 * further than that.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "vmscan.h"

#define EVICT_VMAS_TTL_USEC 1000000   /* maps is read at most this often per target */
#define EVICT_SMAPS_TTL_USEC 10000000 /* smaps at most this long unread while maps is unchanged */
#define EVICT_PICK_CHUNK 4096	     /* pages of address space looked at per loop turn: ~0.1 ms */
#define EVICT_LOG_LOOKS 4	     /* log entries looked at per batch page, at most */

/* What the clock hand passes over, with the time read once per pick. */
struct evict_skip {
	struct target *t;
	uint64_t now_ms, hot_ms, poor_ms;
};

static bool evict_skip_poor(uint64_t pgno, void *ctx)
{
	struct evict_skip *sk = ctx;

	if (!hot_recent(&sk->t->evict.poor, pgno, sk->now_ms, sk->poor_ms))
		return false;
	sk->t->d->st.poor_skips++;
	return true;
}

static bool evict_skip_hot(uint64_t pgno, void *ctx)
{
	struct evict_skip *sk = ctx;

	if (evict_skip_poor(pgno, ctx))
		return true;
	if (!hot_recent(&sk->t->hot, pgno, sk->now_ms, sk->hot_ms))
		return false;
	sk->t->d->st.hot_skips++;
	return true;
}

/*
 * Which ranges may be evicted comes from smaps' VmFlags, but reading smaps
 * walks every page table of the process: 15 ms for 1 GiB here, with every
 * fault of every target waiting behind it.  /proc/PID/maps costs no walk:
 * while it reads as it did, the ranges stand.  A change that leaves maps as
 * it was (mlock or MADV_DONTFORK of a whole mapping) is seen within
 * EVICT_SMAPS_TTL_USEC.
 */
static int evict_read_vmas(struct target *t)
{
	char path[64], *maps = NULL, *smaps = NULL;
	struct vma *vmas;
	size_t nvmas;
	bool same;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	r = read_full_file(path, &maps, NULL);
	if (r < 0)
		return r;
	same = t->layout.maps && strcmp(t->layout.maps, maps) == 0;
	if (t->layout.vmas_usec && same && now_usec() - t->layout.smaps_usec < EVICT_SMAPS_TTL_USEC) {
		free(maps);
		t->layout.vmas_usec = now_usec();
		return 0;
	}
	/* A mapping changed, and may have lost its registration without an
	 * event we know of: register again.  A move-first batch would not
	 * notice otherwise (UFFDIO_MOVE wants only its destination
	 * registered), and a page moved out of an unregistered range reads
	 * back as zeros, with no fault for us to serve. */
	if (!same)
		t->layout.nregistered = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)t->pid);
	r = read_full_file(path, &smaps, NULL);
	if (r < 0)
		goto out;
	r = vmscan_parse(smaps, t->agent.excl, t->agent.nexcl, &vmas, &nvmas);
	if (r < 0)
		goto out;
	free(t->layout.vmas);
	t->layout.vmas = vmas;
	t->layout.nvmas = nvmas;
	free(t->layout.maps);
	t->layout.maps = maps;
	maps = NULL;
	t->layout.vmas_usec = t->layout.smaps_usec = now_usec();
out:
	free(maps);
	free(smaps);
	return r;
}

void evict_pick_free(struct target *t)
{
	struct pick *p = t->evict.pick;

	if (!p)
		return;
	if (p->pagemap_fd >= 0)
		close(p->pagemap_fd);
	free(p->runs);
	free(p);
	t->evict.pick = NULL;
}

static int evict_pick_new(struct target *t)
{
	struct pick *p;
	char path[64];
	int r;

	if (!t->layout.vmas_usec || now_usec() - t->layout.vmas_usec > EVICT_VMAS_TTL_USEC) {
		r = evict_read_vmas(t);
		if (r < 0)
			return r;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->runs = calloc(EVICT_MAX_RUNS, sizeof(*p->runs));
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)t->pid);
	p->pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	t->evict.pick = p;
	if (!p->runs || p->pagemap_fd < 0) {
		r = p->pagemap_fd < 0 ? -errno : -ENOMEM;
		evict_pick_free(t);
		return r;
	}
	p->start = p->cursor = t->evict.scan_cursor;
	p->total = vmscan_total_pages(t->layout.vmas, t->layout.nvmas);
	p->started_usec = now_usec();
	/* The last sweep found next to nothing cold: do not sweep again so soon. */
	if (now_usec() / 1000 < t->evict.sweep_dry_until_ms && t->loads_log.n &&
	    !(t->reclaim && t->reclaim->idle_only))
		p->from_log = true;
	return 0;
}

/* The second pass as a sweep: from where the first began, hot pages in. */
static void evict_pick_hot_in(struct pick *p)
{
	p->from_log = false;
	p->hot_in = true;
	p->res = (struct vmscan_result){ 0 };
	p->cursor = p->start;
	p->scanned = 0;
}

static int evict_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The second pass from the log of loads: the pages that came back longest
 * ago go first, those with a second chance once more to the tail (renewed
 * in the hot set, as if back now).  An entry is dropped when its page came
 * back again since (a later entry stands for it), compresses poorly, or is
 * out of the hot window (the sweep takes those: this pass may add to what a
 * sweep picked); one whose page is no longer present (evicted, unmapped) is
 * dropped by vmscan_pick_pages.  A second chance renews an entry before the
 * window is looked at, so a page the sweep took as cold can come round
 * again within the same pick, hot now, and be taken twice: evict_begin
 * takes the double out (vmscan_runs_dedup).  Looks at most
 * EVICT_LOG_LOOKS entries per page wanted, so a log of second chances
 * costs a bounded turn.
 */
static int evict_pick_log(struct target *t, struct pick *p, const struct evict_skip *sk)
{
	uint32_t want = t->agent.staging_pages - p->res.npages, n = 0;
	uint64_t *pgnos, budget = (uint64_t)want * EVICT_LOG_LOOKS, looked = 0, when;
	struct loadlog_entry le;
	struct vmscan_result got = { 0 };
	int r;

	if (!want)
		return 0;
	pgnos = malloc(want * sizeof(*pgnos));
	if (!pgnos)
		return -ENOMEM;
	while (n < want && looked < budget && loadlog_pop(&t->loads_log, &le)) {
		bool seen = hot_when(&t->hot, le.pgno, &when);

		looked++;
		if (seen && when != le.when_ms)
			continue; /* stale: it came back again since */
		if (hot_recent(&t->evict.poor, le.pgno, sk->now_ms, sk->poor_ms))
			continue;
		if (le.chances) {
			/* Another turn, as if it came back now: the sweep passes
			 * over it meanwhile, however long it stays resident. */
			le.chances--;
			le.when_ms = sk->now_ms;
			hot_note(&t->hot, le.pgno, sk->now_ms, target_hot_keep_ms(t));
			t->d->st.hot_skips++;
			(void)loadlog_push(&t->loads_log, &le);
			continue;
		}
		if (!seen || sk->now_ms - when >= sk->hot_ms)
			continue; /* out of the window: the sweep's to take (never both) */
		pgnos[n++] = le.pgno;
	}
	qsort(pgnos, n, sizeof(*pgnos), evict_cmp_u64);
	r = vmscan_pick_pages(p->pagemap_fd, t->layout.vmas, t->layout.nvmas, pgnos, n, p->runs + p->res.nruns,
			      EVICT_MAX_RUNS - p->res.nruns, &got);
	free(pgnos);
	if (r < 0)
		return r;
	p->res.npages += got.npages;
	p->res.nruns += got.nruns;
	return 0;
}

/*
 * Chooses the pages of the next batch, EVICT_PICK_CHUNK pages of address
 * space per call: a sweep of a large process takes milliseconds, and every
 * fault of every target would wait behind it.  Returns 1 when the pick is
 * complete (t->evict.pick holds it), 0 when the loop should call again, -errno.
 */
int evict_pick(struct target *t)
{
	struct reclaim *rc = t->reclaim;
	struct pick *p;
	/* A proactive sweep passes over what came back within its window. */
	bool idle = rc && rc->idle_only;
	struct evict_skip sk = { t, now_usec() / 1000,
				 idle ? target_proactive_window_ms(t) : target_hot_window_ms(t),
				 target_poor_window_ms(t, idle) };
	struct vmscan_result got = { 0 };
	uint64_t left;
	int r;

	if (!t->evict.pick) {
		r = evict_pick_new(t);
		if (r < 0)
			return r;
	}
	p = t->evict.pick;
	if (p->from_log) {
		r = evict_pick_log(t, p, &sk);
		if (r < 0)
			return r;
		/* Mostly second chances and gone pages this turn: the next turn
		 * goes on (every entry looked at was dropped or lost a chance).
		 * Looks are not sweeps: they never make a reclaim "wrapped". */
		if (t->loads_log.n && p->res.npages < t->agent.staging_pages / 2)
			return 0;
		if (p->res.npages)
			return 1;
		evict_pick_hot_in(p); /* nothing left in the log */
	}
	left = p->total - p->scanned;
	/* One pass scans at most one sweep of the address space, passing over
	 * pages that came back lately (hot.h). */
	r = vmscan_pick(p->pagemap_fd, t->layout.vmas, t->layout.nvmas, p->cursor,
			t->agent.staging_pages - p->res.npages, left < EVICT_PICK_CHUNK ? left : EVICT_PICK_CHUNK,
			p->runs + p->res.nruns, EVICT_MAX_RUNS - p->res.nruns,
			p->hot_in ? evict_skip_poor : evict_skip_hot, &sk, &got);
	if (r < 0)
		return r;
	p->res.npages += got.npages;
	p->res.nruns += got.nruns;
	p->scanned += got.scanned;
	p->cursor = got.cursor;
	if (p->res.npages < t->agent.staging_pages && p->res.nruns < EVICT_MAX_RUNS &&
	    p->scanned < p->total && t->layout.nvmas)
		return 0;
	/*
	 * Under half a batch of cold pages in a whole sweep: a limit or a
	 * reclaim must still converge, so a second pass from the same place,
	 * hot pages in.  Idle sweeps take what is cold and nothing else.  (The
	 * window does not shrink instead: every page faulted back counts as
	 * refaulted, the cold ones too, and a shrinking window gives up the
	 * truly hot pages first: docs/benchmarks.md, "A fixed hot window".)
	 */
	if (!p->hot_in && !(rc && rc->idle_only) && p->res.npages < t->agent.staging_pages / 2) {
		/* Sweeping again soon would find as little: the log until then. */
		t->evict.sweep_dry_until_ms = sk.now_ms + sk.hot_ms / 4;
		if (t->loads_log.n) {
			p->from_log = true; /* keeping what this pass found */
			return 0;
		}
		evict_pick_hot_in(p);
		return 0;
	}
	t->evict.scan_cursor = p->cursor;
	/* Only the last pass counts: a first pass that found the pages hot
	 * must not end the reclaim as if the address space had nothing left
	 * (a limit would be held at twice its size, one batch per reclaim). */
	if (rc) {
		rc->reply.scanned_pages += p->scanned;
		if (rc->reply.scanned_pages >= p->total)
			rc->wrapped = true;
	}
	return 1;
}


/* An UNMAP or REMAP event: the ranges and registrations known are stale. */
void evict_forget_layout(struct target *t)
{
	t->layout.vmas_usec = 0;
	t->layout.nregistered = 0;
	evict_pick_free(t);
}
