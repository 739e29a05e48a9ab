/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * journal_read.h - the journal (journal.h) read back into a model of what the
 * zswapd that wrote it held: its targets, each with an index of page ->
 * entry, and its entries, each with the count of pages that name it.
 * recover.c builds the daemon's objects from it.  Nothing here touches a
 * process or the pool: a record that does not add up is -EPROTO.
 */
#ifndef ZSWAPD_JOURNAL_READ_H
#define ZSWAPD_JOURNAL_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"

/* A key -> pointer table, open addressing; keys are never 0. */
struct rmap {
	uint64_t *keys;
	void **vals;
	size_t cap, n;
};

void *rmap_get(const struct rmap *m, uint64_t key);

struct rentry {
	struct jr_entry e;
	uint32_t links; /* pages that name it */
	struct entry *built;
};

struct rtarget {
	struct target_record rec;
	bool gone;
	struct idx *idx;	/* pgno -> struct rentry */
	struct jr_batch *batch; /* in flight, runs after it; NULL if none */
	bool batch_done;
	struct target *built;
};

struct journal_replay {
	struct rmap targets;	/* key -> rtarget */
	struct rmap entries;	/* ekey -> rentry */
	struct rtarget **order; /* the targets, as they came */
	size_t ntargets, cap;
	uint64_t max_key;
	bool handed_over; /* the zswapd that wrote it exited for a restart */
	uint64_t *writing; /* swap file blocks with a write submitted, not completed */
	size_t nwriting, writing_cap;
};

/* A journal memfd mapped to be read. */
struct journal_in {
	int fd;
	const uint8_t *base;
	uint64_t size;
	const struct jr_header *h;
	char name[64];
};

/* Maps it; -EPROTO unless it is a complete journal of this version. */
int journal_in_open(int fd, struct journal_in *in);
void journal_in_close(struct journal_in *in);
/* Every record, up to the first not written whole. */
int journal_replay(const struct journal_in *in, struct journal_replay *rp);
void journal_replay_free(struct journal_replay *rp);

#endif
