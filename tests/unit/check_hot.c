// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_hot - the refault memory that protects the hot set (daemon/hot.c).
 */
#include <check.h>
#include <stdlib.h>

#include "hot.h"

START_TEST(test_recent_and_expiry)
{
	struct hot *h = calloc(1, sizeof(*h));

	ck_assert(!hot_recent(h, 42, 1000, 500));
	hot_note(h, 42, 1000);
	ck_assert(hot_recent(h, 42, 1000, 500));
	ck_assert(hot_recent(h, 42, 1499, 500));
	ck_assert(!hot_recent(h, 42, 1500, 500)); /* the window has passed */
	ck_assert(!hot_recent(h, 43, 1000, 500)); /* a neighbour is not remembered */
	hot_note(h, 42, 2000);			   /* refaulted again: protected again */
	ck_assert(hot_recent(h, 42, 2400, 500));
	free(h);
}
END_TEST

START_TEST(test_page_zero)
{
	struct hot *h = calloc(1, sizeof(*h));

	/* pgno 0 must not look remembered in an empty table. */
	ck_assert(!hot_recent(h, 0, 0, 1000));
	hot_note(h, 0, 5);
	ck_assert(hot_recent(h, 0, 5, 1000));
	free(h);
}
END_TEST

START_TEST(test_count_and_collisions)
{
	struct hot *h = calloc(1, sizeof(*h));
	uint64_t remembered = 0;

	/* A contiguous range spreads over the table: few collisions. */
	for (uint64_t p = 1000000; p < 1000000 + HOT_SLOTS / 2; p++)
		hot_note(h, p, 100);
	for (uint64_t p = 1000000; p < 1000000 + HOT_SLOTS / 2; p++)
		remembered += hot_recent(h, p, 100, 10);
	ck_assert_uint_gt(remembered, HOT_SLOTS / 2 * 9 / 10);
	ck_assert_uint_eq(hot_count(h, 100, 10), remembered);
	ck_assert_uint_eq(hot_count(h, 200, 10), 0); /* all expired */
	/* Lossy but bounded: 10x more pages than slots never overflow. */
	for (uint64_t p = 0; p < HOT_SLOTS * 10; p++)
		hot_note(h, p * 7, 300);
	ck_assert_uint_le(hot_count(h, 300, 10), HOT_SLOTS);
	free(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hot");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_recent_and_expiry);
	tcase_add_test(tc, test_page_zero);
	tcase_add_test(tc, test_count_and_collisions);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
