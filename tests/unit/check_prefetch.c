// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_prefetch - the readahead window of a process's faults on the pool
 * (daemon/prefetch.c): when it opens, grows, shrinks and turns off.
 */
#include <check.h>
#include <stdlib.h>

#include "check_run.h"
#include "prefetch.h"

struct run {
	struct prefetch pf;
	struct prefetch_window w;
	uint64_t hits, misses, now_ms;
	uint32_t max;
};

static void fault(struct run *r, uint64_t pgno)
{
	prefetch_fault(&r->pf, pgno, r->now_ms, r->max, &r->w, &r->hits, &r->misses);
}

/* The caller installed the whole window but for its marker, the first page of its second half. */
static void install_all(struct run *r)
{
	ck_assert_uint_eq(r->w.marker_from, r->w.first + r->w.pages / 2);
	prefetch_installed(&r->pf, &r->w, r->w.pages - 1, r->w.marker_from);
}

/* The process reads on to the marker: the fault there. */
static void read_to_marker(struct run *r)
{
	fault(r, r->w.marker_from);
}

START_TEST(test_random_never_opens)
{
	struct run r = { .max = 16 };
	static const uint64_t pages[] = { 100, 7, 5000, 42, 43000, 8, 99, 101 };

	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		fault(&r, pages[i]);
		ck_assert_uint_eq(r.w.pages, 0);
	}
	ck_assert_uint_eq(r.hits + r.misses, 0);
}
END_TEST

START_TEST(test_sequential_grows_to_max)
{
	struct run r = { .max = 16 };
	uint64_t pg = 1000;

	fault(&r, pg);
	ck_assert_uint_eq(r.w.pages, 0); /* one fault is no pattern */
	fault(&r, ++pg);
	ck_assert_uint_eq(r.w.pages, PREFETCH_MIN_PAGES);
	ck_assert_uint_eq(r.w.first, pg + 1);
	install_all(&r);
	/* Read on to the marker: the next window starts where this one ends. */
	{
		uint64_t end = r.w.first + r.w.pages;

		read_to_marker(&r);
		ck_assert_uint_eq(r.hits, PREFETCH_MIN_PAGES - 1);
		ck_assert_uint_eq(r.w.pages, 2 * PREFETCH_MIN_PAGES);
		ck_assert_uint_eq(r.w.first, end);
	}
	install_all(&r);
	read_to_marker(&r);
	ck_assert_uint_eq(r.w.pages, 16);
	install_all(&r);
	read_to_marker(&r);
	ck_assert_uint_eq(r.w.pages, 16); /* capped */
	ck_assert_uint_eq(r.hits, 3 + 7 + 15);
	ck_assert_uint_eq(r.misses, 0);
}
END_TEST

START_TEST(test_left_window_is_a_miss_and_halves)
{
	struct run r = { .max = 16 };

	fault(&r, 10);
	fault(&r, 11);
	install_all(&r);
	read_to_marker(&r); /* hit: window 8 */
	install_all(&r);
	read_to_marker(&r); /* hit: window 16 */
	install_all(&r);
	fault(&r, 5000); /* elsewhere: the 15 pages were not read */
	ck_assert_uint_eq(r.misses, 15);
	ck_assert_uint_eq(r.w.pages, 0);
	fault(&r, 5001); /* a new run starts at half */
	ck_assert_uint_eq(r.w.pages, 8);
}
END_TEST

START_TEST(test_off_after_misses_then_back)
{
	struct run r = { .max = 16, .now_ms = 1000 };
	uint64_t pg = 100;

	for (unsigned i = 0; i < PREFETCH_OFF_MISSES; i++) {
		fault(&r, pg);
		fault(&r, pg + 1);
		ck_assert_uint_gt(r.w.pages, 0);
		install_all(&r);
		pg += 10000; /* jumps away: a miss */
	}
	fault(&r, pg);
	fault(&r, pg + 1);
	ck_assert_uint_eq(r.w.pages, 0); /* off */
	r.now_ms += PREFETCH_OFF_MS;
	fault(&r, pg + 2);
	ck_assert_uint_eq(r.w.pages, PREFETCH_MIN_PAGES); /* back, from the start */
}
END_TEST

START_TEST(test_zero_max_is_off_and_nothing_installed_settles_nothing)
{
	struct run r = { .max = 0 };

	fault(&r, 1);
	fault(&r, 2);
	ck_assert_uint_eq(r.w.pages, 0);
	r.max = 16;
	fault(&r, 3);
	ck_assert_uint_gt(r.w.pages, 0);
	prefetch_installed(&r.pf, &r.w, 0, 0); /* nothing there to install */
	fault(&r, 9000);
	ck_assert_uint_eq(r.hits + r.misses, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("window");
	SRunner *sr;

	tcase_add_test(tc, test_random_never_opens);
	tcase_add_test(tc, test_sequential_grows_to_max);
	tcase_add_test(tc, test_left_window_is_a_miss_and_halves);
	tcase_add_test(tc, test_off_after_misses_then_back);
	tcase_add_test(tc, test_zero_max_is_off_and_nothing_installed_settles_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return check_run(sr);
}
