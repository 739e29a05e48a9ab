/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * shim.h - state shared by the shim's registration (shim.c), its agent
 * thread (agent.c), its watcher (orphan.c) and their helpers (sys.c).
 * Everything here is hidden: libzswap.so exports nothing.
 */
#ifndef ZSWAP_SHIM_H
#define ZSWAP_SHIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHIM_PAGE 4096u
/* The agent's own memory: its stack, then one message buffer.  Mapped apart
 * and excluded from eviction, so the agent never faults on a page it would
 * have to ask itself for (hazard 7, docs/design.md). */
#define SHIM_AGENT_STACK (1024u * 1024) /* virtual: only what it touches is resident; ThreadSanitizer wants 900 KiB */
#define SHIM_WATCH_STACK_AT (SHIM_AGENT_STACK + 2u * 65536u) /* after receive and reply */
#define SHIM_WATCH_STACK (1024u * 1024) /* the watcher's (orphan.c); virtual too */
#define SHIM_AGENT_AREA (SHIM_WATCH_STACK_AT + SHIM_WATCH_STACK)

/* What the agent last knew of zswapd (shim.agent_state), for the watcher. */
enum {
	SHIM_AGENT_RUNNING,
	SHIM_AGENT_BYE,	 /* zswapd stopped and returned every page */
	SHIM_AGENT_GONE, /* the connection closed without ZS_BYE */
};

struct shim {
	int sock;	   /* connection to zswapd, close-on-exec */
	int uffd;	   /* our copy of our uffd: keeps registrations alive (hazard 2, docs/design.md) */
	uint8_t *beacon;   /* one page zswapd keeps registered and empty */
	uint8_t *staging;  /* shared with zswapd: where evicted pages are copied */
	size_t staging_len;
	uint8_t *area;	   /* agent stack + message buffer */
	bool debug;	   /* ZSWAP_DEBUG: say what happens on stderr */
	bool move;	   /* zswapd asked for UFFDIO_MOVE (ZS_READY_MOVE) */
	bool follow;	   /* run the agent on the app's CPU (ZS_READY_FOLLOW) */
	bool mark;	   /* mark each page taken out (ZS_READY_MARK) */
	int watch_fd;	   /* the watcher's pidfd of zswapd, its own; -1: no watcher */
	int watch_pid;	   /* zswapd's pid, that pidfd's */
	bool registering;  /* a registration (ours or a forked child's) is under way, atomic */
	uint32_t agent_state; /* SHIM_AGENT_*, atomic */
};

extern struct shim shim;

/* sys.c */
__attribute__((format(printf, 1, 2))) void shim_log(const char *fmt, ...);
/* A detached thread on the given stack (in the agent's area), every signal blocked. */
int shim_thread_start(void *stack, size_t size, void *(*fn)(void *));
/* Monotonic microseconds, by system call (the agent calls nothing of libc's). */
uint64_t shim_now_usec(void);
/* Waits while *word is set, for ZS_FORK_GATE_MAX_USEC from start at most; false if it gave up. */
bool shim_gate_wait(const volatile uint32_t *word, uint64_t start);

/* agent.c */
int shim_agent_start(void);

/* orphan.c */
/* The thread that notices zswapd's death; -ENOENT without a pidfd of it. */
int shim_watch_start(void);
/*
 * Ends a shim thread once zswapd died, without returning: libc's thread
 * exit frees the thread's state from the app's heap, where a page may be
 * gone with zswapd.
 */
__attribute__((noreturn)) void shim_park(void);
/*
 * Says text (len bytes) with addr on stderr and aborts the process, by raw
 * system calls only: for when pages of the app, libc's included, may be lost.
 */
__attribute__((noreturn)) void shim_die(const char *text, size_t len, uint64_t addr);
/* Settles faults and events once zswapd is dead, for as long as the process lives. */
void shim_orphan_serve(void);

#endif
