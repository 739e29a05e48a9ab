// SPDX-License-Identifier: GPL-2.0-only
/*
 * target.c - the life of one served mm: registration, fork, exit.
 *
 * A target is born from a shim's ZS_UFFD (target_new) or from
 * UFFD_EVENT_FORK on its parent's uffd (target_new_child).  It learns its pid
 * from SO_PEERCRED in the first case, and from the tid of its first fault in
 * the second (the child's shim forces one on its beacon page at once).  It
 * dies when its pidfd says the process exited, when a ioctl says its mm is
 * gone (exec, or a child we never got a pid for), or when the daemon stops.
 *
 * The uffd is set up here, by the daemon: only a caller with CAP_SYS_PTRACE
 * may ask for UFFD_FEATURE_EVENT_FORK, and shims run as anybody.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "daemon.h"
#include "idx.h"
#include "log.h"

/* What we need from every uffd; THREAD_ID tells our agent's faults apart. */
#define TARGET_UFFD_FEATURES                                                                  \
	(UFFD_FEATURE_EVENT_FORK | UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE |     \
	 UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_THREAD_ID)

static void target_pidfd_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	struct target *t = (struct target *)((char *)w - offsetof(struct target, pidfd_w));

	(void)d;
	(void)events;
	target_kill(t, "exited");
}

static int target_alloc(struct daemon *d, int uffd, struct target **ret)
{
	struct target *t;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->d = d;
	t->uffd_w.fd = uffd;
	t->uffd_w.fn = fault_uffd_ready;
	t->pidfd_w.fd = -1;
	t->pidfd_w.fn = target_pidfd_ready;
	t->staging_fd = -1;
	r = idx_new(&t->idx);
	if (r < 0)
		goto fail_free;
	r = loop_add(d, &t->uffd_w, EPOLLIN);
	if (r < 0)
		goto fail_idx;
	t->next = d->targets;
	d->targets = t;
	*ret = t;
	return 0;
fail_idx:
	idx_free(t->idx, NULL, NULL);
fail_free:
	free(t);
	return r;
}

/* The beacon is registered MISSING|WP so that UFFDIO_WRITEPROTECT on it is a
 * harmless liveness probe: ESRCH once the mm is gone (target_mm_alive). */
static int target_register_beacon(struct target *t)
{
	struct uffdio_register reg = {
		.range = { .start = t->beacon, .len = ZS_PAGE_SIZE },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(t->uffd_w.fd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	return 0;
}

static int target_watch_pid(struct target *t)
{
	int fd;

	fd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (fd < 0)
		return -errno;
	t->pidfd_w.fd = fd;
	if (loop_add(t->d, &t->pidfd_w, EPOLLIN) < 0) {
		close(fd);
		t->pidfd_w.fd = -1;
		return -errno;
	}
	return 0;
}

int target_set_pid(struct target *t, pid_t pid)
{
	t->pid = pid;
	if (proc_comm(pid, t->comm, sizeof(t->comm)) < 0)
		t->comm[0] = '\0';
	return target_watch_pid(t);
}

/* A staging area of its own for a shim: where its agent copies pages out. */
static int target_make_staging(struct target *t)
{
	/* The slots, then the page of veto bytes (ZS_STAGING_VETO). */
	size_t len = ((size_t)t->d->cfg.evict_batch_pages + 1) * ZS_PAGE_SIZE;
	void *p;
	int fd;

	fd = memfd_create("zswapd-staging", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0)
		goto fail;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	t->staging_fd = fd;
	t->staging = p;
	t->staging_pages = t->d->cfg.evict_batch_pages;
	return 0;
fail:
	close(fd);
	return -errno;
}

/* Connects a registered shim (ours or a forked child's) and sends ZS_READY. */
int target_adopt(struct target *t, struct conn *c)
{
	struct zs_ready ready = { .page_size = ZS_PAGE_SIZE };
	int fds[2], nfds = 1, r;

	if (!t->staging) {
		r = target_make_staging(t);
		if (r < 0)
			return r;
	}
	ready.staging_pages = t->staging_pages;
	/* UFFDIO_API reported what this kernel has: without MOVE, every move
	 * would fail and be vetoed, and nothing would ever be evicted. */
	if (t->d->cfg.agent_move && (t->features & UFFD_FEATURE_MOVE))
		ready.flags |= ZS_READY_MOVE;
	if (t->d->cfg.agent_follow_app)
		ready.flags |= ZS_READY_FOLLOW;
	fds[0] = t->staging_fd;
	if (c->hello_flags & ZS_HELLO_FORKED)
		fds[nfds++] = t->uffd_w.fd; /* the child keeps its own copy (hazard 2) */
	r = proto_send(c->w.fd, ZS_READY, 0, &ready, sizeof(ready), fds, nfds);
	if (r < 0)
		return r;
	t->conn = c;
	c->target = t;
	return 0;
}

int target_new(struct daemon *d, struct conn *c, pid_t pid, int uffd, uint64_t beacon,
	       struct target **ret_target)
{
	struct uffdio_api api = { .api = UFFD_API, .features = TARGET_UFFD_FEATURES };
	struct target *t;
	int r;

	if (ioctl(uffd, UFFDIO_API, &api) < 0) {
		r = -errno;
		close(uffd);
		return log_warning_errno(r, "pid %d: UFFDIO_API failed: %m", (int)pid);
	}
	r = target_alloc(d, uffd, &t);
	if (r < 0) {
		close(uffd);
		return r;
	}
	t->features = api.features;
	t->beacon = beacon;
	r = target_register_beacon(t);
	if (r < 0) {
		log_warning_errno(r, "pid %d: cannot register beacon page: %m", (int)pid);
		goto fail;
	}
	r = target_set_pid(t, pid);
	if (r < 0)
		goto fail;
	r = target_adopt(t, c);
	if (r < 0)
		goto fail;
	log_info("pid %d (%s): registered", (int)pid, t->comm);
	*ret_target = t;
	return 0;
fail:
	target_kill(t, "setup failed");
	return r;
}

static int target_copy_one(uint64_t pgno, void *val, void *arg)
{
	struct target *child = arg;
	struct entry *e = val;
	int r;

	entry_get(e);
	r = target_insert(child, pgno << ZS_PAGE_SHIFT, e);
	if (r < 0)
		entry_put(child->d, e);
	return r;
}

/*
 * UFFD_EVENT_FORK: the child starts with every entry of the parent, shared.
 * The parent is blocked in fork() until we read the event, so its index is
 * exactly what the child inherited (pages of an eviction batch in flight are
 * handled by evict_note_fork).
 */
int target_new_child(struct target *parent, int uffd, struct target **ret_child)
{
	struct target *child;
	int r;

	r = target_alloc(parent->d, uffd, &child);
	if (r < 0) {
		close(uffd);
		return r;
	}
	child->features = parent->features;
	child->beacon = parent->beacon;
	memcpy(child->excl, parent->excl, sizeof(child->excl));
	child->nexcl = parent->nexcl;
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	r = idx_walk(parent->idx, 0, IDX_PGNO_MAX, target_copy_one, child);
	if (r < 0) {
		/* The child would read zeros where the parent had data. */
		log_error_errno(r, "pid %d: cannot share entries with a forked child: %m",
				(int)parent->pid);
		target_kill(child, "fork copy failed");
		return r;
	}
	evict_note_fork(parent, child);
	*ret_child = child;
	return 0;
}

uint64_t target_hot_window_ms(const struct target *t)
{
	return t->d->cfg.hot_window_seconds * 1000ull;
}

/*
 * Page addr came back, e its entry.  Its refault distance is how many pages
 * this process stored between its eviction and now; if that is not more
 * than it keeps resident, an LRU of its size would have kept the page, so
 * the page gets a second chance in the log of loads (loadlog.h).
 */
void target_note_refault(struct target *t, uint64_t addr, const struct entry *e)
{
	uint64_t now_ms = now_usec() / 1000, seen_ms;
	uint32_t distance = (uint32_t)t->stores - e->stored_at;
	uint64_t per_cycle = t->rss_pages / (distance ? distance : 1);
	struct loadlog_entry le = {
		.pgno = addr >> ZS_PAGE_SHIFT,
		.when_ms = now_ms,
		.chances = per_cycle > TARGET_MAX_CHANCES ? TARGET_MAX_CHANCES : (uint32_t)per_cycle,
	};

	/* Back twice within one millisecond: the entry logged for the first
	 * return stands for both (two live entries of one page could put it
	 * twice into one batch). */
	if (hot_when(&t->hot, le.pgno, &seen_ms) && seen_ms == now_ms)
		return;
	hot_note(&t->hot, le.pgno, now_ms, target_hot_window_ms(t));
	/* Only a limit takes from the log and so keeps it short: a process
	 * without one would grow it by every page it got back, to 16 MiB of
	 * the daemon's locked memory.  Out of memory, the page is just not
	 * in the log: the sweep still sees it. */
	if (reclaim_limited(t))
		(void)loadlog_push(&t->loads_log, &le);
}

uint64_t target_hot_pages(const struct target *t)
{
	return hot_count(&t->hot, now_usec() / 1000, target_hot_window_ms(t));
}

/*
 * A page that compressed too poorly is resident still, and will compress
 * just as poorly on the next sweep: remember it for a minute rather than pay
 * the compression again on every pass (a 512 MiB benchmark process with
 * 16k random pages compressed 5 million of them in five minutes while this
 * memory was a lossy 8k-slot table).  evict.c reads both sets.
 */
void target_note_poor(struct target *t, uint64_t addr)
{
	hot_note(&t->poor, addr >> ZS_PAGE_SHIFT, now_usec() / 1000, TARGET_POOR_WINDOW_MS);
}

/*
 * The target of a live process.  Pids are reused (pid_max is 32768 here), so
 * a target whose process went without our noticing yet may carry the same
 * pid: prefer the one whose shim is connected.
 */
struct target *target_by_pid(struct daemon *d, pid_t pid)
{
	struct target *any = NULL;

	for (struct target *t = d->targets; t; t = t->next) {
		if (t->pid != pid || t->dead)
			continue;
		if (t->conn)
			return t;
		if (!any)
			any = t;
	}
	return any;
}

/*
 * An agent that moves pages out publishes where it puts them, once: start
 * then length, written by the agent while we read, so the length (stored
 * last, with release) is what says the start is valid.
 */
uint64_t target_scratch(const struct target *t, uint64_t *ret_start)
{
	const volatile uint64_t *pub;
	uint64_t len;

	if (!t->staging)
		return 0;
	pub = ZS_STAGING_SCRATCH(t->staging, t->staging_pages);
	len = __atomic_load_n(&pub[1], __ATOMIC_ACQUIRE);
	if (ret_start)
		*ret_start = __atomic_load_n(&pub[0], __ATOMIC_RELAXED);
	return len;
}

bool target_mm_alive(struct target *t)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = t->beacon, .len = ZS_PAGE_SIZE },
		.mode = 0,
	};

	if (t->beacon == 0)
		return true;
	return ioctl(t->uffd_w.fd, UFFDIO_WRITEPROTECT, &wp) == 0 || errno != ESRCH;
}

uint64_t target_evicted_pages(const struct target *t)
{
	return idx_count(t->idx);
}

int target_insert(struct target *t, uint64_t addr, struct entry *e)
{
	void *old = NULL;
	int r;

	r = idx_insert(t->idx, addr >> ZS_PAGE_SHIFT, e, &old);
	if (r < 0)
		return r;
	if (old) {
		t->compressed_bytes -= ((struct entry *)old)->len;
		entry_put(t->d, old);
	}
	t->compressed_bytes += e->len;
	return 0;
}

static int target_invalidate_one(uint64_t pgno, void *val, void *arg)
{
	struct target *t = arg;
	struct entry *e = val;

	idx_erase(t->idx, pgno);
	t->compressed_bytes -= e->len;
	t->invalidates++;
	t->d->st.invalidates++;
	entry_put(t->d, e);
	return 0;
}

/* The app discarded [start, end): its entries go, so a later touch reads zeros. */
void target_invalidate(struct target *t, uint64_t start, uint64_t end)
{
	idx_walk(t->idx, start >> ZS_PAGE_SHIFT,
		 (end + ZS_PAGE_SIZE - 1) >> ZS_PAGE_SHIFT, target_invalidate_one, t);
}

/* Marks the target dead; target_reap() frees it when no handler can see it. */
void target_kill(struct target *t, const char *why)
{
	if (t->dead)
		return;
	t->dead = true;
	if (t->pid)
		log_info("pid %d (%s): %s, dropping %zu evicted pages", (int)t->pid, t->comm, why,
			 idx_count(t->idx));
	if (t->reclaim)
		reclaim_cancel(t, -ESRCH);
	restore_finish(t, -ESRCH);
}

static void target_drop_entry(void *val, void *arg)
{
	entry_put(arg, val);
}

static void target_free(struct target *t)
{
	struct daemon *d = t->d;

	evict_abort(t);
	evict_pick_free(t);
	evict_forget_child(d, t);
	wb_forget_target(t);
	loop_del(d, &t->uffd_w);
	close(t->uffd_w.fd);
	if (t->pidfd_w.fd >= 0) {
		loop_del(d, &t->pidfd_w);
		close(t->pidfd_w.fd);
	}
	if (t->conn) {
		t->conn->target = NULL;
		conn_close(t->conn, "target gone");
	}
	if (t->staging)
		munmap(t->staging, ((size_t)t->staging_pages + 1) * ZS_PAGE_SIZE);
	if (t->staging_fd >= 0)
		close(t->staging_fd);
	idx_free(t->idx, target_drop_entry, d);
	free(t->vmas);
	free(t->maps);
	free(t->registered);
	hot_free(&t->hot);
	loadlog_free(&t->loads_log);
	hot_free(&t->poor);
	free(t->retry);
	free(t->unprotect);
	free(t->throttled);
	free(t);
}

void target_reap(struct daemon *d)
{
	struct target **pp = &d->targets, *t;

	while ((t = *pp)) {
		if (t->dead) {
			*pp = t->next;
			target_free(t);
		} else {
			pp = &t->next;
		}
	}
}
