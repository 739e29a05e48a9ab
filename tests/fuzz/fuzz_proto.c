// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_proto.c - libFuzzer target for proto_check(), the one gate every
 * datagram passes (common/proto.c).
 *
 * Two kinds of failure are looked for.  Memory errors inside the checker
 * itself: the input is copied into a heap block of exactly its length
 * (malloc's 16-byte alignment satisfies proto_check's 8-byte rule), so
 * ASan catches a read one byte past the datagram, which a ZS_MSG_MAX
 * buffer like the daemon's would hide.  And broken promises: nothing
 * downstream re-validates a message, so for every message proto_check()
 * accepts, the payload is walked the way the daemon, zswapctl and the shim
 * do, reading structs in place, following counts, strlen()ing strings, and
 * the properties they rely on are asserted.  An accepted message that the
 * walk finds inconsistent aborts, which libFuzzer reports as a crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define PAGE UINT64_C(4096)
#define ADDR_LIMIT (UINT64_C(1) << 48)

#define FUZZ_ASSERT(cond)                                                              \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "fuzz_proto: %s:%d: accepted message breaks: %s\n", \
				__FILE__, __LINE__, #cond);                            \
			abort();                                                       \
		}                                                                      \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Everything read is folded in here, so the reads cannot be optimised away. */
static volatile uint64_t sink;

static void walk_agent(const struct zs_agent *a, uint32_t len)
{
	/* conn_agent() copies the ranges into a fixed array of this size */
	struct zs_range excl[ZS_AGENT_MAX_EXCL];

	FUZZ_ASSERT(a->nexcl <= ZS_AGENT_MAX_EXCL);
	FUZZ_ASSERT(len == sizeof(*a) + a->nexcl * sizeof(a->excl[0]));
	memcpy(excl, a->excl, a->nexcl * sizeof(a->excl[0]));
	for (uint32_t i = 0; i < a->nexcl; i++) {
		FUZZ_ASSERT(excl[i].start % PAGE == 0 && excl[i].len % PAGE == 0);
		sink += excl[i].start + excl[i].len;
	}
	sink += a->tid;
}

static void walk_evict(const struct zs_evict *e, uint32_t len)
{
	uint64_t pages = 0;

	FUZZ_ASSERT(e->nruns >= 1);
	FUZZ_ASSERT(len == sizeof(*e) + (uint64_t)e->nruns * sizeof(e->runs[0]));
	for (uint32_t i = 0; i < e->nruns; i++) {
		const struct zs_run *run = &e->runs[i];

		/* what agent_evict() and evict.c compute with, unchecked */
		FUZZ_ASSERT(run->npages >= 1);
		FUZZ_ASSERT(run->addr % PAGE == 0);
		FUZZ_ASSERT(run->addr + (uint64_t)run->npages * PAGE <= ADDR_LIMIT);
		FUZZ_ASSERT(run->addr + (uint64_t)run->npages * PAGE > run->addr);
		pages += run->npages;
		sink += run->staging_slot;
	}
	sink += e->batch + pages;
}

static void walk_evict_done(const struct zs_evict_done *d, uint32_t len)
{
	FUZZ_ASSERT(d->nruns >= 1);
	FUZZ_ASSERT(len == sizeof(*d) + (uint64_t)d->nruns * sizeof(d->result[0]));
	for (uint32_t i = 0; i < d->nruns; i++)
		sink += (uint64_t)(int64_t)d->result[i];
	sink += d->batch;
}

/* zswapctl prints every name and comm with %s */
static void walk_stats_reply(const struct zs_stat *st, uint32_t len)
{
	FUZZ_ASSERT(len % sizeof(*st) == 0);
	for (size_t i = 0; i < len / sizeof(*st); i++) {
		FUZZ_ASSERT(strlen(st[i].name) < ZS_STAT_NAME);
		sink += st[i].value;
	}
}

static void walk_list_reply(const struct zs_target_info *ti, uint32_t len)
{
	FUZZ_ASSERT(len % sizeof(*ti) == 0);
	for (size_t i = 0; i < len / sizeof(*ti); i++) {
		FUZZ_ASSERT(strlen(ti[i].comm) < ZS_COMM_LEN);
		sink += ti[i].pid + ti[i].resident_pages + ti[i].evicted_pages +
			ti[i].compressed_bytes + ti[i].stores + ti[i].loads + ti[i].invalidates +
			ti[i].limit_bytes;
	}
}

static void walk_error(const struct zs_error *e, uint32_t len)
{
	/* the message is the whole rest of the payload, its NUL the last byte */
	FUZZ_ASSERT(len >= sizeof(*e) + 1);
	FUZZ_ASSERT(strlen(e->msg) == len - sizeof(*e) - 1);
	sink += (uint64_t)(int64_t)e->err;
}

/* h passed proto_check(): read it as its receivers do. */
static void walk(const struct zs_hdr *h)
{
	const void *p = proto_payload(h);

	switch (h->type) {
	case ZS_HELLO: {
		const struct zs_hello *hello = p;

		FUZZ_ASSERT(h->len == sizeof(*hello));
		FUZZ_ASSERT((hello->flags & ~ZS_HELLO_FORKED) == 0);
		sink += hello->pid;
		break;
	}
	case ZS_UFFD: {
		const struct zs_uffd *u = p;

		FUZZ_ASSERT(h->len == sizeof(*u));
		FUZZ_ASSERT(u->beacon != 0 && u->beacon % PAGE == 0);
		break;
	}
	case ZS_AGENT:
		walk_agent(p, h->len);
		break;
	case ZS_EVICT_DONE:
		walk_evict_done(p, h->len);
		break;
	case ZS_DEVFD:
	case ZS_BYE:
	case ZS_STATS:
	case ZS_LIST:
		FUZZ_ASSERT(h->len == 0);
		break;
	case ZS_READY: {
		const struct zs_ready *r = p;

		FUZZ_ASSERT(h->len == sizeof(*r));
		sink += r->staging_pages + r->page_size;
		break;
	}
	case ZS_EVICT:
		walk_evict(p, h->len);
		break;
	case ZS_RECLAIM: {
		const struct zs_reclaim *rc = p;

		FUZZ_ASSERT(h->len == sizeof(*rc));
		FUZZ_ASSERT(rc->pid > 0 && rc->bytes > 0);
		break;
	}
	case ZS_LIMIT: {
		const struct zs_limit *l = p;

		FUZZ_ASSERT(h->len == sizeof(*l));
		FUZZ_ASSERT(l->pid > 0);
		sink += l->bytes;
		break;
	}
	case ZS_STATS_REPLY:
		walk_stats_reply(p, h->len);
		break;
	case ZS_LIST_REPLY:
		walk_list_reply(p, h->len);
		break;
	case ZS_RECLAIM_REPLY: {
		const struct zs_reclaim_reply *r = p;

		FUZZ_ASSERT(h->len == sizeof(*r));
		sink += r->evicted_pages + r->compressed_bytes + r->rejected_pages +
			r->scanned_pages;
		break;
	}
	case ZS_LIMIT_REPLY: {
		const struct zs_limit_reply *r = p;

		FUZZ_ASSERT(h->len == sizeof(*r));
		sink += r->limit_bytes + r->resident_bytes;
		break;
	}
	case ZS_ERROR:
		walk_error(p, h->len);
		break;
	default: {
		/*
		 * A type added to proto_check() but not walked here yet: read the
		 * whole payload at least, so ASan still sees its bounds.
		 */
		const unsigned char *b = p;

		for (uint32_t i = 0; i < h->len; i++)
			sink += b[i];
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct zs_hdr *h = NULL;
	uint8_t *buf;
	int r;

	/* malloc(0) may return NULL, which proto_check() takes for bad alignment */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);

	r = proto_check(buf, size, &h);
	FUZZ_ASSERT(r == 0 || r == -EBADMSG || r == -EPROTO);
	if (r == 0) {
		FUZZ_ASSERT(h == (const void *)buf);
		FUZZ_ASSERT(size >= sizeof(*h) && size <= ZS_MSG_MAX);
		FUZZ_ASSERT(h->magic == ZS_MAGIC && h->version == ZS_VERSION);
		FUZZ_ASSERT(h->len == size - sizeof(*h));
		walk(h);
	}

	/* The alignment rule is checked before anything is read. */
	if (size > 1) {
		const struct zs_hdr *h2 = NULL;

		FUZZ_ASSERT(proto_check(buf + 1, size - 1, &h2) == -EINVAL && !h2);
	}
	free(buf);
	return 0;
}
