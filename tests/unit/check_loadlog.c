// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_loadlog - the FIFO of loads that orders the second pass of eviction
 * (daemon/loadlog.c).
 */
#include <check.h>
#include <stdlib.h>

#include "check_run.h"
#include "loadlog.h"

static void push(struct loadlog *l, uint64_t pgno, uint64_t when, uint32_t chances)
{
	struct loadlog_entry e = { .pgno = pgno, .when_ms = when, .chances = chances };

	ck_assert_int_eq(loadlog_push(l, &e), 0);
}

START_TEST(test_oldest_first)
{
	struct loadlog l = { 0 };
	struct loadlog_entry e;

	ck_assert(!loadlog_pop(&l, &e));
	push(&l, 7, 100, 0);
	push(&l, 3, 101, 1);
	push(&l, 9, 102, 0);
	ck_assert(loadlog_pop(&l, &e));
	ck_assert_uint_eq(e.pgno, 7);
	ck_assert_uint_eq(e.when_ms, 100);
	ck_assert(loadlog_pop(&l, &e));
	ck_assert_uint_eq(e.pgno, 3);
	ck_assert_uint_eq(e.chances, 1);
	push(&l, 3, 101, 0); /* a second chance goes to the tail */
	ck_assert(loadlog_pop(&l, &e));
	ck_assert_uint_eq(e.pgno, 9);
	ck_assert(loadlog_pop(&l, &e));
	ck_assert_uint_eq(e.pgno, 3);
	ck_assert(!loadlog_pop(&l, &e));
	loadlog_free(&l);
}
END_TEST

/* Order holds across blocks, taken from while they fill. */
START_TEST(test_grows_in_order)
{
	struct loadlog l = { 0 };
	struct loadlog_entry e;
	uint64_t next_out = 0, next_in = 0;

	/* Fill a block, take half of it, fill four more. */
	for (; next_in < LOADLOG_BLOCK_ENTRIES; next_in++)
		push(&l, next_in, next_in, 0);
	for (; next_out < LOADLOG_BLOCK_ENTRIES / 2; next_out++) {
		ck_assert(loadlog_pop(&l, &e));
		ck_assert_uint_eq(e.pgno, next_out);
	}
	for (; next_in < 5 * LOADLOG_BLOCK_ENTRIES; next_in++)
		push(&l, next_in, next_in, 0);
	ck_assert_uint_eq(l.nblocks, 5);
	while (loadlog_pop(&l, &e)) {
		ck_assert_uint_eq(e.pgno, next_out);
		next_out++;
	}
	ck_assert_uint_eq(next_out, next_in);
	ck_assert_uint_eq(l.forgotten, 0);
	loadlog_free(&l);
}
END_TEST

/* At the cap the oldest go, the newest stay, and the ring stays bounded. */
START_TEST(test_bounded_at_cap)
{
	struct loadlog l = { 0 };
	struct loadlog_entry e;
	uint64_t n = (uint64_t)LOADLOG_MAX_ENTRIES + 1000;

	for (uint64_t p = 0; p < n; p++)
		push(&l, p, p, 0);
	ck_assert_uint_le(l.nblocks, LOADLOG_MAX_ENTRIES / LOADLOG_BLOCK_ENTRIES + 2);
	ck_assert_uint_eq(l.n, LOADLOG_MAX_ENTRIES);
	ck_assert_uint_eq(l.forgotten, 1000);
	ck_assert(loadlog_pop(&l, &e));
	ck_assert_uint_eq(e.pgno, 1000);
	loadlog_free(&l);
	ck_assert_uint_eq(l.n, 0);
	ck_assert(!loadlog_pop(&l, &e));
}
END_TEST

/*
 * Never a wait for the whole log: a push or a pop touches one block at
 * most, and a log that keeps hovering at a block's edge reuses the block
 * it emptied instead of allocating one each time.
 */
START_TEST(test_block_at_a_time)
{
	struct loadlog l = { 0 };
	struct loadlog_entry e;
	uint64_t next_out = 0, next_in = 0;

	for (; next_in < LOADLOG_BLOCK_ENTRIES - 1; next_in++)
		push(&l, next_in, next_in, 0);
	for (int round = 0; round < 10000; round++) {
		push(&l, next_in, next_in, 0);
		next_in++;
		ck_assert(loadlog_pop(&l, &e));
		ck_assert_uint_eq(e.pgno, next_out);
		next_out++;
		ck_assert_uint_le(l.nblocks, 3);
	}
	ck_assert_uint_eq(l.n, LOADLOG_BLOCK_ENTRIES - 1);
	/* Emptied, it keeps a spare block at most. */
	while (loadlog_pop(&l, &e))
		ck_assert_uint_eq(e.pgno, next_out++);
	ck_assert_uint_eq(next_out, next_in);
	ck_assert_uint_le(l.nblocks, 1);
	ck_assert_ptr_null(l.head);
	push(&l, 1, 1, 0); /* and starts again from it */
	ck_assert_uint_eq(l.nblocks, 1);
	loadlog_free(&l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loadlog");
	TCase *tc = tcase_create("core");
	SRunner *sr;

	tcase_add_test(tc, test_oldest_first);
	tcase_add_test(tc, test_grows_in_order);
	tcase_add_test(tc, test_bounded_at_cap);
	tcase_add_test(tc, test_block_at_a_time);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return check_run(sr);
}
