/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * journal.h - what zswapd holds, written down as it changes, in a memfd
 * that outlives it (systemd's fd store, or zswapd's keeper), so that a
 * zswapd started after this one died serves every evicted page on
 * (recover.c).
 *
 * The pool's bytes and where each object is are in memfds of their own
 * (pool.c); the journal says the rest: which process (a target, by a key
 * that names its descriptors in the store) has which page in which entry,
 * and which eviction batch each has in flight.  Records are appended in
 * the order things happen, each written before the effect it records
 * could be lost: a page's record before its batch may end, an entry's new
 * place before its old one is given back.  A record's type word is
 * stored last, so a zswapd killed mid-record leaves a zero there, where
 * replay stops.
 *
 * Each journal starts with a checkpoint: the whole state, as records.
 * Once appends have made it long enough, a new journal is written the
 * same way into a new memfd (generation + 1), stored, and the old one
 * dropped; replay takes the newest complete one.  Layout, host-endian
 * (the memfd never leaves the machine):
 *   jr_header, padded to a page | records (jr_rec + payload, 8-aligned)
 */
#ifndef ZSWAPD_JOURNAL_H
#define ZSWAPD_JOURNAL_H

#include <stdint.h>

#include "daemon.h"
#include "target_record.h"

#define JOURNAL_MAGIC "zswapdJ\x01"
#define JOURNAL_VERSION 1
#define JOURNAL_FIRST_BYTES (1u << 20)
#define JOURNAL_MAX_BYTES (16ull << 30)
/* A new journal once appends have made it this much and twice its checkpoint. */
#define JOURNAL_MIN_REWRITE (16u << 20)

struct jr_header {
	char magic[8];
	uint32_t version;
	uint32_t page_size;
	uint64_t gen;	      /* the name's number: journal.<gen> */
	uint64_t handles_gen; /* the pool's handle table is handles.<this> */
	uint32_t complete;    /* the checkpoint is written: set last */
	uint32_t evict_batch_pages;
	char compressor[16];
	char recompressor[16]; /* "" if none */
	char swap_file[CFG_PATH_MAX];
	uint64_t swap_file_size; /* 0: no writeback tier */
	char socket[CFG_PATH_MAX];
	uint64_t recoveries; /* crash_recoveries so far */
	uint64_t restarts;   /* restarts so far (zero in a journal from before it was kept) */
};

enum jr_type {
	JR_TARGET = 1,	 /* target_record: a process served, as it is now */
	JR_GONE,	 /* key: it is gone (exited, exec'd, lost) */
	JR_STORE,	 /* jr_store: a page of a target is in an entry */
	JR_ENTRY,	 /* jr_entry_rec: an entry moved (written back, recompressed) */
	JR_UNLINK,	 /* jr_page: a page is not evicted any more (loaded, restored) */
	JR_INVALIDATE,	 /* jr_range: every page of a range went (the app's discard, unmap) */
	JR_REMAP,	 /* jr_remap: the app moved a range */
	JR_FORK,	 /* jr_fork: a child with the parent's pages, shared */
	JR_BATCH,	 /* jr_batch + runs: a batch sent to the agent */
	JR_BATCH_DONE,	 /* jr_batch_end: the agent's answer to it was read */
	JR_BATCH_END,	 /* jr_batch_end: committed, or put back */
	JR_HANDED_OVER,	 /* pid: it exited for a restart, quiet (restart.c): no crash */
	JR_SWAP_WRITE,	 /* jr_swap_write: a write to a swap file block began, or ended */
};

struct jr_rec {
	uint32_t len;  /* payload bytes, not this header */
	uint16_t type; /* jr_type; stored last */
	uint16_t pad;
};

struct jr_entry {
	uint8_t kind, where, recomp, pad;
	uint16_t len;
	uint16_t pad2;
	uint32_t stored_at;
	uint64_t val;  /* SAME: the word; COMP in the pool: its handle */
	uint64_t disk; /* COMP on disk: its byte offset in the swap file */
};


struct jr_store {
	uint64_t key;
	uint64_t pgno;
	uint64_t ekey; /* names the entry in JR_ENTRY and in other targets' JR_STORE */
	struct jr_entry e;
};

struct jr_entry_rec {
	uint64_t ekey;
	struct jr_entry e;
};

struct jr_page {
	uint64_t key;
	uint64_t pgno;
};

struct jr_range {
	uint64_t key;
	uint64_t first, last; /* pages [first, last) */
};

struct jr_remap {
	uint64_t key;
	uint64_t from, to, len; /* bytes */
};

struct jr_fork {
	uint64_t parent, child;
};

struct jr_batch {
	uint64_t key;
	uint64_t id;
	uint32_t nruns;
	uint32_t flags; /* ZS_EVICT_* */
	uint32_t nforks;
	uint32_t pad;
	uint64_t forks[BATCH_MAX_FORKS]; /* children forked while it was in flight */
	/* then nruns struct batch_run */
};

struct jr_batch_end {
	uint64_t key;
	uint64_t id;
};

struct jr_swap_write {
	uint64_t block;
	uint64_t done; /* 0: submitted; 1: completed, whatever its result */
};

/* The names of a target's descriptors in the store: t<key>.<what>. */
enum journal_fd {
	JOURNAL_FD_UFFD,
	JOURNAL_FD_PIDFD,
	JOURNAL_FD_STAGING,
	JOURNAL_FD_CONN,
	JOURNAL_FD_N,
};
void journal_fd_name(uint64_t key, enum journal_fd what, char *buf, size_t len);

/* Opens the first journal: a checkpoint of what the daemon holds now. */
int journal_open(struct daemon *d, uint64_t gen);
void journal_close(struct daemon *d);
/* A new journal if appends made this one long enough (once a loop turn). */
void journal_turn(struct daemon *d);
uint64_t journal_bytes(const struct daemon *d);

/* A target's descriptors into the store, and its state into the journal. */
void journal_target(struct target *t);
/* Its descriptors into the store and journaled from now on, no record: a checkpoint follows. */
int journal_keep_target(struct target *t);
/* Its descriptors out of the store, no record: the journal goes too (persist_close). */
void journal_forget_target(struct target *t);
void journal_conn_gone(struct target *t);
void journal_gone(struct target *t);
void journal_store(struct target *t, uint64_t addr, const struct entry *e);
void journal_entry(struct daemon *d, const struct entry *e);
void journal_unlink(struct target *t, uint64_t addr);
void journal_invalidate(struct target *t, uint64_t start, uint64_t end);
void journal_remap(struct target *t, uint64_t from, uint64_t to, uint64_t len);
void journal_fork(struct target *parent, struct target *child);
/*
 * A FORK event as it is read, before anything else of that read is dealt
 * with: the child's uffd, which the dead zswapd's descriptor table would
 * take with it, into the store, and the fork into the journal, under a key
 * kept in msg for journal_fork_claim() to give the child once it is made.
 */
void journal_fork_early(struct target *parent, struct uffd_msg *msg);
void journal_fork_claim(struct target *child, const struct uffd_msg *msg);
void journal_batch(struct target *t, const struct batch *b, uint32_t flags);
void journal_batch_done(struct target *t, const struct batch *b);
void journal_batch_end(struct target *t, const struct batch *b);
/* The last record of a zswapd exiting for a restart. */
void journal_handed_over(struct daemon *d);
/*
 * A write to swap file block `block` is submitted (done false: before it
 * is), or completed.  A write of a zswapd that died may land after the next
 * zswapd took over; that one keeps the block unused meanwhile (wb_hold()).
 */
void journal_swap_write(struct daemon *d, uint64_t block, bool done);

#endif
