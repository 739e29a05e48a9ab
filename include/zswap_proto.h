/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zswap_proto.h - the wire protocol between zswapd, the shim and zswapctl.
 *
 * One unix SOCK_SEQPACKET socket (default ZSWAP_DEFAULT_SOCKET, overridden by
 * $ZSWAP_SOCKET).  Every datagram is one message: a struct zs_hdr followed by
 * hdr.len bytes of payload.  All integers are host-endian (the peers always
 * share a machine).  A message larger than ZS_MSG_MAX, with a bad magic or
 * version, or whose payload does not match its type is rejected and the
 * connection is dropped; proto_check() in common/proto.c is the one place that
 * decides this.
 *
 * Registration of a process (the shim, from its constructor):
 *
 *   shim   -> ZS_HELLO {pid, flags=0}
 *   daemon -> ZS_DEVFD                      + fd: /dev/userfaultfd (read-write)
 *   shim      ioctl(devfd, USERFAULTFD_IOC_NEW) gives a full uffd of its own
 *             mm with no capability check, then closes devfd.
 *   shim   -> ZS_UFFD {beacon}              + fd: that uffd
 *   daemon    UFFDIO_API (it, not the shim, may ask for EVENT_FORK),
 *             registers the beacon page.
 *   daemon -> ZS_READY {staging_pages}      + fd: staging memfd
 *   shim      maps the staging area, starts the agent thread.
 *   agent  -> ZS_AGENT {tid, excluded ranges}
 *
 * A child made by fork() (the shim's atfork handler, in the child):
 *
 *   shim   -> ZS_HELLO {pid, flags=ZS_HELLO_FORKED}
 *   shim      reads its beacon page: the fault arrives on the child's uffd
 *             (which the daemon received with UFFD_EVENT_FORK) carrying the
 *             child's tid, which is how the daemon pairs that uffd with pid.
 *   daemon -> ZS_READY {staging_pages}      + fds: staging memfd, child's uffd
 *   agent  -> ZS_AGENT as above.
 *
 * Eviction (daemon to agent, one batch in flight per process):
 *
 *   daemon    once the agent has a scratch area (ZS_STAGING_SCRATCH):
 *             nothing; before that: write-protects the pages of the batch
 *             (UFFDIO_WRITEPROTECT)
 *   daemon -> ZS_EVICT {batch, flags, runs[]}
 *   agent     with ZS_EVICT_MOVE_FIRST: takes each run out with UFFDIO_MOVE
 *             into its scratch area, which is atomic against the app's
 *             writes, then copies what it moved into the staging slots
 *             (process_vm_readv() on itself) and marks each slot copied
 *             (ZS_STAGING_COPIED); a page the move refuses it vetoes.
 *             Without it: copies each run into its staging slots
 *             (process_vm_readv() on itself: a vanished range is EFAULT,
 *             never SIGSEGV), then drops the copied pages, except those
 *             whose veto byte is set (see ZS_STAGING_VETO): with UFFDIO_MOVE
 *             to its scratch area, vetoing any page the move refuses; or, on
 *             kernels without UFFDIO_MOVE, with MADV_DONTNEED of each run, in
 *             order, each range announced first (ZS_STAGING_DROPS).  Either
 *             way one MADV_DONTNEED of the scratch at the end.
 *   agent  -> ZS_EVICT_DONE {batch, result[] = pages dealt with, or -errno}
 *   daemon    compresses from staging, commits entries, lifts the
 *             write-protection if it set it (which wakes any writer that
 *             waited).
 *
 *   daemon    fills the beacon page with ZS_BEACON_DRAINED, then unregisters.
 *   daemon -> ZS_BYE     the daemon stopped after faulting every page back.
 *
 * Control (zswapctl): a request gets exactly one reply, same seq:
 *   ZS_STATS   -> ZS_STATS_REPLY  {struct zs_stat[]}
 *   ZS_LIST    -> ZS_LIST_REPLY   {struct zs_target_info[]}
 *   ZS_RECLAIM {pid, bytes} -> ZS_RECLAIM_REPLY {struct zs_reclaim_reply}
 *   ZS_LIMIT {pid, bytes; 0 = none} -> ZS_LIMIT_REPLY {struct zs_limit_reply}
 *   ZS_RESTORE {pid} -> ZS_RESTORE_REPLY {struct zs_restore_reply}, once every
 *             evicted page of pid is back (its limit lifted first)
 *   ZS_GROUP {bytes, flags, cgroup} -> ZS_GROUP_REPLY {struct zs_group_reply}:
 *             one budget for the resident anonymous memory of every served
 *             process (ZS_GROUP_ALL) or of those in a memory cgroup
 *   ZS_GROUPS -> ZS_GROUPS_REPLY {struct zs_group_info[]}: every group, with
 *             budgets and followed cgroup limits
 *   ZS_UPGRADE -> ZS_UPGRADE_REPLY {struct zs_upgrade_reply}, root only: the
 *             binary replaced in place (zswapd(8), SIGUSR2); the new binary
 *             answers, once it has taken over
 *   any failure -> ZS_ERROR {err = -errno, msg = text for the operator}
 */
#ifndef ZSWAP_PROTO_H
#define ZSWAP_PROTO_H

#include <stdint.h>

#define ZSWAP_DEFAULT_SOCKET "/run/zswapd/zswapd.sock"
#define ZSWAP_SOCKET_ENV "ZSWAP_SOCKET"

#define ZS_MAGIC 0x5a535750u /* "ZSWP" */
#define ZS_VERSION 5 /* 5: ZS_GROUP; zs_target_info has the stall, refault rate and cgroup */
#define ZS_MSG_MAX 65536 /* whole datagram, header included */

enum zs_type {
	/* shim -> daemon */
	ZS_HELLO = 1,
	ZS_UFFD = 2,
	ZS_AGENT = 3,
	ZS_EVICT_DONE = 4,
	/* daemon -> shim */
	ZS_DEVFD = 16,
	ZS_READY = 17,
	ZS_EVICT = 18,
	ZS_BYE = 19,
	/* zswapctl -> daemon */
	ZS_STATS = 32,
	ZS_LIST = 33,
	ZS_RECLAIM = 34,
	ZS_LIMIT = 35,
	ZS_RESTORE = 36,
	ZS_GROUP = 37,
	ZS_GROUPS = 38,
	ZS_UPGRADE = 39,
	/* daemon -> zswapctl */
	ZS_STATS_REPLY = 48,
	ZS_LIST_REPLY = 49,
	ZS_RECLAIM_REPLY = 50,
	ZS_LIMIT_REPLY = 51,
	ZS_RESTORE_REPLY = 52,
	ZS_GROUP_REPLY = 53,
	ZS_GROUPS_REPLY = 54,
	ZS_UPGRADE_REPLY = 55,
	ZS_ERROR = 63,
};

struct zs_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len; /* payload bytes after this header */
	uint32_t seq; /* echoed in the reply */
};

#define ZS_HELLO_FORKED 0x1u

struct zs_hello {
	uint32_t pid;
	uint32_t flags;
};

struct zs_uffd {
	uint64_t beacon; /* one page the daemon keeps registered and empty */
};

/*
 * What the beacon page holds once the daemon, stopping, has faulted back
 * every page of the process: a forked child that finds its registrations
 * gone tells by it an orderly stop (nothing lost) from a daemon that died
 * holding its pages (the beacon is still empty).
 */
#define ZS_BEACON_DRAINED "zswapd: drained"

/*
 * The staging memfd holds staging_pages pages, then one more page of veto
 * bytes, one per staging slot.  The daemon sets a slot's byte when the
 * agent itself wrote to that page of the batch (a write-protect fault from
 * the agent's tid), or, with an agent that moves pages, when it let an app
 * thread's write through a batch stuck for FAULT_THROTTLE_USEC: the page
 * is unprotected, and the agent must not drop it, since its copy may
 * already be stale.  The daemon clears the bytes before every ZS_EVICT; the
 * agent reads them right before each drop, and again after each move (a
 * vetoed page it moved goes back).
 */
#define ZS_STAGING_VETO(staging, pages) ((volatile uint8_t *)(staging) + (size_t)(pages) * 4096)

/*
 * The last word of the veto page: the daemon sets it while a fault of the
 * app waits on a "mm changing" EAGAIN.  Each MADV_DONTNEED of the agent on
 * registered memory is such a window (a REMOVE event until the agent runs
 * again), and an agent dropping run after run would keep a fault out for
 * the whole batch (docs/benchmarks.md, "The agent's gap").  Before each
 * drop the agent waits while the word is set, for at most
 * ZS_HOLD_MAX_USEC: the daemon only needs a gap to map the page.
 */
#define ZS_STAGING_HOLD(staging, pages) \
	((volatile uint32_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 4096 - 8))
#define ZS_HOLD_MAX_USEC 2000

/*
 * Two words before the hold word: the agent's scratch area, start and
 * length, set once by the agent before its first UFFDIO_MOVE and never
 * changed; zero while it drops with MADV_DONTNEED.  Once it is set, the
 * agent's only REMOVE events are those of its scratch area: every other
 * one is the app's discard.
 */
#define ZS_STAGING_SCRATCH(staging, pages) \
	((volatile uint64_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 4096 - 24))

/*
 * The word before the scratch words: how many times the agent found a page
 * in its scratch slot after UFFDIO_MOVE had reported it not moved, and took
 * it as moved (agent.c, agent_slot_filled).  Only the agent writes it; the
 * daemon adds what is new to the agent_move_misreports counter.
 */
#define ZS_STAGING_MISMOVES(staging, pages) \
	((volatile uint64_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 4096 - 32))

/*
 * Four words before the mismove counter: the fork gate.  In a move-first
 * batch a page the agent moved and has not copied yet is only in its
 * scratch area, which a forked child does not inherit (WIPEONFORK) and
 * which goes with the parent if it exits right after the fork (a
 * daemonizing double fork): the child would have nothing to read there.
 * So fork() waits, in the shim's atfork prepare handler, while the agent is
 * between a move and its copy, and the agent starts no move while a fork
 * is under way.  [0]: app threads in fork() (the shim's handlers);
 * [1]: 1 while the agent moves; [2]: forks begun, ever (the shim);
 * [3]: [2] as zswapd read it when it made the batch, before it checked
 * that the batch's pages are this process's alone.  A page the move finds
 * still marked shared may be unshared only if no fork began since then
 * (and none was under way: ZS_EVICT_NO_UNSHARE): else a child forked during
 * the batch shares it, and gets zswapd's entry for the page too.
 */
#define ZS_STAGING_FORK_GATE(staging, pages) \
	((volatile uint32_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 4096 - 48))
#define ZS_FORK_GATE_MAX_USEC 1000000 /* either side waits at most this long (a stopped thread) */

/*
 * Two words before the fork gate: the pid of the zswapd serving this
 * process, and how many seconds the process waits for a new one if that
 * one dies (0: it does not wait; zswapd does not survive its death).  A
 * zswapd that takes over after a crash (survive_crash) writes its pid
 * here: the shim's watcher, waiting since the old one died, then watches
 * the new one (shim/orphan.c).
 */
#define ZS_STAGING_DAEMON(staging, pages) \
	((volatile uint32_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 4096 - 56))
#define ZS_STAGING_REATTACH_SEC(staging, pages) \
	((volatile uint32_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 4096 - 52))
/*
 * The word before: 1 once the agent marks every page it takes out (it got
 * ZS_READY_MARK): with UFFD_FEATURE_WP_UNPOPULATED, a write-protect of the
 * empty page table entry leaves a marker there, which the app's discard
 * (MADV_DONTNEED, munmap) removes and its mremap and fork carry along.
 * After a crash a page of a batch in flight is put back only where the
 * marker still says the app did not discard it (docs/design.md, hazard 8).
 */
#define ZS_STAGING_AGENT_MARKS(staging, pages) \
	((volatile uint32_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 4096 - 60))

/*
 * A batch has at most ZS_STAGING_MAX_SLOTS slots (evict_batch_pages), so
 * the veto bytes take at most that much of their page; from there on, one
 * 16-bit word per slot: an agent that drops with MADV_DONTNEED writes, in
 * the word of the first slot of each range it is about to drop, the pages
 * in that range, before the madvise.  The daemon clears the words before
 * every ZS_EVICT and takes a REMOVE event for the agent's own only if it
 * matches such a word exactly (clearing it): the app may discard a page of
 * a run in flight too, and a match by address alone would take the app's
 * event for the agent's and the agent's, later, for a discard of the whole
 * range.
 */
#define ZS_STAGING_MAX_SLOTS 1024

/*
 * zswapd registers memory in chunks of this size, aligned (hazard 5 in
 * docs/design.md), so that is where the mappings of a served process split.  An agent that
 * drops with MADV_DONTNEED drops one chunk at a time: its range then lies
 * in one mapping, one REMOVE event.
 */
#define ZS_REGISTER_CHUNK (2ull << 20)
#define ZS_STAGING_DROPS(staging, pages) \
	((volatile uint16_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + ZS_STAGING_MAX_SLOTS))

/*
 * After the drop words, one bit per slot (ZS_STAGING_MAX_SLOTS bits): in a
 * ZS_EVICT_MOVE_FIRST batch, set by the agent once the page it moved into
 * its scratch slot is copied into the staging slot.  Until then the page's
 * only copy is in the scratch, and a daemon that needs it before the
 * commit (the agent's own fault on it, a stuck batch, an abort) reads it
 * there, through /proc/PID/mem: a read of a page that is not there says EIO
 * rather than wait on a fault only the daemon could serve.  The daemon
 * clears the bits before every ZS_EVICT.
 */
#define ZS_STAGING_COPIED(staging, pages) \
	((volatile uint64_t *)((uint8_t *)(staging) + (size_t)(pages) * 4096 + 3 * ZS_STAGING_MAX_SLOTS))
_Static_assert(ZS_STAGING_MAX_SLOTS + 2 * ZS_STAGING_MAX_SLOTS + ZS_STAGING_MAX_SLOTS / 8 <= 4096 - 60,
	       "veto bytes, drop words and copied bits fit before the words at the end of the veto page");

/* ZS_READY flags */
#define ZS_READY_MOVE 0x1u /* take pages out with UFFDIO_MOVE (agent_move = yes) */
#define ZS_READY_FOLLOW 0x2u /* run on the app's CPU (agent_follow_app = yes) */
#define ZS_READY_MARK 0x4u /* mark each page taken out (UFFDIO_WRITEPROTECT): survive_crash */

struct zs_ready {
	uint32_t staging_pages;
	uint32_t page_size;
	uint32_t flags;
	uint32_t pad;
};

struct zs_range {
	uint64_t start;
	uint64_t len;
};

#define ZS_AGENT_MAX_EXCL 8

struct zs_agent {
	uint32_t tid;
	uint32_t nexcl;
	struct zs_range excl[]; /* shim memory the daemon must never evict */
};

struct zs_run {
	uint64_t addr;	       /* page aligned */
	uint32_t npages;       /* >= 1 */
	uint32_t staging_slot; /* first staging page it is copied to */
};

/* ZS_EVICT flags */
#define ZS_EVICT_MOVE_FIRST 0x1u /* not write-protected: move out, then copy from the scratch */
#define ZS_EVICT_NO_UNSHARE 0x2u /* a fork was under way as the batch was made (ZS_STAGING_FORK_GATE) */

struct zs_evict {
	uint64_t batch;
	uint32_t nruns;
	uint32_t flags;
	struct zs_run runs[];
};

/* ZS_EVICT_DONE flags */
#define ZS_DONE_ON_APP_CPU 0x1u /* taken out from the app's CPU (agent_follow_app) */

struct zs_evict_done {
	uint64_t batch;
	uint32_t nruns;
	uint32_t flags;
	int32_t result[]; /* per run: pages copied and dropped, or -errno */
};

struct zs_reclaim {
	uint32_t pid;
	uint32_t pad;
	uint64_t bytes;
};

struct zs_reclaim_reply {
	uint64_t evicted_pages;
	uint64_t compressed_bytes; /* what those pages cost in the pool */
	uint64_t rejected_pages;   /* tried but stayed resident */
	uint64_t scanned_pages;
};

/* Keep the process's resident anonymous memory at or under bytes (0: no limit). */
struct zs_limit {
	uint32_t pid;
	uint32_t pad;
	uint64_t bytes;
};

struct zs_limit_reply {
	uint64_t limit_bytes;	 /* now in force, 0 = none */
	uint64_t resident_bytes; /* RssAnon when the request arrived */
};

struct zs_restore {
	uint32_t pid;
	uint32_t pad;
};

struct zs_restore_reply {
	uint64_t restored_pages; /* faulted back while the restore ran */
	uint64_t left_pages;	 /* still evicted (could not be put back) */
	uint64_t resident_bytes; /* RssAnon at the end */
};

struct zs_upgrade_reply {
	uint64_t pages;	    /* evicted pages handed over, none faulted back */
	uint32_t processes; /* served processes handed over */
	uint32_t msec;	    /* from the image's first byte to the new binary's take-over */
};

#define ZS_CGROUP_LEN 256
#define ZS_TARGET_CGROUP_LEN 96 /* in a list reply: 300 processes fit one datagram */

#define ZS_GROUP_ALL 0x1u   /* every served process; cgroup is "" */
#define ZS_GROUP_QUERY 0x2u /* change nothing: say how the group stands */

/* A group's budget (0: none).  Only root may set one. */
struct zs_group {
	uint64_t bytes;
	uint32_t flags;
	uint32_t pad;
	char cgroup[ZS_CGROUP_LEN]; /* as /proc/PID/cgroup names it; NUL terminated */
};

struct zs_group_reply {
	uint64_t budget_bytes;	 /* the operator's budget now in force, 0 = none */
	uint64_t limit_bytes;	 /* the cgroup's own limit, followed; 0 = none */
	uint64_t resident_bytes; /* the members' RssAnon */
	uint64_t usage_bytes;	 /* the cgroup's usage (0 for ZS_GROUP_ALL) */
	uint32_t members;	 /* served processes in it */
	uint32_t pad;
	/* its members together: */
	uint64_t evicted_bytes;	   /* evicted, as pages */
	uint64_t compressed_bytes; /* what those take in the pool: saved = evicted - compressed */
	uint64_t refaults_per_min; /* pages faulted back over the last minute */
	uint64_t stall_usec_per_min; /* their threads' wait on zswapd's faults, last minute */
};

#define ZS_GROUP_FOLLOWS 0x4u /* in zs_group_info: the cgroup's own limit is followed */

struct zs_group_info {
	char cgroup[ZS_TARGET_CGROUP_LEN]; /* "" for every served process; cut to fit, NUL terminated */
	uint32_t flags;			   /* ZS_GROUP_ALL, ZS_GROUP_FOLLOWS */
	uint32_t pad;
	struct zs_group_reply figures;
};

#define ZS_STAT_NAME 40

struct zs_stat {
	char name[ZS_STAT_NAME]; /* NUL terminated */
	uint64_t value;
};

#define ZS_COMM_LEN 16

struct zs_target_info {
	uint32_t pid;
	uint32_t flags;
	char comm[ZS_COMM_LEN];
	uint64_t resident_pages; /* RssAnon / page size, as /proc says now */
	uint64_t evicted_pages;
	uint64_t compressed_bytes;
	uint64_t stores;
	uint64_t loads;
	uint64_t invalidates;
	uint64_t limit_bytes; /* 0 = none */
	uint64_t hot_pages;   /* refaulted within hot_window_seconds: the hot-set estimate */
	uint64_t stall_usec;  /* its threads waited on faults zswapd served, in all */
	uint64_t stall_usec_per_min; /* the same over the last minute */
	uint64_t refaults_per_min;   /* pages faulted back over the last minute */
	uint32_t proactive_backoff;  /* proactive sweeps come this many times less often */
	uint32_t pad;
	char cgroup[ZS_TARGET_CGROUP_LEN]; /* its memory cgroup, cut to fit, NUL terminated */
};

struct zs_error {
	int32_t err; /* -errno */
	char msg[];  /* NUL terminated */
};

#endif
