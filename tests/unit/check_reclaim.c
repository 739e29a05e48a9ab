// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_reclaim - when a process over its limit has its faults wait for the
 * eviction batch in flight (reclaim_throttle, daemon/reclaim.c), on a target
 * made up here: the RSS estimate, the slack, and the pages that cannot leave.
 */
#include <check.h>
#include <stdlib.h>

#include "check_run.h"
#include "daemon.h"

#define MIB (1024 * 1024ull)
#define PAGES(mib) ((mib) * MIB / ZS_PAGE_SIZE)

static struct daemon d;
static struct target t;

/* A process with a 64 MiB limit, at 64 MiB when last checked. */
static void setup(void)
{
	d = (struct daemon){ 0 };
	t = (struct target){ .d = &d };
	t.limit.set = true;
	t.limit.bytes = t.limit.last = 64 * MIB;
	t.limit.rss_pages = PAGES(64);
	t.counts.stores = t.limit.stores_at_check = 1000;
}

START_TEST(test_within_slack)
{
	ck_assert(!reclaim_throttle(&t));
	t.limit.faults_since_check = PAGES(1); /* 1 MiB over: the slack is 64/64 */
	ck_assert(!reclaim_throttle(&t));
}
END_TEST

START_TEST(test_over_slack)
{
	t.limit.faults_since_check = PAGES(2);
	ck_assert(reclaim_throttle(&t));
	t.counts.stores += PAGES(2); /* the batch committed: back within */
	ck_assert(!reclaim_throttle(&t));
}
END_TEST

START_TEST(test_no_limit)
{
	t.limit.faults_since_check = PAGES(200);
	t.limit.bytes = 0; /* `limit PID none` */
	ck_assert(!reclaim_throttle(&t));
	t.limit.set = false; /* nor a default one */
	ck_assert(!reclaim_throttle(&t));
	d.cfg.policy.default_limit_percent = 50; /* now the default applies */
	ck_assert(reclaim_throttle(&t));
}
END_TEST

/* Pages that compress too poorly fill the limit: waiting cannot help. */
START_TEST(test_unreachable)
{
	t.limit.faults_since_check = PAGES(200);
	ck_assert(reclaim_throttle(&t));
	for (uint64_t p = 0; p < PAGES(64); p++)
		hot_note(&t.evict.poor, p, 1, TARGET_POOR_WINDOW_MS);
	ck_assert(!reclaim_throttle(&t));
	hot_free(&t.evict.poor);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reclaim");
	TCase *tc = tcase_create("throttle");
	SRunner *sr;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_within_slack);
	tcase_add_test(tc, test_over_slack);
	tcase_add_test(tc, test_no_limit);
	tcase_add_test(tc, test_unreachable);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return check_run(sr);
}
