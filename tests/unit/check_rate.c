// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_rate - a counter's growth over the last minute (daemon/rate.c), on
 * which proactive eviction backs off.
 */
#include <check.h>
#include <stdlib.h>

#include "check_run.h"
#include "rate.h"

START_TEST(test_first_feed_is_the_base)
{
	struct rate r = { 0 };

	rate_feed(&r, 1000000, 5000);
	ck_assert_uint_eq(rate_per_minute(&r), 0);
	rate_feed(&r, 1000010, 6000);
	ck_assert_uint_eq(rate_per_minute(&r), 10);
}
END_TEST

START_TEST(test_minute_slides)
{
	struct rate r = { 0 };
	uint64_t total = 0;

	rate_feed(&r, total, 1000);
	/* 10 a second for 60 seconds, fed every second */
	for (unsigned s = 1; s <= 60; s++) {
		total += 10;
		rate_feed(&r, total, 1000 + s * 1000);
	}
	ck_assert_uint_ge(rate_per_minute(&r), 500);
	ck_assert_uint_le(rate_per_minute(&r), 600);
	/* then nothing: after a minute of silence the rate is zero */
	for (unsigned s = 61; s <= 125; s++)
		rate_feed(&r, total, 1000 + s * 1000);
	ck_assert_uint_eq(rate_per_minute(&r), 0);
}
END_TEST

START_TEST(test_gap_longer_than_a_minute)
{
	struct rate r = { 0 };

	rate_feed(&r, 0, 1);
	rate_feed(&r, 100, 5000);
	ck_assert_uint_eq(rate_per_minute(&r), 100);
	/* ten minutes without a feed: the old growth is gone, the new counts */
	rate_feed(&r, 130, 600000);
	ck_assert_uint_eq(rate_per_minute(&r), 30);
}
END_TEST

START_TEST(test_counter_going_down)
{
	struct rate r = { 0 };

	rate_feed(&r, 50, 1);
	rate_feed(&r, 20, 2000);
	ck_assert_uint_eq(rate_per_minute(&r), 0);
	rate_feed(&r, 25, 3000);
	ck_assert_uint_eq(rate_per_minute(&r), 5);
}
END_TEST

static Suite *rate_suite(void)
{
	Suite *s = suite_create("rate");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_first_feed_is_the_base);
	tcase_add_test(tc, test_minute_slides);
	tcase_add_test(tc, test_gap_longer_than_a_minute);
	tcase_add_test(tc, test_counter_going_down);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rate_suite());

	return check_run(sr);
}
