// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_journal_read - the journal read back (daemon/persist/journal_read.c): what a zswapd
 * started after another takes over is the model these records make.  Each
 * test writes a journal by hand into a memfd, as journal.c lays it out.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_run.h"
#include "idx.h"
#include "persist/journal_read.h"

#define JBYTES (64u << 10)

struct jbuf {
	int fd;
	uint8_t *base;
	uint64_t tail;
};

static void jbuf_open(struct jbuf *j, int complete)
{
	struct jr_header *h;

	j->fd = memfd_create("check-journal", MFD_CLOEXEC);
	ck_assert_int_ge(j->fd, 0);
	ck_assert_int_eq(ftruncate(j->fd, JBYTES), 0);
	j->base = mmap(NULL, JBYTES, PROT_READ | PROT_WRITE, MAP_SHARED, j->fd, 0);
	ck_assert_ptr_ne(j->base, MAP_FAILED);
	h = (struct jr_header *)j->base;
	memcpy(h->magic, JOURNAL_MAGIC, sizeof(h->magic));
	h->version = JOURNAL_VERSION;
	h->page_size = ZS_PAGE_SIZE;
	h->complete = complete;
	j->tail = ZS_PAGE_SIZE;
}

/* One record, its type word last, as journal_put() writes it. */
static void jput(struct jbuf *j, uint16_t type, const void *p, uint32_t len)
{
	struct jr_rec *rec = (struct jr_rec *)(j->base + j->tail);

	rec->len = len;
	memcpy(rec + 1, p, len);
	rec->type = type;
	j->tail += sizeof(*rec) + ((len + 7u) & ~7u);
}

static int jreplay(struct jbuf *j, struct journal_replay *rp)
{
	struct journal_in in;
	int r;

	memset(rp, 0, sizeof(*rp));
	r = journal_in_open(j->fd, &in);
	if (r == 0) {
		r = journal_replay(&in, rp);
		journal_in_close(&in);
	}
	munmap(j->base, JBYTES);
	close(j->fd);
	return r;
}

static void jtarget(struct jbuf *j, uint64_t key, int pid)
{
	struct target_record rec = { .key = key, .pid = pid };

	jput(j, JR_TARGET, &rec, sizeof(rec));
}

static void jstore(struct jbuf *j, uint64_t key, uint64_t pgno, uint64_t ekey)
{
	struct jr_store js = { .key = key, .pgno = pgno, .ekey = ekey };

	jput(j, JR_STORE, &js, sizeof(js));
}

static void jswap(struct jbuf *j, uint64_t block, uint64_t done)
{
	struct jr_swap_write jw = { block, done };

	jput(j, JR_SWAP_WRITE, &jw, sizeof(jw));
}

static bool writing_has(const struct journal_replay *rp, uint64_t block)
{
	for (size_t i = 0; i < rp->nwriting; i++)
		if (rp->writing[i] == block)
			return true;
	return false;
}

START_TEST(test_pages_and_entries)
{
	struct jbuf j;
	struct journal_replay rp;
	struct jr_page unlink = { 1, 10 };
	struct rtarget *a, *b;
	struct rentry *shared;

	jbuf_open(&j, 1);
	jtarget(&j, 1, 100);
	jtarget(&j, 2, 200);
	jstore(&j, 1, 10, 0xa0);
	jstore(&j, 1, 11, 0xb0);
	jstore(&j, 2, 11, 0xb0); /* a forked child's page, the same entry */
	jput(&j, JR_UNLINK, &unlink, sizeof(unlink));
	ck_assert_int_eq(jreplay(&j, &rp), 0);
	a = rmap_get(&rp.targets, 1);
	b = rmap_get(&rp.targets, 2);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(a->rec.pid, 100);
	ck_assert_uint_eq(idx_count(a->idx), 1);
	ck_assert_uint_eq(idx_count(b->idx), 1);
	shared = rmap_get(&rp.entries, 0xb0);
	ck_assert_ptr_nonnull(shared);
	ck_assert_uint_eq(shared->links, 2);
	ck_assert_uint_eq(((struct rentry *)rmap_get(&rp.entries, 0xa0))->links, 0);
	ck_assert(!rp.handed_over);
	journal_replay_free(&rp);
}
END_TEST

/*
 * A process's record as the first journals wrote it, shorter than today's:
 * read, what it lacks as zeros; one shorter than that is refused.
 */
START_TEST(test_older_target_record)
{
	struct target_record rec = { .key = 3, .pid = 300, .stores = 7 };
	struct jbuf j;
	struct journal_replay rp;
	struct rtarget *t;

	memset(&rec.unclaimed, 0xff, sizeof(rec) - TARGET_RECORD_V1_SIZE);
	jbuf_open(&j, 1);
	jput(&j, JR_TARGET, &rec, TARGET_RECORD_V1_SIZE);
	ck_assert_int_eq(jreplay(&j, &rp), 0);
	t = rmap_get(&rp.targets, 3);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->rec.pid, 300);
	ck_assert_uint_eq(t->rec.stores, 7);
	ck_assert_uint_eq(t->rec.unclaimed, 0);
	ck_assert_uint_eq(t->rec.mismoves_seen, 0);
	ck_assert_uint_eq(t->rec.stall_usec, 0);
	journal_replay_free(&rp);

	jbuf_open(&j, 1);
	jput(&j, JR_TARGET, &rec, TARGET_RECORD_V1_SIZE - 8);
	ck_assert_int_eq(jreplay(&j, &rp), -EPROTO);
	journal_replay_free(&rp);
}
END_TEST

/* What a zswapd that died was writing to the swap file: submitted, not completed. */
START_TEST(test_swap_writes_in_flight)
{
	struct jbuf j;
	struct journal_replay rp;

	jbuf_open(&j, 1);
	jswap(&j, 5, 0);
	jswap(&j, 9, 0);
	jswap(&j, 12, 0);
	jswap(&j, 9, 1);
	jswap(&j, 77, 1); /* its start was before this journal's checkpoint */
	jswap(&j, 5, 0);  /* named again (a checkpoint, then an append) */
	ck_assert_int_eq(jreplay(&j, &rp), 0);
	ck_assert_uint_eq(rp.nwriting, 2);
	ck_assert(writing_has(&rp, 5));
	ck_assert(writing_has(&rp, 12));
	journal_replay_free(&rp);
}
END_TEST

START_TEST(test_many_swap_writes)
{
	struct jbuf j;
	struct journal_replay rp;

	jbuf_open(&j, 1);
	for (uint64_t b = 0; b < 100; b++)
		jswap(&j, b, 0);
	for (uint64_t b = 0; b < 100; b += 2)
		jswap(&j, b, 1);
	ck_assert_int_eq(jreplay(&j, &rp), 0);
	ck_assert_uint_eq(rp.nwriting, 50);
	for (uint64_t b = 0; b < 100; b++)
		ck_assert(writing_has(&rp, b) == (b % 2 == 1));
	journal_replay_free(&rp);
}
END_TEST

START_TEST(test_handed_over)
{
	struct jbuf j;
	struct journal_replay rp;
	uint64_t pid = 1234;

	jbuf_open(&j, 1);
	jtarget(&j, 1, 100);
	jput(&j, JR_HANDED_OVER, &pid, sizeof(pid));
	ck_assert_int_eq(jreplay(&j, &rp), 0);
	ck_assert(rp.handed_over);
	ck_assert_uint_eq(rp.ntargets, 1);
	journal_replay_free(&rp);
}
END_TEST

/* A record whose writer died before its type word: the end, whatever follows. */
START_TEST(test_torn_record_ends_it)
{
	struct jbuf j;
	struct journal_replay rp;
	uint64_t at;

	jbuf_open(&j, 1);
	jswap(&j, 3, 0);
	at = j.tail;
	jswap(&j, 4, 0);
	((struct jr_rec *)(j.base + at))->type = 0;
	ck_assert_int_eq(jreplay(&j, &rp), 0);
	ck_assert_uint_eq(rp.nwriting, 1);
	ck_assert(writing_has(&rp, 3));
	journal_replay_free(&rp);
}
END_TEST

START_TEST(test_refused)
{
	struct jbuf j;
	struct journal_replay rp;
	uint64_t word = 1;

	/* A record of the wrong length for its type. */
	jbuf_open(&j, 1);
	jput(&j, JR_SWAP_WRITE, &word, sizeof(word));
	ck_assert_int_eq(jreplay(&j, &rp), -EPROTO);
	journal_replay_free(&rp);
	/* A type no zswapd writes. */
	jbuf_open(&j, 1);
	jput(&j, 999, &word, sizeof(word));
	ck_assert_int_eq(jreplay(&j, &rp), -EPROTO);
	journal_replay_free(&rp);
	/* A journal whose checkpoint was not finished. */
	jbuf_open(&j, 0);
	ck_assert_int_eq(jreplay(&j, &rp), -EPROTO);
	journal_replay_free(&rp);
}
END_TEST

static Suite *journal_read_suite(void)
{
	Suite *s = suite_create("journal_read");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_pages_and_entries);
	tcase_add_test(tc, test_older_target_record);
	tcase_add_test(tc, test_swap_writes_in_flight);
	tcase_add_test(tc, test_many_swap_writes);
	tcase_add_test(tc, test_handed_over);
	tcase_add_test(tc, test_torn_record_ends_it);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(journal_read_suite());

	return check_run(sr);
}
