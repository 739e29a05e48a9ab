/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * target_record.h - what outlives a zswapd of one served process, beside
 * its descriptors and its pages: one record, written into the journal
 * (JR_TARGET) and into an upgrade's image alike, filled from a target and
 * applied to one in this file alone.
 *
 * Host-endian (neither the journal nor the image leaves the machine).
 * Fields are only ever added at the end: a record read shorter than this
 * struct, written by an older zswapd, reads the missing tail as zeros
 * (TARGET_RECORD_V1_SIZE is the oldest length).
 */
#ifndef ZSWAPD_TARGET_RECORD_H
#define ZSWAPD_TARGET_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

struct target_record {
	uint64_t key; /* the journal's name for it; 0 in an image */
	int32_t pid;  /* 0: a forked child not named yet */
	uint32_t uid;
	char comm[ZS_COMM_LEN];
	uint64_t features, beacon;
	uint32_t staging_pages;
	int32_t agent_tid;
	uint32_t nexcl;
	uint8_t forked, limit_set, has_conn;
	uint8_t ready_unsure; /* ZS_READY maybe not sent yet: the next zswapd sends it */
	struct zs_range excl[ZS_AGENT_MAX_EXCL];
	uint64_t limit_bytes, scan_cursor, started_usec;
	uint64_t stores, loads, invalidates, stored_bytes, refused;
	/* The first journals end here. */
	uint8_t unclaimed, pad[7];
	uint64_t mismoves_seen, stall_usec;
};

#define TARGET_RECORD_V1_SIZE offsetof(struct target_record, unclaimed)

void target_record_fill(const struct target *t, struct target_record *rec);
/*
 * What the record says of the process, onto a target made from its
 * descriptors (target_take_over(): pid, features and staging are given
 * there).  The journal's own fields (key, ready_unsure) are the caller's.
 */
void target_record_apply(struct target *t, const struct target_record *rec);
/* The record of a child forked from parent's, as UFFD_EVENT_FORK makes it. */
void target_record_fork(const struct target_record *parent, uint64_t child_key,
			struct target_record *child);
/* Copies a record len bytes long (an older zswapd's may be shorter) into rec; -EPROTO if it cannot be one. */
int target_record_read(const void *p, size_t len, struct target_record *rec);

#endif
