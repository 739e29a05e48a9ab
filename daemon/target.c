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
 *
 * A target that dies is only marked (target_kill): the loop's reaper
 * cancels what other modules had going on it and then frees it
 * (target_free), so that no caller is left holding a freed target, or
 * what hung off it, in the middle of its work.
 *
 * Also here: the index helpers that keep the per-target figures right, and
 * the target-level uses of its uffd (uffd.c has the raw ioctls).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "daemon.h"
#include "identity.h"
#include "idx.h"
#include "log.h"
#include "uffd.h"
#include "persist/journal.h"

/* What we need from every uffd; THREAD_ID tells our agent's faults apart. */
#define TARGET_UFFD_FEATURES                                                                  \
	(UFFD_FEATURE_EVENT_FORK | UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE |     \
	 UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_THREAD_ID)

/* What surviving zswapd's death needs of a uffd, and of its staging (persist/persist.c). */
static uint64_t target_survive_features(const struct daemon *d)
{
	return d->persist.fdstore ? UFFD_FEATURE_WP_UNPOPULATED : 0;
}

bool target_marks(const struct target *t)
{
	return t->d->persist.fdstore && (t->features & UFFD_FEATURE_WP_UNPOPULATED);
}

void target_set_staging_words(struct target *t)
{
	const struct daemon *d = t->d;

	__atomic_store_n(ZS_STAGING_DAEMON(t->agent.staging, t->agent.staging_pages), (uint32_t)getpid(),
			 __ATOMIC_RELEASE);
	__atomic_store_n(ZS_STAGING_REATTACH_SEC(t->agent.staging, t->agent.staging_pages),
			 d->persist.fdstore ? d->cfg.survive.reattach_timeout_seconds : 0, __ATOMIC_RELEASE);
}

bool target_agent_marks(const struct target *t)
{
	return t->agent.staging &&
	       __atomic_load_n(ZS_STAGING_AGENT_MARKS(t->agent.staging, t->agent.staging_pages),
			       __ATOMIC_ACQUIRE);
}

static void target_pidfd_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	struct target *t = watch_owner(w, struct target, pidfd_w);

	(void)d;
	(void)events;
	target_kill(t, "exited");
}

static int target_alloc(struct daemon *d, int uffd,
			void (*uffd_ready)(struct daemon *, struct watch *, uint32_t),
			struct target **ret)
{
	struct target *t;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->d = d;
	t->uffd_w.fd = uffd;
	t->uffd_w.fn = uffd_ready;
	t->uffd_w.urgent = true; /* its faults hold app threads */
	t->pidfd_w.fd = -1;
	t->pidfd_w.fn = target_pidfd_ready;
	t->agent.staging_fd = -1;
	t->ident.mem_fd = -1;
	t->counts.started_usec = now_usec();
	t->persist.key = ++d->persist.next_key;
	r = idx_new(&t->idx);
	if (r < 0)
		goto fail_free;
	r = watch_add(d->epfd, &t->uffd_w, EPOLLIN);
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
	return uffd_register(t->uffd_w.fd, t->agent.beacon, ZS_PAGE_SIZE);
}

/* Watches pidfd fd (ours now, closed on failure); -1 opens one of t->pid. */
static int target_watch_pid(struct target *t, int fd)
{
	int r;

	if (fd < 0)
		fd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (fd < 0)
		return -errno;
	t->pidfd_w.fd = fd;
	r = watch_add(t->d->epfd, &t->pidfd_w, EPOLLIN);
	if (r < 0) {
		close(fd);
		t->pidfd_w.fd = -1;
		return r;
	}
	return 0;
}

static int target_name(struct target *t, pid_t pid, int pidfd)
{
	t->pid = pid;
	if (proc_comm(pid, t->comm, sizeof(t->comm)) < 0)
		t->comm[0] = '\0';
	/* Its memory cgroup, for the groups it belongs to (group.c); a process
	 * moved to another cgroup later is seen in its old one. */
	if (cgroup_of_pid(pid, t->group.cgroup, sizeof(t->group.cgroup)) < 0)
		t->group.cgroup[0] = '\0';
	t->d->groups.cgroups_changed = true; /* the loop looks for its cgroup's limit now */
	return target_watch_pid(t, pidfd);
}

#define TARGET_STAGING_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

/*
 * Maps staging memfd fd of pages slots: t's from here on, or closed.  The
 * process shares it read-write: sealed against shrinking (which would make
 * our next touch a SIGBUS) and growing, and checked for both and for its
 * size here, whoever made it.  One made by a zswapd before the seals could
 * not be sealed afterwards: its size is checked, and the log says so.
 */
static int target_map_staging(struct target *t, int fd, uint32_t pages)
{
	/* The slots, then the page of veto bytes (ZS_STAGING_VETO). */
	size_t len = ((size_t)pages + 1) * ZS_PAGE_SIZE;
	struct stat st;
	int seals, r;
	void *p;

	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) < 0 || seals < 0) {
		r = -errno;
		goto fail;
	}
	if ((uint64_t)st.st_size != len) {
		r = -EBADFD;
		goto fail;
	}
	if ((seals & TARGET_STAGING_SEALS) != TARGET_STAGING_SEALS &&
	    fcntl(fd, F_ADD_SEALS, TARGET_STAGING_SEALS) < 0)
		log_warning("pid %d: its staging, made by an older zswapd, cannot be sealed; "
			    "it is until the process registers again", (int)t->pid);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	t->agent.staging_fd = fd;
	t->agent.staging = p;
	t->agent.staging_pages = pages;
	return 0;
fail:
	close(fd);
	return r;
}

/* A staging area of its own for a shim: where its agent copies pages out. */
static int target_make_staging(struct target *t)
{
	uint32_t pages = t->d->cfg.agent.evict_batch_pages;
	int fd, r;

	fd = memfd_create("zswapd-staging", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(((size_t)pages + 1) * ZS_PAGE_SIZE)) < 0 ||
	    fcntl(fd, F_ADD_SEALS, TARGET_STAGING_SEALS | F_SEAL_SEAL) < 0) {
		close(fd);
		return -errno;
	}
	r = target_map_staging(t, fd, pages);
	if (r == 0)
		target_set_staging_words(t);
	return r;
}

/* ZS_READY to t's shim: its staging, and a forked child's own copy of its uffd. */
int target_send_ready(struct target *t, bool forked)
{
	struct zs_ready ready = { .page_size = ZS_PAGE_SIZE };
	int fds[2], nfds = 1;

	ready.staging_pages = t->agent.staging_pages;
	/* UFFDIO_API reported what this kernel has: without MOVE, every move
	 * would fail and be vetoed, and nothing would ever be evicted. */
	if (t->d->cfg.agent.agent_move && (t->features & UFFD_FEATURE_MOVE))
		ready.flags |= ZS_READY_MOVE;
	if (t->d->cfg.agent.agent_follow_app)
		ready.flags |= ZS_READY_FOLLOW;
	if (target_marks(t))
		ready.flags |= ZS_READY_MARK;
	fds[0] = t->agent.staging_fd;
	if (forked)
		fds[nfds++] = t->uffd_w.fd; /* the child keeps its own copy (hazard 2, docs/design.md) */
	return proto_send(t->conn->w.fd, ZS_READY, 0, &ready, sizeof(ready), fds, nfds);
}

/* Connects a registered shim (ours or a forked child's) and sends ZS_READY. */
int target_adopt(struct target *t, struct conn *c)
{
	int r;

	if (!t->agent.staging) {
		r = target_make_staging(t);
		if (r < 0)
			return r;
	}
	t->conn = c;
	c->target = t;
	/* Its connection into the store before the shim hears READY: a zswapd
	 * killed in between would leave a shim holding its uffd (a forked
	 * child gets one) and a connection that dies with us, and it would
	 * abort at its next touch of an evicted page (hazard 8).  The next
	 * zswapd sends READY again; a shim that had it ignores the second. */
	t->persist.ready_unsure = true;
	journal_target(t);
	r = target_send_ready(t, c->hello_flags & ZS_HELLO_FORKED);
	if (r < 0) {
		t->conn = NULL;
		c->target = NULL;
		journal_conn_gone(t);
		return r;
	}
	t->persist.ready_unsure = false;
	journal_target(t);
	return 0;
}

/*
 * Whether uffd serves the mm of c's peer: a nonce written at the beacon
 * through the uffd must read back through that process's /proc/PID/mem,
 * which from then on is t's (reads through it stay with that mm).  The
 * beacon must be empty; the shim empties it again once READY.
 */
static int target_prove(struct target *t, struct conn *c)
{
	uint8_t nonce[IDENTITY_NONCE_LEN];
	int memfd, r;

	memfd = identity_open_mem(c->cred.pid, c->pidfd);
	if (memfd < 0)
		return memfd;
	r = identity_nonce(nonce);
	if (r == 0)
		r = identity_plant(t->uffd_w.fd, t->agent.beacon, nonce);
	if (r == 0)
		r = identity_check(memfd, t->agent.beacon, nonce);
	if (r <= 0) {
		close(memfd);
		return r < 0 ? r : -EPERM;
	}
	t->ident.mem_fd = memfd;
	return 0;
}

int target_new(struct daemon *d, struct conn *c, int uffd, uint64_t beacon,
	       void (*uffd_ready)(struct daemon *, struct watch *, uint32_t),
	       struct target **ret_target)
{
	pid_t pid = c->cred.pid;
	uint64_t features = 0;
	struct target *t;
	int pidfd, r;

	if (!uffd_is_uffd(uffd)) {
		close(uffd);
		d->st.denied++;
		return log_warning_errno(-EBADF, "pid %d: what it sent as its uffd is not one, refusing",
					 (int)pid);
	}
	r = uffd_api(uffd, TARGET_UFFD_FEATURES | target_survive_features(d), &features);
	if (r < 0) {
		close(uffd);
		return log_warning_errno(r, "pid %d: UFFDIO_API failed: %m", (int)pid);
	}
	r = target_alloc(d, uffd, uffd_ready, &t);
	if (r < 0) {
		close(uffd);
		return r;
	}
	t->features = features;
	t->agent.beacon = beacon;
	t->uid = c->cred.uid;
	r = target_register_beacon(t);
	if (r < 0) {
		log_warning_errno(r, "pid %d: cannot register beacon page: %m", (int)pid);
		goto fail;
	}
	r = target_prove(t, c);
	if (r < 0) {
		d->st.denied++;
		log_warning_errno(r, "pid %d: the uffd it sent does not serve its own memory (%m), "
				     "refusing", (int)pid);
		goto fail;
	}
	pidfd = fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3);
	r = pidfd < 0 ? -errno : target_name(t, pid, pidfd);
	if (r == 0 && t->persist.journaled)
		journal_target(t);
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

/*
 * A forked child's beacon fault (its shim's, right after its hello):
 * answered with a nonce only zswapd and the child's mm know, by which the
 * child's connection proves it is the child's (target_claim).  -EAGAIN:
 * the mm is changing, try again; -EEXIST: something is there already.
 */
int target_plant(struct target *t)
{
	int r = identity_nonce(t->ident.nonce);

	if (r == 0)
		r = identity_plant(t->uffd_w.fd, t->agent.beacon, t->ident.nonce);
	t->ident.planted = r == 0;
	return r;
}

/*
 * Names unnamed forked child t after c's peer and connects them, if c is a
 * forked child's hello of t's owner, accepted after t's fork, and its peer
 * reads t's nonce at its beacon: then the peer's mm is the one t's uffd
 * serves.  1 if claimed, 0 if not this pair, -errno if claimed but the
 * connection could not be set up.
 */
int target_claim(struct target *t, struct conn *c)
{
	int memfd, pidfd, r;

	if (t->pid || t->dead || !t->ident.planted || c->dead || c->target ||
	    c->kind != CONN_SHIM || !(c->hello_flags & ZS_HELLO_FORKED) ||
	    c->cred.uid != t->uid || c->seq <= t->ident.born_conn_seq)
		return 0;
	memfd = identity_open_mem(c->cred.pid, c->pidfd);
	if (memfd < 0)
		return 0;
	if (identity_check(memfd, t->agent.beacon, t->ident.nonce) <= 0) {
		close(memfd);
		return 0;
	}
	t->ident.mem_fd = memfd;
	pidfd = fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3);
	r = pidfd < 0 ? -errno : target_name(t, c->cred.pid, pidfd);
	if (r == 0 && t->persist.journaled)
		journal_target(t); /* its pidfd into the store */
	if (r == 0)
		r = target_adopt(t, c);
	return r < 0 ? r : 1;
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
 * the caller's to hand on: evict_note_fork).
 */
int target_new_child(struct target *parent, int uffd, struct target **ret_child)
{
	struct target *child;
	int r;

	r = target_alloc(parent->d, uffd, parent->uffd_w.fn, &child);
	if (r < 0) {
		close(uffd);
		return r;
	}
	child->forked = true;
	child->uid = parent->uid; /* its owner's, who may act on it */
	child->ident.born_conn_seq = parent->d->conns.seq;
	child->features = parent->features;
	child->agent.beacon = parent->agent.beacon;
	memcpy(child->agent.excl, parent->agent.excl, sizeof(child->agent.excl));
	child->agent.nexcl = parent->agent.nexcl;
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	r = idx_walk(parent->idx, 0, IDX_PGNO_MAX, target_copy_one, child);
	if (r < 0) {
		/* The child would read zeros where the parent had data. */
		log_error_errno(r, "pid %d: cannot share entries with a forked child: %m",
				(int)parent->pid);
		target_kill(child, "fork copy failed");
		return r;
	}
	*ret_child = child;
	return 0;
}

/*
 * A target handed over by the zswapd we replaced (handover_load.c), its uffd past
 * UFFDIO_API with features, its pidfd (-1: not named yet) and its staging
 * memfd (-1: none) inherited across the exec.  Every descriptor is the
 * target's from here on, success or not.
 */
int target_take_over(struct daemon *d, int uffd, uint64_t features, pid_t pid, int pidfd,
		     int staging_fd, uint32_t staging_pages,
		     void (*uffd_ready)(struct daemon *, struct watch *, uint32_t),
		     struct target **ret_target)
{
	struct target *t;
	int r;

	r = target_alloc(d, uffd, uffd_ready, &t);
	if (r < 0) {
		close(uffd);
		if (pidfd >= 0)
			close(pidfd);
		if (staging_fd >= 0)
			close(staging_fd);
		return r;
	}
	t->features = features;
	r = staging_fd >= 0 ? target_map_staging(t, staging_fd, staging_pages) : 0;
	if (r == 0 && pid)
		r = target_name(t, pid, pidfd);
	else if (pidfd >= 0)
		close(pidfd);
	/* Trusted (our image, our journal): the mm is the one the pid has now. */
	if (r == 0 && pid)
		t->ident.mem_fd = identity_open_mem(pid, t->pidfd_w.fd);
	if (r < 0) {
		target_kill(t, "handover failed");
		return r;
	}
	*ret_target = t;
	return 0;
}

uint64_t target_hot_window_ms(const struct target *t)
{
	return t->d->cfg.policy.hot_window_seconds * 1000ull;
}

/*
 * A process under a limit refaults all the time (50k pages a second at a
 * tight one): remembering each for the cold age rather than the hot window
 * would make its hot set a dozen times larger, and the limit's own sweeps
 * keep its hot pages anyway.  Proactive sweeps of it use the hot window.
 */
uint64_t target_hot_keep_ms(const struct target *t)
{
	uint64_t idle = target_limited(t) ? 0 : t->d->cfg.policy.idle_evict_seconds * 1000ull;

	idle *= PROACTIVE_MAX_BACKOFF; /* as long as proactive eviction may leave it alone */
	return idle > target_hot_window_ms(t) ? idle : target_hot_window_ms(t);
}

uint64_t target_proactive_window_ms(const struct target *t)
{
	uint32_t ages = t->proactive.backoff > PROACTIVE_MIN_PROTECT ? t->proactive.backoff
								     : PROACTIVE_MIN_PROTECT;
	uint64_t w = t->d->cfg.policy.idle_evict_seconds * 1000ull * ages;

	if (target_limited(t))
		return target_hot_window_ms(t);
	return w > target_hot_window_ms(t) ? w : target_hot_window_ms(t);
}

void target_note_stall(struct target *t, const struct uffd_msg *msg)
{
	uint32_t waited = (uint32_t)now_usec() - msg->reserved3;

	t->counts.stall_usec += waited;
	t->d->st.fault_stall_usec += waited;
}

void target_tick(struct target *t, uint64_t now_ms)
{
	rate_feed(&t->counts.loads_rate, t->counts.loads, now_ms);
	rate_feed(&t->counts.stall_rate, t->counts.stall_usec, now_ms);
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
	uint32_t distance = (uint32_t)t->counts.stores - e->stored_at;
	uint64_t per_cycle = t->limit.rss_pages / (distance ? distance : 1);
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
	hot_note(&t->hot, le.pgno, now_ms, target_hot_keep_ms(t));
	/* Only a limit takes from the log and so keeps it short: a process
	 * without one would grow it by every page it got back, to 24 MiB of
	 * the daemon's locked memory.  Out of memory, the page is just not
	 * in the log: the sweep still sees it. */
	if (target_limited(t))
		(void)loadlog_push(&t->loads_log, &le);
}

uint64_t target_hot_pages(struct target *t)
{
	return hot_count_recent(&t->hot, now_usec() / 1000, target_hot_window_ms(t));
}

/*
 * A page that compressed too poorly is resident still, and will compress
 * just as poorly on the next sweep: remember it for a minute rather than pay
 * the compression again on every pass (docs/benchmarks.md, "Poor pages
 * remembered").  Proactive sweeps, which nothing forces to converge, leave
 * it alone as long as a page that came back (target_poor_window_ms): each
 * try takes the page out of the process and puts it back, on its CPUs.
 * evict_pick.c reads both sets.
 */
void target_note_poor(struct target *t, uint64_t addr)
{
	uint64_t keep = target_hot_keep_ms(t);

	hot_note(&t->evict.poor, addr >> ZS_PAGE_SHIFT, now_usec() / 1000,
		 keep > TARGET_POOR_WINDOW_MS ? keep : TARGET_POOR_WINDOW_MS);
}

uint64_t target_poor_window_ms(const struct target *t, bool idle_only)
{
	uint64_t w = idle_only ? target_proactive_window_ms(t) : 0;

	return w > TARGET_POOR_WINDOW_MS ? w : TARGET_POOR_WINDOW_MS;
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
/*
 * Whether [start, start + len) lies in one private anonymous read-write
 * mapping of t's, by /proc/PID/maps: the only kind of memory an agent's
 * scratch may be, since zswapd reads its slots (evict_read_scratch()).
 */
static bool target_scratch_valid(struct target *t, uint64_t start, uint64_t len)
{
	char path[64], *maps = NULL, *line;
	size_t n;
	bool ok = false;

	if (start % ZS_PAGE_SIZE || len % ZS_PAGE_SIZE || len < (uint64_t)t->agent.staging_pages * ZS_PAGE_SIZE ||
	    start + len < start)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	if (read_full_file(path, &maps, &n) < 0)
		return false;
	for (line = maps; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned long long lo, hi, off, inode;
		char perms[8];
		int pathpos = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*x:%*x %llu%n", &lo, &hi, perms, &off, &inode,
			   &pathpos) < 5)
			continue;
		while (line[pathpos] == ' ')
			pathpos++;
		if (start < lo || start >= hi)
			continue;
		ok = start + len <= hi && strcmp(perms, "rw-p") == 0 && inode == 0 &&
		     (line[pathpos] == '\n' || line[pathpos] == '\0' ||
		      strncmp(line + pathpos, "[anon", 5) == 0);
		break;
	}
	free(maps);
	/* Alive after reading: the maps were of the mm we serve, not of an exec'd image. */
	return ok && target_mm_alive(t);
}

/*
 * The scratch area the agent published once, checked once: later changes
 * of the words are not looked at.  One that is not its own private memory
 * is a misbehaving agent: its connection goes, and its pages are served on.
 */
uint64_t target_scratch(struct target *t, uint64_t *ret_start)
{
	const volatile uint64_t *pub;
	uint64_t start, len;

	if (!t->agent.staging || t->dead)
		return 0;
	if (!t->agent.scratch_len) {
		pub = ZS_STAGING_SCRATCH(t->agent.staging, t->agent.staging_pages);
		len = __atomic_load_n(&pub[1], __ATOMIC_ACQUIRE);
		start = __atomic_load_n(&pub[0], __ATOMIC_RELAXED);
		if (!len)
			return 0;
		if (!target_scratch_valid(t, start, len)) {
			t->d->st.denied++;
			log_warning("pid %d: its agent's scratch area %#llx+%llu is not its own "
				    "private memory; no more evictions", (int)t->pid,
				    (unsigned long long)start, (unsigned long long)len);
			if (t->conn)
				t->conn->doomed = "agent scratch refused";
			return 0;
		}
		t->agent.scratch_start = start;
		t->agent.scratch_len = len;
	}
	if (ret_start)
		*ret_start = t->agent.scratch_start;
	return t->agent.scratch_len;
}

bool target_mm_alive(struct target *t)
{
	if (t->agent.beacon == 0)
		return true;
	return uffd_writeprotect(t->uffd_w.fd, t->agent.beacon, ZS_PAGE_SIZE, false) != -ESRCH;
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
		t->counts.compressed_bytes -= ((struct entry *)old)->len;
		entry_put(t->d, old);
	}
	t->counts.compressed_bytes += e->len;
	return 0;
}

static int target_invalidate_one(uint64_t pgno, void *val, void *arg)
{
	struct target *t = arg;
	struct entry *e = val;

	idx_erase(t->idx, pgno);
	t->counts.compressed_bytes -= e->len;
	t->counts.invalidates++;
	t->d->st.invalidates++;
	entry_put(t->d, e);
	return 0;
}

/* The app discarded [start, end): its entries go, so a later touch reads zeros. */
void target_invalidate(struct target *t, uint64_t start, uint64_t end)
{
	journal_invalidate(t, start, end);
	idx_walk(t->idx, start >> ZS_PAGE_SHIFT,
		 (end + ZS_PAGE_SIZE - 1) >> ZS_PAGE_SHIFT, target_invalidate_one, t);
}

/* Marks the target dead; the reaper (loop.c) frees it when no handler can see it. */
void target_kill(struct target *t, const char *why)
{
	if (t->dead)
		return;
	t->dead = true;
	if (t->pid)
		log_info("pid %d (%s): %s, dropping %zu evicted pages", (int)t->pid, t->comm, why,
			 idx_count(t->idx));
}

static void target_drop_entry(void *val, void *arg)
{
	entry_put(arg, val);
}

void target_free(struct target *t)
{
	struct daemon *d = t->d;

	journal_gone(t);
	watch_del(d->epfd, &t->uffd_w);
	close(t->uffd_w.fd);
	if (t->pidfd_w.fd >= 0) {
		watch_del(d->epfd, &t->pidfd_w);
		close(t->pidfd_w.fd);
	}
	if (t->agent.staging)
		munmap(t->agent.staging, ((size_t)t->agent.staging_pages + 1) * ZS_PAGE_SIZE);
	if (t->agent.staging_fd >= 0)
		close(t->agent.staging_fd);
	if (t->ident.mem_fd >= 0)
		close(t->ident.mem_fd);
	idx_free(t->idx, target_drop_entry, d);
	free(t->layout.vmas);
	free(t->layout.maps);
	free(t->layout.registered);
	hot_free(&t->hot);
	loadlog_free(&t->loads_log);
	hot_free(&t->evict.poor);
	free(t->waits.retry);
	free(t->waits.unprotect);
	free(t->waits.throttled);
	free(t);
}

/* ---- the target's uffd ---- */

static size_t target_registered_at(const struct target *t, uint64_t start)
{
	size_t lo = 0, hi = t->layout.nregistered;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->layout.registered[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * UFFDIO_REGISTER takes the target's mmap lock for writing, which stops its
 * page faults, and a batch of scattered pages has a run in most chunks: so
 * each range is registered once, and again only after the layout changed
 * (an unmap or mremap event forgets them all).  A range that was
 * unregistered behind our back fails the write-protect that follows with
 * ENOENT: evict.c then forgets them all and registers it again.
 */
int target_register(struct target *t, uint64_t start, uint64_t end)
{
	size_t i = target_registered_at(t, start);
	int r;

	if (i < t->layout.nregistered && t->layout.registered[i].start == start && t->layout.registered[i].end == end)
		return 0;
	r = uffd_register(t->uffd_w.fd, start, end - start);
	if (r < 0)
		return r;
	if (t->layout.nregistered == t->layout.registered_cap) {
		size_t cap = t->layout.registered_cap ? t->layout.registered_cap * 2 : 64;
		struct vma *v = realloc(t->layout.registered, cap * sizeof(*v));

		if (!v)
			return 0; /* registered, just not remembered */
		t->layout.registered = v;
		t->layout.registered_cap = cap;
	}
	memmove(t->layout.registered + i + 1, t->layout.registered + i,
		(t->layout.nregistered - i) * sizeof(*t->layout.registered));
	t->layout.registered[i] = (struct vma){ start, end };
	t->layout.nregistered++;
	return 0;
}

void target_page_loaded(struct target *t, uint64_t addr, struct entry *e)
{
	target_note_refault(t, addr, e);
	target_page_prefetched(t, addr, e);
}

void target_page_prefetched(struct target *t, uint64_t addr, struct entry *e)
{
	journal_unlink(t, addr);
	idx_erase(t->idx, addr >> ZS_PAGE_SHIFT);
	t->counts.compressed_bytes -= e->len;
	t->counts.loads++;
	t->d->st.loads++;
	entry_put(t->d, e);
}

int target_unmark(struct target *t, uint64_t addr)
{
	int r = t->pid ? proc_page_owed(t->pid, addr) : 0;

	if (r == 1)
		uffd_writeprotect(t->uffd_w.fd, addr, ZS_PAGE_SIZE, false);
	return r;
}

/*
 * UFFDIO_COPY (and ZEROPAGE) says EEXIST when the page is there, but also when the PMD
 * above it is not a page table it can fill: a huge page, or a PMD that is
 * not present at that instant (mfill_establish_pmd, mm/userfaultfd.c).  On
 * EEXIST the caller drops the entry, or the page it was putting back,
 * believing the process has it: never on the ioctl's word alone.  A page
 * that is not there after all is EAGAIN, retried like any other.
 */
int target_fill_checked(struct target *t, uint64_t addr, int r)
{
	if (r != -EEXIST || t->pid == 0 || proc_page_present(t->pid, addr) != 0)
		return r;
	/* An evicted page's marker (hazard 8): UFFDIO_COPY writes over it,
	 * ZEROPAGE and POISON refuse.  Gone, the next try maps the page. */
	if (target_unmark(t, addr) == 1)
		return -EAGAIN;
	t->d->st.uffd_errors++;
	log_warning("pid %d: UFFDIO_COPY/ZEROPAGE at %#llx said EEXIST on a missing page; retrying",
		    (int)t->pid, (unsigned long long)addr);
	return -EAGAIN;
}

static int target_unprotect_push(struct target *t, uint64_t addr, uint64_t len)
{
	if (t->waits.nunprotect == t->waits.unprotect_cap) {
		uint32_t cap = t->waits.unprotect_cap ? t->waits.unprotect_cap * 2 : 16;
		struct uffdio_range *u = realloc(t->waits.unprotect, cap * sizeof(*u));

		if (!u)
			return -ENOMEM;
		t->waits.unprotect = u;
		t->waits.unprotect_cap = cap;
	}
	t->waits.unprotect[t->waits.nunprotect++] = (struct uffdio_range){ .start = addr, .len = len };
	return 0;
}

/*
 * Lifts write-protection from [addr, addr+len) and wakes whoever waited on
 * it.  While an event of the app is pending (its madvise, munmap, mremap)
 * the kernel says EAGAIN and neither lifts nor wakes: a writer would wait
 * for ever.  Such a range is lifted again from the loop
 * (target_unprotect_retry, each turn) until it goes through.
 */
int target_unprotect(struct target *t, uint64_t addr, uint64_t len)
{
	int r = uffd_writeprotect(t->uffd_w.fd, addr, len, false);

	return r == -EAGAIN ? target_unprotect_push(t, addr, len) : r;
}

/*
 * A new batch has just protected [addr, addr+len): a lift still pending
 * there from before must not take that protection away under the batch (a
 * write between the agent's copy and its drop would be lost).  The batch's
 * own lift wakes whoever waited on the old one.  A right part that cannot
 * be kept (ENOMEM) is woken instead: its writers fault again, and a
 * write-protect fault outside a batch lifts the protection.
 */
int target_unprotect_cancel(struct target *t, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;
	uint32_t n = t->waits.nunprotect, kept = 0;
	int r = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct uffdio_range u = t->waits.unprotect[i];
		uint64_t u_end = u.start + u.len;

		if (u_end <= addr || u.start >= end)
			continue;
		/* The left part stays in place, the right part goes to the end. */
		t->waits.unprotect[i].len = u.start < addr ? addr - u.start : 0;
		if (u_end > end && target_unprotect_push(t, end, u_end - end) < 0) {
			r = -ENOMEM;
			uffd_wake(t->uffd_w.fd, end, u_end - end);
		}
	}
	for (uint32_t i = 0; i < t->waits.nunprotect; i++)
		if (t->waits.unprotect[i].len)
			t->waits.unprotect[kept++] = t->waits.unprotect[i];
	t->waits.nunprotect = kept;
	return r;
}

/* The write-protections that met EAGAIN, once more; those that fail for good wake anyway. */
void target_unprotect_retry(struct target *t)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < t->waits.nunprotect; i++) {
		struct uffdio_range *u = &t->waits.unprotect[i];
		int r = uffd_writeprotect(t->uffd_w.fd, u->start, u->len, false);

		if (r == -EAGAIN)
			t->waits.unprotect[kept++] = *u;
		else if (r < 0)
			uffd_wake(t->uffd_w.fd, u->start, u->len);
	}
	t->waits.nunprotect = kept;
}

/*
 * Whether a limit, the operator's or the default (default_limit_percent),
 * applies to t: reclaim.c holds it there, and only then is a log of its
 * loads worth keeping.
 */
bool target_limited(const struct target *t)
{
	return t->limit.set ? t->limit.bytes != 0 : t->d->cfg.policy.default_limit_percent != 0;
}
