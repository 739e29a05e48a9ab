// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_hot - the refault memory that protects the hot set (daemon/hot.c).
 */
#include <check.h>
#include <stdlib.h>

#include "check_run.h"
#include "hot.h"

START_TEST(test_recent_and_expiry)
{
	struct hot h = { 0 };

	ck_assert(!hot_recent(&h, 42, 1000, 500));
	hot_note(&h, 42, 1000, 500);
	ck_assert(hot_recent(&h, 42, 1000, 500));
	ck_assert(hot_recent(&h, 42, 1499, 500));
	ck_assert(!hot_recent(&h, 42, 1500, 500)); /* the window has passed */
	ck_assert(!hot_recent(&h, 43, 1000, 500)); /* a neighbour is not remembered */
	hot_note(&h, 42, 2000, 500);		    /* refaulted again: protected again */
	ck_assert(hot_recent(&h, 42, 2400, 500));
	hot_free(&h);
}
END_TEST

START_TEST(test_page_zero)
{
	struct hot h = { 0 };

	/* pgno 0 must not look remembered in an empty table. */
	ck_assert(!hot_recent(&h, 0, 0, 1000));
	hot_note(&h, 0, 5, 1000);
	ck_assert(hot_recent(&h, 0, 5, 1000));
	hot_free(&h);
}
END_TEST

/* The set grows with what it holds: below the cap nothing is forgotten
 * (a forgotten incompressible page is compressed again on every sweep). */
START_TEST(test_grows_without_loss)
{
	struct hot h = { 0 };
	const uint64_t n = 100000;
	uint64_t remembered = 0;

	for (uint64_t p = 0; p < n; p++)
		hot_note(&h, 0x7f0000000ull + p * 3, 100, 1000);
	for (uint64_t p = 0; p < n; p++)
		remembered += hot_recent(&h, 0x7f0000000ull + p * 3, 100, 1000);
	ck_assert_uint_eq(remembered, n);
	ck_assert_uint_eq(hot_count(&h, 100, 1000), n);
	ck_assert_uint_eq(hot_count(&h, 2000, 1000), 0); /* all expired */
	hot_free(&h);
}
END_TEST

/* The memo: the same count for HOT_COUNT_EVERY_MS plus the pages noted hot
 * since, counted again after it, or at once for another window. */
START_TEST(test_count_recent)
{
	const uint64_t every = HOT_COUNT_EVERY_MS;
	struct hot h = { 0 };

	ck_assert_uint_eq(hot_count_recent(&h, 0, 5000), 0);
	/* Noted after the count: added to it, each page once. */
	for (uint64_t p = 0; p < 100; p++)
		hot_note(&h, p, 10, 5000);
	for (uint64_t p = 0; p < 100; p++)
		hot_note(&h, p, 20, 5000);
	ck_assert_uint_eq(hot_count_recent(&h, 30, 5000), 100);
	ck_assert_uint_eq(hot_count_recent(&h, every, 5000), 100); /* counted again */
	for (uint64_t p = 100; p < 150; p++)
		hot_note(&h, p, every + 1, 5000);
	ck_assert_uint_eq(hot_count_recent(&h, every + 2, 5000), 150);
	ck_assert_uint_eq(hot_count_recent(&h, every + 2, 4000), 150); /* another window: a count */
	/* Going cold waits for the next count: at 4100 pages 0-99 are 4080 ms old. */
	ck_assert_uint_eq(hot_count_recent(&h, 3500, 4000), 150);
	ck_assert_uint_eq(hot_count_recent(&h, 4100, 4000), 150);
	ck_assert_uint_eq(hot_count_recent(&h, 3500 + every + 100, 4000), 50);
	/* A page back after it went cold is hot again at once. */
	hot_note(&h, 0, 3500 + every + 101, 4000);
	ck_assert_uint_eq(hot_count_recent(&h, 3500 + every + 102, 4000), 51);
	hot_free(&h);
}
END_TEST

/* Expired pages make room: a steady stream of notes does not grow the table. */
START_TEST(test_expired_make_room)
{
	struct hot h = { 0 };

	for (uint64_t round = 0; round < 100; round++)
		for (uint64_t p = 0; p < 500; p++)
			hot_note(&h, round * 1000 + p, round * 100, 10);
	ck_assert_uint_le(h.cap, 4096); /* 50,000 notes, never more than 500 live */
	ck_assert_uint_eq(hot_count(&h, 9900, 10), 500);
	hot_free(&h);
}
END_TEST

/* At the cap it forgets, but stays bounded and answers for what it holds. */
START_TEST(test_bounded_at_cap)
{
	struct hot h = { 0 };
	uint64_t n = (uint64_t)HOT_MAX_SLOTS * 2;

	for (uint64_t p = 0; p < n; p++)
		hot_note(&h, p * 7, 300, 1000);
	ck_assert_uint_le(h.cap, HOT_MAX_SLOTS);
	ck_assert_uint_le(hot_count(&h, 300, 1000), HOT_MAX_SLOTS);
	ck_assert(hot_recent(&h, (n - 1) * 7, 300, 1000)); /* the latest is there */
	hot_free(&h);
}
END_TEST

static uint64_t recent_of(const struct hot *h, uint64_t n, uint64_t now)
{
	uint64_t found = 0;

	for (uint64_t p = 0; p < n; p++)
		found += hot_recent(h, p * 5, now, 1000);
	return found;
}

/*
 * A rebuild is spread over the notes that follow the one that found the
 * table full (a load must not wait for all of it): the live pages are
 * counted, HOT_STEP_SLOTS slots a note, then moved.  Nothing is lost
 * meanwhile, and lookups find pages in either table.
 */
START_TEST(test_rebuild_spread)
{
	struct hot h = { 0 };
	uint64_t p = 0, counted = 0;

	while (!h.counting)
		hot_note(&h, p++ * 5, 100, 1000);
	ck_assert_uint_eq(h.cap, HOT_MIN_SLOTS); /* the first table, not rebuilt at once */
	while (h.counting) {
		hot_note(&h, p++ * 5, 100, 1000);
		counted++;
	}
	ck_assert_uint_ge(counted, HOT_MIN_SLOTS / 64 - 1);
	ck_assert_ptr_nonnull(h.old); /* moving */
	ck_assert_uint_gt(h.cap, HOT_MIN_SLOTS);
	ck_assert_uint_eq(recent_of(&h, p, 100), p);
	ck_assert_uint_eq(hot_count(&h, 100, 1000), p);
	ck_assert_uint_eq(hot_size(&h), p);
	while (h.old) {
		hot_note(&h, p++ * 5, 100, 1000);
		ck_assert_uint_eq(hot_size(&h), p);
	}
	ck_assert_uint_eq(recent_of(&h, p, 100), p);
	ck_assert_uint_eq(hot_count(&h, 100, 1000), p);
	hot_free(&h);
}
END_TEST

/* During a move, a page noted again is the later sighting; the expired stay behind. */
START_TEST(test_move_keeps_latest)
{
	struct hot h = { 0 };
	uint64_t p = 1, when = 0;

	hot_note(&h, 0, 10, 1000); /* expired by the time the table is rebuilt */
	hot_note(&h, 3, 1500, 1000);
	while (!h.old)
		hot_note(&h, 1000 + p++, 2000, 1000);
	hot_note(&h, 3, 2100, 1000);
	ck_assert(hot_when(&h, 3, &when));
	ck_assert_uint_eq(when, 2100);
	while (h.old)
		hot_note(&h, 1000 + p++, 2200, 1000);
	ck_assert(hot_when(&h, 3, &when));
	ck_assert_uint_eq(when, 2100);
	ck_assert(!hot_when(&h, 0, &when)); /* dropped when moved */
	ck_assert_uint_eq(hot_size(&h), p); /* 3 and the p - 1 others, once each */
	hot_free(&h);
}
END_TEST

/*
 * At the cap, with every page live, a rebuild still moves a bounded share
 * of the table per note: the table forgets instead of a note moving it all.
 */
START_TEST(test_cap_rebuild_bounded)
{
	struct hot h = { 0 };
	uint64_t n = (uint64_t)HOT_MAX_SLOTS * 2, moves_at_cap = 0;

	/* A thousand notes a millisecond: the last million are live. */
	for (uint64_t p = 0; p < n; p++) {
		hot_note(&h, p * 7, p / 1000, 1000);
		if (h.old && h.cap == HOT_MAX_SLOTS) {
			ck_assert_uint_le(h.step, HOT_CAP_STEP_SLOTS);
			moves_at_cap++;
		}
	}
	ck_assert_uint_gt(moves_at_cap, 0);
	ck_assert_uint_le(h.cap, HOT_MAX_SLOTS);
	ck_assert(hot_recent(&h, (n - 1) * 7, (n - 1) / 1000, 1000));
	ck_assert_uint_le(hot_size(&h), (uint64_t)HOT_MAX_SLOTS * 2);
	hot_free(&h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hot");
	TCase *tc = tcase_create("core");
	SRunner *sr;

	tcase_add_test(tc, test_recent_and_expiry);
	tcase_add_test(tc, test_page_zero);
	tcase_add_test(tc, test_grows_without_loss);
	tcase_add_test(tc, test_expired_make_room);
	tcase_add_test(tc, test_count_recent);
	tcase_add_test(tc, test_bounded_at_cap);
	tcase_add_test(tc, test_rebuild_spread);
	tcase_add_test(tc, test_move_keeps_latest);
	tcase_add_test(tc, test_cap_rebuild_bounded);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return check_run(sr);
}
