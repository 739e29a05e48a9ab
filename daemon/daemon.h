/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * daemon.h - the objects of zswapd and how they point at each other.
 *
 *   struct daemon   one per process: config, pool, compressor, counters, the
 *                   epoll loop, every connection and every target.
 *   struct conn     one accepted socket: a shim (one per process, owned by
 *                   its agent thread after registration) or a zswapctl.
 *   struct target   one mm we serve: its uffd, pidfd, index of evicted pages,
 *                   the eviction batch in flight and the faults waiting on it.
 *   struct entry    one stored page, shared between a parent and the
 *                   children it forked (refcounted like a swap entry).
 *
 * Everything runs on one thread, in the loop of loop.c: no locks.  The loop
 * never blocks on a target: the only thing a target can make us wait for is
 * its agent's reply, and that arrives as an event like any other.
 *
 * Calls go one way, down this list (each file's prototypes are below, in
 * the same order, lowest first; what daemon/persist/ offers the rest is
 * in persist/persist.h and persist/journal.h, the keeper in keeper/):
 *   loop, main          the turn: events, then each module's per-turn
 *                       work (_turn), then the reaper; once a second _tick
 *   conn, ctl, stats    the control socket
 *   persist/            what outlives zswapd: a restart through the fd
 *                       store, an upgrade's image, the start after a crash
 *   drain, restore      stop; swapoff for one process
 *   group, proactive    budgets of many processes, cgroup limits; cold
 *                       pages evicted unasked
 *   pressure            the host's memory pressure (PSI)
 *   fault               the uffd reader: faults and events (invalidate)
 *   reclaim             how much to evict, and when
 *   evict               the store: a batch's start, commit and abort
 *   evict_stall         a batch whose agent stalls; writes to a batch's pages
 *   evict_pick, evict_flight   which pages; the app acting on pages in flight
 *   load                the load: a fault served from the pool or the swap file
 *   wb                  writeback: the swap file's I/O
 *   recomp              cold entries compressed again, denser
 *   target              one served mm: its index and its uffd
 *   persist/journal     what zswapd holds, written down as it changes
 *   entry               stored pages, refcounts, the writeback LRU
 *   uffd, watch, swapmap, cgroup, pool, idx, comp, hot, loadlog, rate, vmscan,
 *   util; common/ (proto, size) beneath all
 * A low object that finds something dead marks it (target->dead,
 * conn->doomed); the reaper at the end of the turn (loop.c) cancels,
 * aborts and frees, from the top down, so no handler frees what a caller
 * below it still holds.
 */
#ifndef ZSWAPD_DAEMON_H
#define ZSWAPD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <linux/userfaultfd.h>

#include "cfg.h"
#include "cgroup.h"
#include "hot.h"
#include "idlepoll.h"
#include "loadlog.h"
#include "prefetch.h"
#include "proto.h"
#include "rate.h"
#include "vmscan.h"
#include "watch.h"
#include "zswap_proto.h"
#include "zswap_stats.h"

struct daemon;
struct journal;
struct recovery;
struct fdstore_fd;
struct signalfd_siginfo;

/*
 * Global counters, declared once in zswap_stats.h: each FIELD there is a
 * uint64_t here, kept by whoever counts it (the help text there says what
 * it counts); stats.c turns them, and the DERIVED ones, into the reply.
 */
#define STATS_MEMBER_FIELD(name) uint64_t name;
#define STATS_MEMBER_DERIVED(name)
#define STATS_MEMBER(name, kind, source, help) STATS_MEMBER_##source(name)
struct stats {
	ZS_STATS(STATS_MEMBER)
};

enum entry_kind {
	ENTRY_SAME = 1, /* val is the repeated 64-bit word */
	ENTRY_COMP = 2, /* val is a pool handle, len bytes */
	ENTRY_RAW = 3,	/* val points to a malloc'd copy of the page (see entry_store_raw) */
};

enum entry_where {
	ENTRY_IN_POOL = 0, /* val is a pool handle (or the word of a SAME entry) */
	ENTRY_WRITING,	   /* being written back: still in the pool, disk is set */
	ENTRY_ON_DISK,	   /* in the swap file at byte offset disk; val unused */
};

/* The writeback LRUs: compressed entries, and pages stored as they are. */
enum entry_lru_kind {
	ENTRY_LRU_COMP = 0,
	ENTRY_LRU_RAW = 1,
	ENTRY_LRU_N,
};

struct entry_lru {
	struct entry *head, *tail;
	struct entry *cursor; /* the recompressor's walk: the next it looks at (recomp.c) */
};

/* entry->recomp: the recompressor's marks (recomp.c). */
enum {
	ENTRY_RECOMP_SEEN = 1, /* met by a walk: the next one recompresses it */
	ENTRY_RECOMP_DONE = 2, /* compressed by the recompressor, not the compressor */
	ENTRY_RECOMP_POOR = 4, /* tried: not an eighth smaller, left as it was */
};

struct entry {
	uint32_t refs;
	uint16_t len;
	uint8_t kind;
	uint8_t where;
	uint8_t readahead;  /* brought back by readahead, not yet used */
	uint8_t ra_pending; /* a readahead read is under way */
	uint8_t reads;	    /* fault reads under way: the entry stays where they read it */
	uint8_t recomp;	    /* ENTRY_RECOMP_* */
	uint32_t stored_at; /* the target's store count when stored: refault distance */
	uint64_t val;
	uint64_t disk;
	struct entry *lru_prev, *lru_next; /* the writeback LRU, while IN_POOL */
};

enum conn_kind {
	CONN_NEW,  /* nothing said yet */
	CONN_SHIM, /* HELLO seen: a process registering, later its agent */
	CONN_CTL,  /* a zswapctl request seen */
};

struct conn {
	struct watch w;
	struct daemon *d;
	struct conn *next;
	struct ucred cred; /* SO_PEERCRED at accept */
	int pidfd;	   /* the peer's (identity.h): checked alive before it is believed */
	uint64_t seq;	   /* accept order: a forked child pairs only with a later one */
	uint64_t pidns;	   /* the peer's pid namespace if not ours (a container's), else 0 */
	enum conn_kind kind;
	uint32_t hello_flags;
	struct target *target; /* CONN_SHIM, once registered */
	const char *doomed;    /* a lower module wants it closed, and why: the reaper closes it */
	bool upgrade_waiting;  /* a zswapctl upgrade: the new binary answers (handover_load.c) */
	uint32_t upgrade_seq;
	bool dead;	       /* closed: freed at the end of this loop turn */
};

/* A range of one eviction batch: npages pages from addr, staging slots from slot. */
struct batch_run {
	uint64_t addr;
	uint32_t npages;
	uint32_t slot;
};

/* An mremap seen while a batch was in flight: applied to its pages at commit. */
struct batch_remap {
	uint64_t from;
	uint64_t to;
	uint64_t len;
};

#define BATCH_MAX_FORKS 32

struct batch {
	uint64_t id;
	uint32_t nruns;
	uint32_t npages;
	struct batch_run *runs;
	uint8_t *dead;	   /* per slot: the app discarded this page while in flight */
	uint8_t *restored; /* per slot: put back for our own agent, which needed it */
	uint8_t *writer;   /* per slot: BATCH_WRITER_*, a write-protect fault of the app's */
	uint32_t nwriters_waiting; /* slots at BATCH_WRITER_WAITING */
	struct batch_remap *remaps; /* in the order they came */
	uint32_t nremaps, remaps_cap;
	bool remap_overflow; /* one could not be kept (ENOMEM): put the pages back */
	struct target *forks[BATCH_MAX_FORKS]; /* children forked while in flight */
	uint32_t nforks;
	struct uffd_msg *deferred; /* faults on the batch's pages, served at commit */
	uint32_t ndeferred, deferred_cap;
	uint64_t started_usec;
	bool move_first; /* ZS_EVICT_MOVE_FIRST: not write-protected (evict.c) */
	bool no_unshare; /* ZS_EVICT_NO_UNSHARE: a fork was under way as it was made */
	bool recovered;	 /* sent by a zswapd that died: put back, never committed (recover.c) */
	uint8_t **saved; /* per slot: a move-first page read from the scratch at a fork, or NULL */
	/* Once the agent is done (ZS_EVICT_DONE), the commit runs a slice of
	 * pages per loop turn, faults served in between. */
	int32_t *dropped;   /* per run: pages the agent dropped, or -errno; NULL until done */
	uint8_t *committed; /* per slot: the commit has dealt with it (stored, refused, skipped) */
	uint32_t commit_run, commit_page; /* where the commit goes on */
};

/* batch->writer[slot]: what became of an app thread's write to a page in flight. */
enum {
	BATCH_WRITER_NONE,
	BATCH_WRITER_WAITING, /* in a write-protect fault, until the commit lifts it */
	BATCH_WRITER_LET_THROUGH, /* the batch stalled: lifted and vetoed (evict.c) */
};

/* The next batch being chosen, one chunk of address space per loop turn. */
struct pick {
	struct vmscan_run *runs; /* EVICT_MAX_RUNS */
	struct vmscan_result res;
	int pagemap_fd;
	uint64_t start, cursor; /* where this pass began, and where it goes on */
	uint64_t scanned;	/* pages looked at in this pass */
	uint64_t total;		/* pages in the evictable ranges: one sweep */
	bool hot_in;		/* second pass: recently refaulted pages may go too */
	bool from_log;		/* the second pass takes them oldest load first (loadlog.h) */
	uint64_t started_usec;
};

/* A `zswapctl reclaim` being served on one target. */
struct reclaim {
	struct conn *conn; /* NULL if the requester went away, or internal */
	bool internal;	   /* started by the limit, not by a zswapctl: nobody to answer */
	bool idle_only;	   /* idle eviction: never take a page that came back lately */
	uint32_t seq;
	uint64_t want_pages;
	bool wrapped;
	/* The target's commit tallies when it began: the reply is what they
	 * grew by since (reclaim_tally), so a batch never holds this pointer. */
	uint64_t stores_at_start, stored_bytes_at_start, refused_at_start;
	struct zs_reclaim_reply reply;
};

/* What the shim's agent thread said, and the staging memfd shared with it. */
struct target_agent {
	pid_t tid;	   /* 0 until ZS_AGENT */
	uint64_t beacon;
	struct zs_range excl[ZS_AGENT_MAX_EXCL]; /* ranges it asked us never to evict */
	uint32_t nexcl;
	int staging_fd;
	uint8_t *staging;
	uint32_t staging_pages;
	uint64_t mismoves_seen; /* ZS_STAGING_MISMOVES when the last batch ended */
	/* Its scratch area, as it first published it and we checked it (target_scratch). */
	uint64_t scratch_start, scratch_len;
};

/* Its limit on resident anonymous memory (reclaim.c). */
struct target_limit {
	uint64_t bytes;		/* keep RssAnon at or under this; 0 = no limit */
	uint64_t last;		/* the limit in force at the last check (reclaim_limit_of) */
	bool set;		/* by zswapctl limit (even "none"): default_limit_percent no longer applies */
	bool unreachable_told;	/* logged that its incompressible pages exceed its limit */
	uint64_t rss_pages;	/* RssAnon at the last check, in pages */
	uint64_t stores_at_check; /* t->counts.stores then: rss_pages + faults - stores since = now */
	uint64_t faults_since_check; /* pages faulted in since RssAnon was last read */
};

/*
 * Its evictable ranges, read from smaps at most once a second (smaps walks
 * every page table: under a limit it cost more than the pagemap sweeps).
 * Dropped when an UNMAP or REMAP event says the layout changed; a range
 * mapped meanwhile waits for the next read (evict_pick.c, target.c).
 */
struct target_layout {
	struct vma *vmas;
	size_t nvmas;
	uint64_t vmas_usec;	/* when checked against maps; 0 = read smaps again */
	uint64_t smaps_usec;	/* when vmas came from smaps */
	char *maps;		/* /proc/PID/maps as it was then: unchanged, vmas stand */
	struct vma *registered; /* ranges we registered, sorted: the layout has not changed since */
	size_t nregistered, registered_cap;
};

/* What it has going in the store path (evict*.c). */
struct target_evict {
	struct batch *batch;	/* the batch in flight, or NULL */
	struct pick *pick;	/* a batch being chosen, or NULL */
	/* Forked while this parent had a batch in flight: until it commits,
	 * our missing faults may be on its pages in flight, so they wait. */
	struct target *batch_parent;
	uint64_t scan_cursor;	     /* the clock hand: next address to consider */
	uint64_t sweep_dry_until_ms; /* a sweep found next to nothing cold: the log first until then */
	struct hot poor; /* pages refused lately for compressing poorly: not worth a retry */
};

/* Faults and write-protections that wait for something (fault.c). */
struct target_waits {
	struct uffd_msg *retry; /* faults that got EAGAIN (mm changing) */
	uint32_t nretry, retry_cap;
	struct uffdio_range *unprotect; /* write-protections to lift that got EAGAIN */
	uint32_t nunprotect, unprotect_cap;
	/* Faults held because we are over our limit (reclaim_throttle), until
	 * the batch being picked or in flight commits or FAULT_THROTTLE_USEC
	 * have passed. */
	struct uffd_msg *throttled;
	uint32_t nthrottled, throttled_cap;
	uint64_t throttled_usec; /* when the oldest was held */
};

/* Its reads from the swap file (wb.c). */
struct target_swapin {
	struct wb_io *reads;   /* under way for our faults */
	uint64_t last_addr;    /* of the last fault served from the swap file */
};

/* Crash survival (journal.h): the key naming it in the journal and the
 * fd store, and which of its descriptors are there. */
struct target_persist {
	uint64_t key;
	bool journaled;
	uint8_t stored_fds; /* bit JOURNAL_FD_*: in the store */
	bool ready_unsure;  /* its shim may not have had ZS_READY: sent again after a take-over */
};

/* Its figures for `zswapctl list`. */
struct target_counts {
	uint64_t stores, loads, invalidates, compressed_bytes;
	uint64_t stall_usec; /* its threads waited on faults we served (target_note_stall) */
	struct rate loads_rate, stall_rate; /* both over the last minute */
	uint64_t started_usec; /* when it was first served */
	uint64_t stored_bytes, refused; /* what its commits did: bytes stored, pages refused */
};

/* Its memory cgroup, for group budgets (group.c). */
struct target_group {
	char cgroup[CGROUP_PATH_MAX]; /* "/" the root, "" unknown */
	uint64_t anon_pages; /* RssAnon at its group's last look */
	bool over;	     /* a group it is in is over its goal by more than the slack */
};

/* What binds it to one process's mm (identity.h). */
struct target_identity {
	int mem_fd; /* /proc/PID/mem, opened on the mm its uffd was proven to serve; -1 */
	/* A forked child not named yet: the nonce its beacon fault was served
	 * with, and the connections that may claim it (accepted after its fork). */
	uint8_t nonce[16];
	bool planted;
	uint64_t born_conn_seq;
};

/* Proactive eviction (proactive.c): the next sweep, and how far it backs off. */
struct target_proactive {
	uint64_t next_usec, last_usec;
	uint32_t backoff;   /* period and window multiplied by this: 1, 2, 4 .. */
	uint64_t calm_usec; /* under half the targets since; 0 = not */
};

struct target {
	struct daemon *d;
	struct target *next;
	pid_t pid; /* 0 for a forked child until its first fault names it */
	uid_t uid; /* owner, for access control: the registering peer's uid */
	char comm[ZS_COMM_LEN];
	struct watch uffd_w;
	struct watch pidfd_w; /* fd -1 until pid is known */
	struct conn *conn;    /* the shim's connection; NULL if none (yet) */
	uint64_t features;    /* what UFFDIO_API granted */
	struct idx *idx;      /* page -> entry, of its evicted pages */
	struct reclaim *reclaim;
	struct restore *restore; /* `zswapctl restore` under way (restore.c) */
	struct hot hot;       /* pages faulted back lately (hot.h) */
	struct loadlog loads_log; /* the same pages, in the order they came back */
	struct prefetch prefetch; /* readahead of its faults from the pool (prefetch.h) */
	bool dead;	      /* mm gone: free at the end of this loop turn */
	bool forked;	      /* born of UFFD_EVENT_FORK: its uffd is ours alone until a shim claims it */
	bool unclaimed;	      /* no shim claimed it in time: its pages were brought back (restore.c) */
	bool drained;	      /* stop: every page is back and registrations are gone */
	struct target_agent agent;
	struct target_limit limit;
	struct target_layout layout;
	struct target_evict evict;
	struct target_waits waits;
	struct target_swapin swapin;
	struct target_persist persist;
	struct target_counts counts;
	struct target_group group;
	struct target_proactive proactive;
	struct target_identity ident;
};

/* Processes held under one budget: all, or a cgroup's (group.c). */
struct group {
	struct daemon *d;
	struct group *next;
	char cgroup[CGROUP_PATH_MAX]; /* "" = every served process */
	uint64_t budget;   /* the operator's, for the members' RssAnon; 0 = none */
	bool follows;      /* the cgroup's own limit is followed */
	uint64_t limit;    /* that limit, as last read */
	uint64_t resident; /* the members' RssAnon at the last look */
	uint64_t usage;    /* the cgroup's usage then (followed groups) */
	uint32_t members;
	bool over;	   /* over its goal at the last look: said once per change */
	bool pressure_told;
	bool pressure_pri; /* its pressure fd is a PSI trigger (POLLPRI), else an eventfd */
	struct watch pressure_w; /* fd -1: no pressure events */
};

/* The control socket's connections (conn.c). */
struct daemon_conns {
	struct conn *list;
	uint64_t seq;	     /* connections accepted so far (conn->seq) */
};

/* The pool's bound (entry.c). */
struct daemon_pool_limit {
	uint64_t bytes;
	bool full; /* hysteresis: set at the limit, cleared under accept_threshold */
};

/* One page and more of scratch, the daemon's own, for loads and stores. */
struct daemon_bufs {
	uint8_t *page;	   /* one page, for loads */
	uint8_t *prefetch; /* PREFETCH_MAX_PAGES: a window decompressed */
	uint8_t *comp;	   /* COMP_BOUND bytes, for stores */
};

/* The recompressor (recomp.c): what stays cold, compressed again. */
struct daemon_recomp {
	struct comp *comp; /* NULL if none */
	uint64_t walk_usec, turn_usec;
};

/* Stopping (drain.c): SIGTERM or SIGINT. */
struct daemon_stop {
	bool active;
	uint64_t usec; /* when it began */
	int exit_code;
};

/* What systemd gave and asks (notify.c). */
struct daemon_systemd {
	bool socket_activated; /* the listening socket came from systemd: not ours to unlink */
	bool notify;	       /* NOTIFY_SOCKET was set */
	uint64_t watchdog_usec; /* 0 = no watchdog */
};

/* The loop's own clocks and compaction's pacing (loop.c). */
struct daemon_turn {
	uint64_t housekeeping_usec; /* the last once-a-second work */
	uint64_t limit_usec;	    /* the last check of limits */
	uint64_t spin_mark;	    /* faults served when the loop last polled */
	uint64_t compact_check_usec; /* loop_compact(): nothing to do before then */
	bool compact_wanted;	     /* the pool's holes are worth closing */
	uint64_t compact_faults_mark; /* faults served when loop_compact() last looked */
	uint64_t compact_quiet_usec; /* no fault since then: compaction may run */
	uint64_t compact_step_usec;  /* its last step */
	/* A handed-over pool's pages, locked again a few MiB a turn. */
	bool pool_locking;
	uint32_t pool_lock_cursor;
	uint64_t pool_lock_usec; /* when it began */
};

/* Idle CPUs held polling through bursts (idlepoll.h, idlepoll_qos.c). */
struct daemon_idlepoll {
	struct idlepoll burst;
	int fd; /* /dev/cpu_dma_latency, -1: none */
};

/* Group budgets (group.c). */
struct daemon_groups {
	struct group *list;
	bool cgroups_changed; /* a process was named: group_refresh() before the next second */
};

/* The host's memory pressure (pressure.c). */
struct daemon_pressure {
	struct watch w; /* the host's PSI trigger, fd -1 if none */
	uint64_t until_usec;
	bool told;
};

/* An in-place upgrade (upgrade.c, handover_save.c, handover_load.c). */
struct daemon_upgrade {
	bool active; /* quiescing for it: stop.active is set too */
	/* Before that, the new binary asked what it reads (upgrade.c), serving all along. */
	struct watch check_w; /* its stdout; fd -1 when no check runs */
	pid_t check_pid;
	uint64_t check_usec; /* when it began */
	char check_out[128];
	size_t check_n;
	char **argv;	     /* as we were started: the new binary gets the same */
	char exe_path[4096]; /* the binary we were started from, exec'd by an upgrade */
	int handover_fd;     /* the image we were started with, -1 if none */
	int kept_swap_fd;    /* the swap file's descriptor, from that image; -1 */
};

/* A restart that hands over through the fd store (restart.c). */
struct daemon_restart {
	bool active;	  /* quiescing for it: upgrade.active too */
	bool by_systemd;  /* its restart job asked for it: asked again before we go */
};

/* Crash survival: the journal and the fd store (journal.h, fdstore.h). */
struct daemon_persist {
	struct journal *journal;   /* NULL: not kept (no store, or turned off) */
	bool fdstore;		   /* NOTIFY_SOCKET names a store that keeps descriptors */
	struct fdstore_fd *handed; /* what the store gave us at start, until taken */
	size_t nhanded;
	uint64_t handles_gen;	   /* the pool's handle table is in the store as handles.<this> */
	uint64_t next_key;	   /* targets' keys */
	struct recovery *recovery; /* a start after a crash, from prepare to load (recover.c) */
};

struct daemon {
	struct cfg cfg;
	struct cfg file_cfg; /* what the config file said, before command-line overrides */
	char cfg_path[CFG_PATH_MAX * 2];
	int epfd;
	struct watch listen_w;
	struct watch signal_w;
	int devuffd_fd; /* /dev/userfaultfd, handed to every shim */
	struct comp *comp;
	struct pool *pool;
	struct wb *wb;	/* the writeback tier, NULL if none */
	struct swapmap *swapmap; /* its blocks in use (wb.c makes it), NULL if none */
	struct entry_lru lru[ENTRY_LRU_N]; /* pool entries by kind, oldest stored first (entry.c) */
	struct daemon_conns conns;
	struct target *targets;
	struct stats st;
	uint64_t next_batch_id;
	struct daemon_pool_limit pool_limit;
	struct daemon_bufs buf;
	struct daemon_recomp recomp;
	struct daemon_stop stop;
	struct daemon_systemd sd;
	struct daemon_turn turn;
	struct daemon_idlepoll idlepoll;
	struct daemon_groups groups;
	struct daemon_pressure pressure;
	struct daemon_upgrade upgrade;
	struct daemon_restart restart;
	struct daemon_persist persist;
};


/*
 * Longest a fault waits on an eviction batch, for being over its limit or
 * for the batch's pages; a batch in flight that long may have a stopped
 * agent (a debugger, LeakSanitizer's exit check) and is "stuck".
 */
#define FAULT_THROTTLE_USEC 10000

/* util.c */
uint64_t now_usec(void);
uint64_t now_nsec(void);
int read_full_file(const char *path, char **ret_buf, size_t *ret_len);
int proc_tgid_of(pid_t tid, pid_t *ret_tgid);
int proc_comm(pid_t pid, char *buf, size_t len);
int proc_status_kb(pid_t pid, const char *key, uint64_t *ret_kb);
int proc_page_present(pid_t pid, uint64_t addr);
/* n entries of pid's pagemap from addr's. */
int proc_pagemap(pid_t pid, uint64_t addr, uint32_t n, uint64_t *pm);
/* A pagemap entry of a page not present, marked uffd-wp: a marker, an evicted page's (hazard 8). */
#define PAGEMAP_OWED(pm) (!((pm) >> 63 & 1) && ((pm) >> 57 & 1))
/* 1: addr is not mapped but marked (uffd-wp), an evicted page's mark (hazard 8); 0: not; -errno. */
int proc_page_owed(pid_t pid, uint64_t addr);
/* populated[i]: whether page addr + i pages is present or swapped (pagemap), for n pages. */
int proc_pages_populated(pid_t pid, uint64_t addr, uint32_t n, uint8_t *populated);
/* One page of the mm memfd (its /proc/PID/mem, identity.h) was opened on; -EIO: not there. */
int proc_mem_read_page(int memfd, uint64_t addr, void *buf);
/* pid's first mapping (VMA) that ends past addr, from /proc/PID/maps; -ENOENT if none. */
int proc_vma_next(pid_t pid, uint64_t addr, uint64_t *ret_start, uint64_t *ret_end);

/* recomp.c */
#define RECOMP_TURN_USEC 4000 /* between two turns of recompression */
int recomp_open(struct daemon *d);
void recomp_close(struct daemon *d);
void recomp_turn(struct daemon *d);
bool recomp_pending(const struct daemon *d);

/* entry.c: store / load / put, the counters that go with them, the writeback LRU. */
int entry_store(struct daemon *d, const void *page, struct entry **ret_entry);
int entry_load(struct daemon *d, const struct entry *e, void *page);
int entry_store_raw(struct daemon *d, const void *page, struct entry **ret_entry);
/* The e->len bytes of e's object at obj, wherever they were read from, into page. */
int entry_unpack(struct daemon *d, const struct entry *e, const void *obj, void *page);
bool entry_stores_incompressible(const struct daemon *d);
/* Counts an entry rebuilt from a handover image in the levels, as a store would. */
int entry_account(struct daemon *d, struct entry *e);
/* The pool's size for its limit: near the limit its cached empty slabs go first. */
uint64_t entry_pool_size(struct daemon *d);
/* A COMP entry whose object is the page as it is (store_incompressible), not compressed. */
static inline bool entry_as_is(const struct entry *e)
{
	return e->len == ZS_PAGE_SIZE;
}
static inline void entry_get(struct entry *e)
{
	e->refs++;
}
void entry_put(struct daemon *d, struct entry *e);
bool entry_is_zero(const struct entry *e);
/* The writeback LRU an IN_POOL COMP entry is on; oldest: at the head (it goes first). */
void entry_lru_add(struct daemon *d, struct entry *e, bool oldest);
void entry_lru_del(struct daemon *d, struct entry *e);
/* The list writeback takes from next: pages stored as they are first, then the rest. */
struct entry_lru *entry_lru_next(struct daemon *d);

/* target.c */
/* A process's own registration: its uffd proven to serve the mm of c's peer. */
int target_new(struct daemon *d, struct conn *c, int uffd, uint64_t beacon,
	       void (*uffd_ready)(struct daemon *, struct watch *, uint32_t),
	       struct target **ret_target);
/* The child of a fork, with every entry of the parent shared; its uffd is served as the parent's. */
int target_new_child(struct target *parent, int uffd, struct target **ret_child);
/* A forked child's beacon fault answered with its nonce, and its claim by a connection. */
int target_plant(struct target *t);
int target_claim(struct target *t, struct conn *c);
/* A target inherited across an in-place upgrade (handover_load.c): its descriptors only. */
int target_take_over(struct daemon *d, int uffd, uint64_t features, pid_t pid, int pidfd,
		     int staging_fd, uint32_t staging_pages,
		     void (*uffd_ready)(struct daemon *, struct watch *, uint32_t),
		     struct target **ret_target);

int target_adopt(struct target *t, struct conn *c);
int target_send_ready(struct target *t, bool forked);
/* Marks it dead (it says why, once); the reaper cancels what it had going and frees it. */
void target_kill(struct target *t, const char *why);
/* Frees what the target itself holds; the reaper calls it once nothing names t. */
void target_free(struct target *t);
struct target *target_by_pid(struct daemon *d, pid_t pid);
bool target_mm_alive(struct target *t);
uint64_t target_evicted_pages(const struct target *t);
/* The agent's scratch area, as it published it in staging; 0 = none (not moving pages). */
uint64_t target_scratch(struct target *t, uint64_t *ret_start);
/* Index helpers that keep the counters right. */
void target_invalidate(struct target *t, uint64_t start, uint64_t end);
int target_insert(struct target *t, uint64_t addr, struct entry *e);
/* Page addr, whose entry is e, is back in the process: the entry goes, counted as a load. */
void target_page_loaded(struct target *t, uint64_t addr, struct entry *e);
/* The same for a page brought back before it was wanted: no refault. */
void target_page_prefetched(struct target *t, uint64_t addr, struct entry *e);
/* Registers [start, end) (MISSING|WP) unless it is registered since the layout last changed. */
int target_register(struct target *t, uint64_t start, uint64_t end);
/* r from UFFDIO_COPY/ZEROPAGE at addr, with an EEXIST that pagemap denies turned into -EAGAIN. */
int target_fill_checked(struct target *t, uint64_t addr, int r);
/* Clears the marker of an evicted page at addr (hazard 8), if there is one: 1 if there was. */
int target_unmark(struct target *t, uint64_t addr);
/* Whether t's pages are marked when taken out (ZS_READY_MARK; hazard 8). */
bool target_marks(const struct target *t);
/* Whether t's agent says it marks them (it got ZS_READY_MARK). */
bool target_agent_marks(const struct target *t);
/* Our pid and the reattach timeout, in t's staging (for its watcher). */
void target_set_staging_words(struct target *t);
/* Lifts write-protection; one the mm refuses for now (EAGAIN) is lifted again from the loop. */
int target_unprotect(struct target *t, uint64_t addr, uint64_t len);
int target_unprotect_cancel(struct target *t, uint64_t addr, uint64_t len);
void target_unprotect_retry(struct target *t);
/* Whether a limit, the operator's or the default, applies to t. */
bool target_limited(const struct target *t);
void target_note_refault(struct target *t, uint64_t addr, const struct entry *e);
void target_note_poor(struct target *t, uint64_t addr);
/* How long a poorly compressing page is passed over: longer by proactive sweeps. */
uint64_t target_poor_window_ms(const struct target *t, bool idle_only);
uint64_t target_hot_pages(struct target *t);
uint64_t target_hot_window_ms(const struct target *t);
/* How long a page that came back is remembered: the hot window, or as long as proactive eviction may protect it. */
uint64_t target_hot_keep_ms(const struct target *t);
/* How long a proactive sweep of t leaves a page that came back alone: its backoff, at least PROACTIVE_MIN_PROTECT cold ages. */
uint64_t target_proactive_window_ms(const struct target *t);
/* A fault read at msg->reserved3 (fault.c) is served: the wait counts as stall. */
void target_note_stall(struct target *t, const struct uffd_msg *msg);
/* Once a second: its rates over the last minute. */
void target_tick(struct target *t, uint64_t now_ms);
#define TARGET_POOR_WINDOW_MS 60000 /* a poorly compressing page is tried again after this */
#define PROACTIVE_MAX_BACKOFF 16 /* cold age 120 s: a sweep every 8 min, hot pages left 32 min */
/*
 * A page that came back is left alone at least this many cold ages: each
 * probe of a hot set faults all of it back (docs/benchmarks.md, "Pages
 * that came back").
 */
#define PROACTIVE_MIN_PROTECT 4
#define TARGET_MAX_CHANCES 7 /* passes at the head of the log of loads a hot page survives */

/* wb.c */
struct wb_io;
int wb_open(struct daemon *d);
void wb_close(struct daemon *d);
void wb_turn(struct daemon *d);
/* Starts the read a fault at addr on on-disk entry e needs; the fault is answered when it lands. */
int wb_read(struct target *t, uint64_t addr, struct entry *e);
void wb_readahead(struct target *t, uint64_t addr);
/* Room in the queue for a read beside the writes the writeback keeps going. */
bool wb_read_room(const struct daemon *d);
int wb_load_sync(struct daemon *d, const struct entry *e, void *page);
void wb_forget_target(struct target *t);
bool wb_busy(const struct daemon *d);
/* Blocks a zswapd that died was writing: not reused for a while (recover.c). */
void wb_hold(struct daemon *d, const uint64_t *blocks, size_t n);
/* The swap file's descriptor, -1 if there is none. */
int wb_fd(const struct daemon *d);

/* load.c */
/*
 * Serves one missing-page fault at addr now: the entry if there is one (it
 * goes: the page is the app's again), else a zero page.  0 when the fault
 * is resolved one way or another, -EAGAIN when it must be tried again.
 */
int load_serve(struct target *t, uint64_t addr, bool write);
/* load_serve() for an app's fault; may bring the pages after it back too (prefetch.h). */
int load_fault(struct target *t, uint64_t addr, bool write, bool may_prefetch);

/* idlepoll_qos.c: idle CPUs polling through bursts of faults (idlepoll.h). */
void idlepoll_open(struct daemon *d);
void idlepoll_fault_served(struct daemon *d);
/* Every loop turn: lets the hold go once the burst is over. */
void idlepoll_turn(struct daemon *d);

/* evict_flight.c: pages of the batch in flight, and what the app does to them. */
uint64_t evict_translate(const struct batch *b, uint64_t addr);
bool evict_in_flight(const struct target *t, uint64_t addr, uint32_t *ret_slot);
bool evict_in_staging(const struct target *t, uint64_t addr, uint32_t *ret_slot);
bool evict_slot_copied(const struct target *t, uint32_t slot);
const uint8_t *evict_slot_page(struct target *t, uint32_t slot, uint8_t *buf, int *ret_err);
bool evict_consume_own_remove(struct target *t, uint64_t start, uint64_t end);
void evict_note_discard(struct target *t, uint64_t start, uint64_t end);
int evict_note_remap(struct target *t, uint64_t from, uint64_t to, uint64_t len);
void evict_note_fork(struct target *t, struct target *child);
int evict_defer_fault(struct target *t, const struct uffd_msg *msg);
int evict_serve_agent_fault(struct target *t, uint64_t addr, uint32_t slot, bool agent);

/* evict_stall.c: a batch whose agent stalls, and writes to a batch's pages. */
int evict_serve_agent_wp(struct target *t, uint64_t addr, uint32_t slot);
void evict_note_writer(struct target *t, uint64_t addr, uint32_t slot);
void evict_note_pending_lifts(struct target *t, struct batch *b, uint64_t addr, uint32_t npages,
			      uint32_t slot);
/* In flight for FAULT_THROTTLE_USEC or more: its agent may be stopped. */
bool evict_batch_stuck(const struct target *t);
void evict_serve_stuck(struct target *t);

/* evict_pick.c */
/* 1: the next batch is picked (t->evict.pick holds it); 0: call again next turn; -errno. */
int evict_pick(struct target *t);
void evict_pick_free(struct target *t);
void evict_forget_layout(struct target *t);

/* evict.c */
#define EVICT_PICKING 2
#define EVICT_MAX_RUNS 512
int evict_begin(struct target *t);
int evict_done(struct target *t, const struct zs_evict_done *done);
void evict_abort(struct target *t);
bool evict_committing(const struct daemon *d);
void evict_commit_turn(struct daemon *d);
void evict_forget_child(struct daemon *d, struct target *child);
/* A batch a zswapd that died had out, from its journal: put back once the agent is done. */
struct evict_recovered {
	uint64_t id;
	uint32_t flags; /* ZS_EVICT_* */
	const struct batch_run *runs;
	uint32_t nruns;
	struct target *forks[BATCH_MAX_FORKS]; /* children forked while it was out */
	uint32_t nforks;
	bool done; /* the agent's answer was read by the dead zswapd */
};
int evict_recover(struct target *t, const struct evict_recovered *rb);
#define EVICT_RECOVER_WAIT_USEC (5 * 1000000ull) /* an agent that long silent is stopped */

/* reclaim.c */
int reclaim_start(struct target *t, struct conn *c, uint32_t seq, uint64_t bytes);
int reclaim_internal(struct target *t, uint64_t bytes, bool idle_only);
uint64_t reclaim_pending_pages(const struct target *t);
/* How far over a limit before acting, and how much under it to go then. */
uint64_t reclaim_slack(uint64_t limit);
void reclaim_enforce_limits(struct daemon *d, bool tick);
void reclaim_progress(struct target *t);
bool reclaim_picking(const struct daemon *d);
bool reclaim_limit_unreachable(const struct target *t);
bool reclaim_throttle(const struct target *t);
uint64_t reclaim_limit_of(const struct target *t, uint64_t rss);
void reclaim_turn(struct daemon *d);
void reclaim_end(struct target *t, int err);

/* fault.c */
void fault_uffd_ready(struct daemon *d, struct watch *w, uint32_t events);
void fault_retry_turn(struct daemon *d);
bool fault_retry_pending(const struct daemon *d);
void fault_throttled_turn(struct daemon *d);
bool fault_throttled_pending(const struct daemon *d);

/* pressure.c: the host's memory pressure (PSI). */
int pressure_open(struct daemon *d);
void pressure_close(struct daemon *d);
void pressure_note(struct daemon *d, const char *where);
void pressure_tick(struct daemon *d);
bool pressure_active(const struct daemon *d);

/* proactive.c: cold pages evicted unasked, backing off on refaults and stall. */
void proactive_turn(struct daemon *d);
uint64_t proactive_backed_off(const struct daemon *d);

/* group.c: budgets of groups of processes, and followed cgroup limits. */
struct group *group_find(struct daemon *d, const char *cgroup);
void group_refresh(struct daemon *d);
void group_rewatch(struct daemon *d);
void group_enforce(struct daemon *d, bool tick);
int group_set(struct daemon *d, const char *cgroup, uint64_t bytes, bool query,
	      struct zs_group_reply *rep, const char **ret_why);
size_t group_list(struct daemon *d, struct zs_group_info *out, size_t max);
bool group_any(const struct daemon *d);
void group_free_all(struct daemon *d);

/* restore.c */
int restore_begin(struct target *t, struct conn *c, uint32_t seq);
void restore_end(struct target *t, int err);
void restore_forget_conn(struct daemon *d, struct conn *c);
bool restore_active(const struct daemon *d);
void restore_turn(struct daemon *d);
void restore_unclaimed(struct daemon *d);

/* drain.c */
void drain_begin(struct daemon *d);
bool drain_step(struct daemon *d);

/* stats.c: the counters of zswap_stats.h, filled in order; how many. */
size_t stats_fill(struct daemon *d, struct zs_stat *out, size_t max);
#define STATS_COUNT (sizeof((const char *[]){ ZS_STATS(STATS_NAME) }) / sizeof(const char *))
#define STATS_NAME(name, kind, source, help) #name,

/* ctl.c */
int ctl_handle(struct conn *c, const struct zs_hdr *h);
/* The error for what a stop or an upgrade under way cannot take. */
int ctl_refuse_stopping(struct conn *c, uint32_t seq);

/* conn.c */
int conn_new(struct daemon *d, int fd, struct conn **ret_conn);
void conn_accept(struct daemon *d, struct watch *w, uint32_t events);
void conn_close(struct conn *c, const char *why);
void conn_reap(struct daemon *d);

/* loop.c */
/* Runs until the daemon has stopped; returns the exit code. Never returns otherwise. */
int loop_run(struct daemon *d);
/* Cancels and frees what died this turn (targets, connections), top down. */
void loop_reap(struct daemon *d);

/* vmscan.c: the ranges a target has registered, from its smaps (VmFlags um/uw). */
struct vma;
int vmscan_registered(const char *smaps, struct vma **ret_vmas, size_t *ret_n);

/* caps.c */
int caps_drop(void);

/* notify.c */
void notify_status(struct daemon *d);
void notify_watchdog(struct daemon *d);

#endif
