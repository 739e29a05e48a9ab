/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cfg.h - zswapd.conf: "key = value" lines, '#' comments, blank lines.
 *
 * Every key lives in one table in cfg.c {name, parser, field, default};
 * conf/zswapd.conf lists them all, commented out at their defaults.  An
 * unknown key, a bad value or a bad size is an error naming file:line, and
 * leaves the caller's struct untouched (parsing goes into a copy).
 */
#ifndef ZSWAPD_CFG_H
#define ZSWAPD_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comp.h"

#define CFG_PATH_MAX 108 /* sizeof(sun_path) */

enum cfg_auto_bool {
	CFG_NO = 0,
	CFG_YES = 1,
	CFG_AUTO = 2,
};

#define CFG_RECOMP_NONE (-1)

/* The pool and what goes into it. */
struct cfg_pool {
	enum comp_alg compressor;	   /* lzo, lz4, zstd */
	int recompressor;		   /* enum comp_alg, or CFG_RECOMP_NONE */
	unsigned recompress_seconds;	   /* 1..86400: in the pool this long, then recompressed */
	unsigned max_pool_percent;	   /* of MemTotal, 0..100 */
	uint64_t max_pool_bytes;	   /* bytes, 0 = use max_pool_percent */
	unsigned accept_threshold_percent; /* of the pool limit, 0..100 */
	unsigned max_compressed_percent;   /* 1..100: store only pages compressing to this much of a page */
	enum cfg_auto_bool store_incompressible; /* pages over max_compressed_percent: to the pool as they are */
};

/* The writeback tier. */
struct cfg_swap {
	char swap_file[CFG_PATH_MAX]; /* "" = none */
	uint64_t swap_file_size;      /* bytes, 0 = no writeback tier */
	unsigned readahead_pages;     /* 0..64: on sequential swap-ins, fetch this many more */
};

/* How pages leave a process: the agent's batches. */
struct cfg_agent {
	unsigned evict_batch_pages; /* 1..1024 pages per eviction round trip */
	bool agent_move;	    /* agents take pages out with UFFDIO_MOVE */
	bool agent_follow_app;	    /* a single-threaded app's agent runs on its CPU */
	bool agent_move_first;	    /* moving agents move, then copy: no write-protect */
};

/* How faults are waited for and served. */
struct cfg_fault {
	unsigned fault_spin_usec;    /* 0..10000: poll this long for the next fault before sleeping */
	unsigned fault_idle_poll_ms; /* 0..1000: idle CPUs poll this long after a burst of faults */
	unsigned prefetch_pages;     /* 0..64: the longest window of pages installed after a fault */
};

/* What zswapd does unasked: cold pages, limits, pressure. */
struct cfg_policy {
	unsigned hot_window_seconds;	     /* 1..3600: a refaulted page is left alone this long */
	unsigned idle_evict_seconds;	     /* 0..86400: the cold age of proactive eviction; 0 = off */
	unsigned proactive_refault_permille; /* 0..1000: refaults a minute per 1000 pages before backing off */
	unsigned proactive_stall_permille;   /* 0..1000: stall per second before backing off */
	bool follow_cgroup_limits;	     /* keep served processes' cgroups under their limits */
	unsigned cgroup_headroom_percent;    /* 1..50: how far under */
	unsigned pressure_stall_ms;	     /* 0..2000: PSI triggers' stall in 2 s; 0 = none */
	unsigned default_limit_percent;	     /* 0..100: resident share of anon memory for targets without a limit; 0 = none */
};

/* Surviving zswapd's own death. */
struct cfg_survive {
	bool survive_crash;		   /* keep a journal and descriptors in the fd store (journal.h) */
	unsigned reattach_timeout_seconds; /* 1..86400: how long a process waits for a new zswapd */
};

/* What one user (any but root) may take of zswapd. */
struct cfg_users {
	unsigned max_connections_per_user;  /* 1..65536: connections not yet a served process */
	unsigned max_processes_per_user;    /* 1..1048576: processes served at once */
	unsigned max_pool_percent_per_user; /* 1..100: of the pool limit, their evicted pages */
};

/* Each key's field has the key's name, in the group conf/zswapd.conf puts it. */
struct cfg {
	char socket[CFG_PATH_MAX]; /* control socket path */
	unsigned socket_mode;	   /* 0..0777: of the socket zswapd creates (not systemd's) */
	char socket_group[64];	   /* its group; one that does not exist: root's, said once */
	int log_level;		   /* LOG_LVL_* */
	int nice;		   /* -20..19: the daemon's scheduling priority */
	bool mlock;		   /* lock the daemon's memory (pool included) */
	struct cfg_pool pool;
	struct cfg_swap swap;
	struct cfg_agent agent;
	struct cfg_fault fault;
	struct cfg_policy policy;
	struct cfg_survive survive;
	struct cfg_users users;
};

void cfg_defaults(struct cfg *c);

/*
 * Parses text (the contents of a file called name) over *c.  On error
 * returns -EINVAL (or -ENAMETOOLONG, -ERANGE), writes "name:line: what is
 * wrong" into err, and leaves *c as it was.
 */
int cfg_parse_text(struct cfg *c, const char *text, const char *name, char *err, size_t errlen);
/* Reads path and parses it as above; -errno from open/read with the reason in err. */
int cfg_parse_file(struct cfg *c, const char *path, char *err, size_t errlen);

/* The byte limit of the pool given MemTotal (bytes). */
uint64_t cfg_pool_limit(const struct cfg *c, uint64_t mem_total);

#endif
