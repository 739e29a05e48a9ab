// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_size.c - size_parse() and size_format(): every accepted spelling,
 * every rejected one with its error code, that *ret stays untouched on
 * failure, and the human-readable output.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "size.h"

#define K UINT64_C(1024)
#define M (K * 1024)
#define G (M * 1024)
#define T (G * 1024)

static const struct {
	const char *s;
	uint64_t want;
} good[] = {
	{ "0", 0 },
	{ "4096", 4096 },
	{ "64K", 64 * K },
	{ "64k", 64 * K },
	{ "64KB", 64 * K },
	{ "64kb", 64 * K },
	{ "64KiB", 64 * K },
	{ "64kib", 64 * K },
	{ "192M", 192 * M },
	{ "192MiB", 192 * M },
	{ "1G", G },
	{ "1g", G },
	{ "1GB", G },
	{ "2T", 2 * T },
	{ "2TiB", 2 * T },
	{ "512B", 512 },
	{ "512b", 512 },
	{ "0K", 0 },
	{ "007", 7 },
	{ "  64K", 64 * K },
	{ "64K  ", 64 * K },
	{ "\t64K\t", 64 * K },
	{ "64 K", 64 * K },
	{ "64 \t KiB", 64 * K },
	{ " 512 B ", 512 },
	{ "18446744073709551615", UINT64_MAX },
	{ "16777215T", 16777215 * T },
	{ "17179869183G", 17179869183 * G },
};

static const struct {
	const char *s;
	int want;
} bad[] = {
	{ "", -EINVAL },
	{ "   ", -EINVAL },
	{ "-1", -EINVAL },
	{ "-0", -EINVAL },
	{ "+1", -EINVAL },
	{ "1.5G", -EINVAL },
	{ "1,5G", -EINVAL },
	{ ".5G", -EINVAL },
	{ "0x10", -EINVAL },
	{ "0X10", -EINVAL },
	{ "1e3", -EINVAL },
	{ "12Mx", -EINVAL },
	{ "12MBx", -EINVAL },
	{ "12MiBB", -EINVAL },
	{ "12Mi", -EINVAL },
	{ "12iB", -EINVAL },
	{ "12BB", -EINVAL },
	{ "12P", -EINVAL },
	{ "12 M B", -EINVAL },
	{ "1 2", -EINVAL },
	{ "K", -EINVAL },
	{ "KiB", -EINVAL },
	{ "B", -EINVAL },
	{ " M", -EINVAL },
	{ "99999999999999999999x", -EINVAL },
	{ "16777216T", -ERANGE },
	{ "17179869184G", -ERANGE },
	{ "18446744073709551616", -ERANGE },
	{ "99999999999999999999", -ERANGE },
	{ "99999999999999999999 K", -ERANGE },
};

START_TEST(test_parse_good)
{
	uint64_t v = 12345;

	ck_assert_msg(size_parse(good[_i].s, &v) == 0, "'%s' rejected", good[_i].s);
	ck_assert_msg(v == good[_i].want, "'%s' gave %ju, want %ju", good[_i].s, (uintmax_t)v,
		      (uintmax_t)good[_i].want);
}
END_TEST

START_TEST(test_parse_bad)
{
	uint64_t v = 12345;
	int r = size_parse(bad[_i].s, &v);

	ck_assert_msg(r == bad[_i].want, "'%s' gave %d, want %d", bad[_i].s, r, bad[_i].want);
	ck_assert_msg(v == 12345, "'%s' touched *ret on failure", bad[_i].s);
}
END_TEST

START_TEST(test_parse_null)
{
	uint64_t v = 1;

	ck_assert_int_eq(size_parse(NULL, &v), -EINVAL);
	ck_assert_uint_eq(v, 1);
}
END_TEST

static const struct {
	uint64_t bytes;
	const char *want;
} fmt[] = {
	{ 0, "0B" },
	{ 1, "1B" },
	{ 512, "512B" },
	{ 1023, "1023B" },
	{ 1024, "1.0K" },
	{ 4096, "4.0K" },
	{ 1536, "1.5K" },
	{ 10 * K - 1, "9.9K" },
	{ 10 * K, "10K" },
	{ 64 * K, "64K" },
	{ M - 1, "1023K" },
	{ M, "1.0M" },
	{ 192 * M, "192M" },
	{ G, "1.0G" },
	{ G + G / 2, "1.5G" },
	{ 2 * G - 1, "1.9G" },
	{ 2 * T, "2.0T" },
	{ 1000 * T, "1000T" },
	{ UINT64_MAX, "16777215T" },
};

START_TEST(test_format)
{
	char buf[32];

	memset(buf, 'x', sizeof(buf));
	size_format(fmt[_i].bytes, buf, sizeof(buf));
	ck_assert_str_eq(buf, fmt[_i].want);
}
END_TEST

START_TEST(test_format_truncates)
{
	char buf[4];

	memset(buf, 'x', sizeof(buf));
	size_format(192 * M, buf, sizeof(buf));
	ck_assert_str_eq(buf, "192");
	memset(buf, 'x', sizeof(buf));
	size_format(1536 * M, buf, 1);
	ck_assert_int_eq(buf[0], '\0');
	ck_assert_int_eq(buf[1], 'x');
	size_format(1, buf, 0);
	ck_assert_int_eq(buf[1], 'x');
}
END_TEST

/* What size_format() prints without a fraction parses back to itself. */
START_TEST(test_format_round_trip)
{
	static const uint64_t v[] = { 0, 512, 64 * K, 192 * M, 16 * G, 40 * T };
	char buf[32];
	uint64_t back;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_format(v[i], buf, sizeof(buf));
		ck_assert_int_eq(size_parse(buf, &back), 0);
		ck_assert_uint_eq(back, v[i]);
	}
}
END_TEST

static Suite *size_suite(void)
{
	Suite *s = suite_create("size");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_parse_good, 0, sizeof(good) / sizeof(good[0]));
	tcase_add_loop_test(tc, test_parse_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_parse_null);
	suite_add_tcase(s, tc);

	tc = tcase_create("format");
	tcase_add_loop_test(tc, test_format, 0, sizeof(fmt) / sizeof(fmt[0]));
	tcase_add_test(tc, test_format_truncates);
	tcase_add_test(tc, test_format_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(size_suite());

	return check_run(sr);
}
