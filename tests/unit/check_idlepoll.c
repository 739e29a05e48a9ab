// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_idlepoll - when zswapd holds idle CPUs polling (daemon/idlepoll.c):
 * a burst of faults takes the hold, a sparse stream never does, the hold
 * lasts its time after the burst's last busy millisecond, and 0 is off.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_run.h"
#include "idlepoll.h"

#define HOLD 20000u /* usec */

/* n faults evenly over the millisecond starting at ms; how many said take. */
static unsigned faults_in_ms(struct idlepoll *p, uint64_t ms, unsigned n, uint64_t hold)
{
	unsigned takes = 0;

	for (unsigned i = 0; i < n; i++)
		takes += idlepoll_fault(p, ms * 1000 + i * (1000 / n), hold);
	return takes;
}

START_TEST(test_burst_takes_once)
{
	struct idlepoll p = { 0 };

	ck_assert_uint_eq(faults_in_ms(&p, 5, IDLEPOLL_BURST_FAULTS - 1, HOLD), 0);
	ck_assert(!p.held);
	ck_assert_uint_eq(faults_in_ms(&p, 6, IDLEPOLL_BURST_FAULTS, HOLD), 1);
	ck_assert(p.held);
	ck_assert_uint_eq(p.since_usec, p.until_usec - HOLD); /* taken at the burst's fault */
	/* A longer burst extends the hold, never takes it twice. */
	for (uint64_t ms = 7; ms < 50; ms++)
		ck_assert_uint_eq(faults_in_ms(&p, ms, 40, HOLD), 0);
	ck_assert_uint_lt(p.since_usec, 7000); /* held since its start */
	ck_assert(!idlepoll_expired(&p, 49999 + HOLD - 1000));
	ck_assert_uint_le(idlepoll_timeout(&p, 49999), HOLD);
}
END_TEST

START_TEST(test_sparse_never_takes)
{
	struct idlepoll p = { 0 };

	/* Up to one short of a burst every millisecond, for a second: never. */
	for (uint64_t ms = 0; ms < 1000; ms++)
		ck_assert_uint_eq(faults_in_ms(&p, ms, IDLEPOLL_BURST_FAULTS - 1, HOLD), 0);
	ck_assert(!p.held);
	ck_assert_uint_eq(idlepoll_timeout(&p, 1000000), UINT64_MAX);
	ck_assert(!idlepoll_expired(&p, 2000000));
}
END_TEST

START_TEST(test_expires_after_last_busy_ms)
{
	struct idlepoll p = { 0 };
	uint64_t last;

	faults_in_ms(&p, 100, IDLEPOLL_BURST_FAULTS, HOLD);
	last = p.until_usec - HOLD; /* the fault that reached the burst */
	/* Sparse faults after it do not extend it. */
	faults_in_ms(&p, 101, 2, HOLD);
	faults_in_ms(&p, 110, 2, HOLD);
	ck_assert_uint_eq(idlepoll_timeout(&p, last + 5000), HOLD - 5000);
	ck_assert(!idlepoll_expired(&p, last + HOLD - 1));
	ck_assert(idlepoll_expired(&p, last + HOLD));
	ck_assert(!p.held);
	ck_assert(!idlepoll_expired(&p, last + HOLD + 1)); /* let go once */
	/* The next burst takes it again. */
	ck_assert_uint_eq(faults_in_ms(&p, 200, IDLEPOLL_BURST_FAULTS, HOLD), 1);
}
END_TEST

START_TEST(test_zero_hold_is_off)
{
	struct idlepoll p = { 0 };

	ck_assert_uint_eq(faults_in_ms(&p, 3, 100, 0), 0);
	ck_assert(!p.held);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("idlepoll");
	TCase *tc = tcase_create("hold");
	SRunner *sr;

	tcase_add_test(tc, test_burst_takes_once);
	tcase_add_test(tc, test_sparse_never_takes);
	tcase_add_test(tc, test_expires_after_last_busy_ms);
	tcase_add_test(tc, test_zero_hold_is_off);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return check_run(sr);
}
