// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_cgroup - reading a process's memory cgroup and a cgroup's limit
 * (daemon/cgroup.c), which group budgets and followed limits rest on.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "cgroup.h"
#include "check_run.h"

START_TEST(test_proc_v1)
{
	char path[CGROUP_PATH_MAX];
	const char *text = "9:name=systemd:/\n8:pids:/\n4:memory:/system.slice/foo.service\n"
			   "2:cpu,cpuacct:/x\n0::/\n";

	ck_assert_int_eq(cgroup_parse_proc(text, path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/system.slice/foo.service");
}
END_TEST

START_TEST(test_proc_v1_shared_hierarchy)
{
	char path[CGROUP_PATH_MAX];

	/* memory mounted with another controller; "memoryx" is not memory */
	ck_assert_int_eq(cgroup_parse_proc("5:memoryx:/no\n3:cpu,memory:/yes\n", path, sizeof(path)),
			 0);
	ck_assert_str_eq(path, "/yes");
}
END_TEST

START_TEST(test_proc_v2)
{
	char path[CGROUP_PATH_MAX];

	ck_assert_int_eq(cgroup_parse_proc("0::/user.slice/app.scope\n", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/user.slice/app.scope");
	/* a v1 memory line wins over the v2 one (hybrid mounts) */
	ck_assert_int_eq(cgroup_parse_proc("0::/a\n4:memory:/b", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/b");
}
END_TEST

START_TEST(test_proc_errors)
{
	char path[8];

	ck_assert_int_eq(cgroup_parse_proc("", path, sizeof(path)), -ENOENT);
	ck_assert_int_eq(cgroup_parse_proc("8:pids:/\n", path, sizeof(path)), -ENOENT);
	ck_assert_int_eq(cgroup_parse_proc("garbage\n::\n", path, sizeof(path)), -ENOENT);
	ck_assert_int_eq(cgroup_parse_proc("4:memory:/a/very/long/path\n", path, sizeof(path)),
			 -ENAMETOOLONG);
	ck_assert_int_eq(cgroup_parse_proc("4:memory:\n", path, sizeof(path)), -ENOENT);
}
END_TEST

START_TEST(test_bytes)
{
	uint64_t v;

	ck_assert_int_eq(cgroup_parse_bytes("209715200\n", &v), 0);
	ck_assert_uint_eq(v, 209715200);
	ck_assert_int_eq(cgroup_parse_bytes("max\n", &v), 0);
	ck_assert_uint_eq(v, CGROUP_NO_LIMIT);
	/* v1's "unlimited": PAGE_COUNTER_MAX pages */
	ck_assert_int_eq(cgroup_parse_bytes("9223372036854771712\n", &v), 0);
	ck_assert_uint_eq(v, CGROUP_NO_LIMIT);
	ck_assert_int_eq(cgroup_parse_bytes("", &v), -EINVAL);
	ck_assert_int_eq(cgroup_parse_bytes("-1\n", &v), -EINVAL);
	ck_assert_int_eq(cgroup_parse_bytes("12M\n", &v), -EINVAL);
	ck_assert_int_eq(cgroup_parse_bytes("maximum\n", &v), -EINVAL);
}
END_TEST

START_TEST(test_under)
{
	ck_assert(cgroup_under("/a", "/a"));
	ck_assert(cgroup_under("/a/b", "/a"));
	ck_assert(cgroup_under("/a/b", "/a/"));
	ck_assert(!cgroup_under("/ab", "/a"));
	ck_assert(!cgroup_under("/a", "/a/b"));
	ck_assert(cgroup_under("/anything", "/"));
}
END_TEST

static Suite *cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_proc_v1);
	tcase_add_test(tc, test_proc_v1_shared_hierarchy);
	tcase_add_test(tc, test_proc_v2);
	tcase_add_test(tc, test_proc_errors);
	tcase_add_test(tc, test_bytes);
	tcase_add_test(tc, test_under);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cgroup_suite());

	return check_run(sr);
}
