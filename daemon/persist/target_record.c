// SPDX-License-Identifier: GPL-2.0-only
/*
 * target_record.c - a served process as the journal and the upgrade image
 * keep it (target_record.h): the one place its fields are listed.
 */
#include <errno.h>
#include <string.h>

#include "target_record.h"

void target_record_fill(const struct target *t, struct target_record *rec)
{
	*rec = (struct target_record){
		.key = t->persist.key, .pid = t->pid, .uid = t->uid, .features = t->features,
		.beacon = t->agent.beacon, .staging_pages = t->agent.staging_pages,
		.agent_tid = t->agent.tid, .nexcl = t->agent.nexcl, .forked = t->forked,
		.limit_set = t->limit.set, .has_conn = t->conn != NULL,
		.ready_unsure = t->persist.ready_unsure, .limit_bytes = t->limit.bytes,
		.scan_cursor = t->evict.scan_cursor, .started_usec = t->counts.started_usec,
		.stores = t->counts.stores, .loads = t->counts.loads,
		.invalidates = t->counts.invalidates, .stored_bytes = t->counts.stored_bytes,
		.refused = t->counts.refused, .unclaimed = t->unclaimed,
		.mismoves_seen = t->agent.mismoves_seen, .stall_usec = t->counts.stall_usec,
	};
	memcpy(rec->comm, t->comm, sizeof(rec->comm));
	memcpy(rec->excl, t->agent.excl, sizeof(rec->excl));
}

void target_record_apply(struct target *t, const struct target_record *rec)
{
	t->uid = rec->uid;
	memcpy(t->comm, rec->comm, sizeof(t->comm));
	t->comm[sizeof(t->comm) - 1] = '\0';
	t->agent.tid = rec->agent_tid;
	t->agent.beacon = rec->beacon;
	t->agent.nexcl = rec->nexcl;
	memcpy(t->agent.excl, rec->excl, sizeof(t->agent.excl));
	t->agent.mismoves_seen = rec->mismoves_seen;
	t->forked = rec->forked;
	t->unclaimed = rec->unclaimed;
	t->limit.set = rec->limit_set;
	t->limit.bytes = rec->limit_bytes;
	t->evict.scan_cursor = rec->scan_cursor;
	t->counts.started_usec = rec->started_usec;
	t->counts.stores = rec->stores;
	t->counts.loads = rec->loads;
	t->counts.invalidates = rec->invalidates;
	t->counts.stored_bytes = rec->stored_bytes;
	t->counts.refused = rec->refused;
	t->counts.stall_usec = rec->stall_usec;
}

/* The child shares the parent's pages and settings; what it did itself starts at zero. */
void target_record_fork(const struct target_record *parent, uint64_t child_key,
			struct target_record *child)
{
	*child = (struct target_record){
		.key = child_key, .uid = parent->uid, .features = parent->features,
		.beacon = parent->beacon, .nexcl = parent->nexcl, .forked = 1,
		.limit_set = parent->limit_set, .ready_unsure = parent->ready_unsure,
		.limit_bytes = parent->limit_bytes, .scan_cursor = parent->scan_cursor,
		.started_usec = parent->started_usec,
	};
	memcpy(child->comm, parent->comm, sizeof(child->comm));
	memcpy(child->excl, parent->excl, sizeof(child->excl));
}

int target_record_read(const void *p, size_t len, struct target_record *rec)
{
	if (len < TARGET_RECORD_V1_SIZE || len > sizeof(*rec))
		return -EPROTO;
	memset(rec, 0, sizeof(*rec));
	memcpy(rec, p, len);
	return 0;
}
