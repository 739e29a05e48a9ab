/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * handover.h - the records of the handover image (handover_save.c writes
 * it, handover_load.c reads it).  Layout, host-endian, in this order (the
 * image never leaves the machine):
 *   ho_header | ho_stat x nstats | ho_group x ngroups
 *   | ho_entry x nentries (a RAW entry followed by its page)
 *   | ho_target, its record and ho_page x npages (x ntargets) | ho_conn x nconns
 * An entry's id is its place in the entries; the LRU order is theirs.
 * The pool's bytes are not in it: pool_fd names the memfd they are in.
 *
 * Version 1, which zswapd wrote before its pool lived in a memfd, is still
 * read: its header ends before pool_fd, its entries name an object by its
 * handle alone, and after them come the pool's objects, ho_obj + bytes
 * each, ending with handle 0.
 */
#ifndef ZSWAPD_HANDOVER_H
#define ZSWAPD_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "target_record.h"

#define HANDOVER_MAGIC "zswapdH\x01"
#define HANDOVER_BUF (1u << 20)
#define HANDOVER_PUNCH (4u << 20) /* the reader gives back what it read, this much at a time */

struct ho_header {
	char magic[8];
	uint32_t version;
	uint32_t page_size;
	char compressor[16];
	char recompressor[16]; /* "" if none */
	uint32_t evict_batch_pages;
	int32_t listen_fd;
	uint32_t socket_activated;
	int32_t swap_fd; /* -1: no writeback tier */
	uint64_t swap_file_size;
	char swap_file[CFG_PATH_MAX];
	char socket[CFG_PATH_MAX];
	uint64_t next_batch_id;
	uint64_t saved_usec; /* CLOCK_MONOTONIC, which the exec keeps */
	uint32_t nstats, ngroups, ntargets, nconns;
	uint64_t nentries;
	uint64_t max_handle;
	/* Version 1 ends here. */
	int32_t pool_fd; /* the arena of the pool's slabs */
	uint32_t pad;
};

#define HO_HEADER_V1_SIZE offsetof(struct ho_header, pool_fd)

/* Version 1: one object of the pool, its bytes following. */
struct ho_obj {
	uint64_t handle;
	uint32_t len, pad;
};

struct ho_stat {
	char key[48];
	uint64_t value;
};

struct ho_group {
	char cgroup[CGROUP_PATH_MAX];
	uint64_t budget;
};

struct ho_entry {
	uint8_t kind, where, recomp, pad;
	uint16_t len;
	uint16_t slot;	/* COMP in the pool: its slot in the slab (not in version 1) */
	uint32_t stored_at;
	uint32_t slab;	/* and its slab, the arena's chunk (not in version 1) */
	uint64_t val;	/* SAME: the word; COMP in the pool: its pool handle */
	uint64_t disk;	/* COMP on disk: its byte offset in the swap file */
};

/*
 * A process (version 3 on): its descriptors, how long its record is (an
 * older zswapd's may be shorter, target_record.h), the record, then its
 * pages, ho_page x npages.
 */
struct ho_target {
	int32_t uffd, pidfd, staging_fd;
	uint32_t rec_len;
	uint64_t npages;
	/* then rec_len bytes of struct target_record */
};

/* Versions 1 and 2 wrote a process out field by field (read, never written). */
struct ho_target_v2 {
	int32_t pid;
	uint32_t uid;
	char comm[ZS_COMM_LEN];
	int32_t uffd, pidfd, staging_fd;
	uint32_t staging_pages;
	int32_t agent_tid;
	uint32_t nexcl;
	uint64_t features, beacon;
	struct zs_range excl[ZS_AGENT_MAX_EXCL];
	uint8_t forked, unclaimed, limit_set, pad[5];
	uint64_t mismoves_seen, scan_cursor, limit_bytes;
	uint64_t stores, loads, invalidates, stall_usec, started_usec, stored_bytes, refused;
	uint64_t npages;
};

struct ho_page {
	uint64_t pgno;
	uint64_t id;
};

struct ho_conn {
	int32_t fd;
	uint32_t kind;
	uint32_t hello_flags;
	int32_t target; /* its index among the targets, -1 if none */
	uint32_t upgrade_waiting; /* a zswapctl upgrade, answered once taken over */
	uint32_t upgrade_seq;
};

#endif
