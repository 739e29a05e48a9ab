// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_cfg.c - the config table, its parsers and its syntax: defaults,
 * every key's good, bad and boundary values, error texts that name
 * file:line, the caller's struct left alone on any error, files, and
 * conf/zswapd.conf kept in step with the table (run from the repo root).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "check_run.h"
#include "log.h"

#define SAMPLE_CONF "conf/zswapd.conf"
#define NKEYS 37 /* fields of struct cfg, one key each */

static void assert_cfg_eq(const struct cfg *a, const struct cfg *b)
{
	ck_assert_str_eq(a->socket, b->socket);
	ck_assert_int_eq(a->pool.compressor, b->pool.compressor);
	ck_assert_int_eq(a->pool.recompressor, b->pool.recompressor);
	ck_assert_uint_eq(a->pool.recompress_seconds, b->pool.recompress_seconds);
	ck_assert_uint_eq(a->pool.max_pool_percent, b->pool.max_pool_percent);
	ck_assert_uint_eq(a->pool.max_pool_bytes, b->pool.max_pool_bytes);
	ck_assert_uint_eq(a->pool.accept_threshold_percent, b->pool.accept_threshold_percent);
	ck_assert_uint_eq(a->pool.max_compressed_percent, b->pool.max_compressed_percent);
	ck_assert_int_eq(a->pool.store_incompressible, b->pool.store_incompressible);
	ck_assert_uint_eq(a->agent.evict_batch_pages, b->agent.evict_batch_pages);
	ck_assert_uint_eq(a->fault.fault_spin_usec, b->fault.fault_spin_usec);
	ck_assert_uint_eq(a->fault.fault_idle_poll_ms, b->fault.fault_idle_poll_ms);
	ck_assert_int_eq(a->log_level, b->log_level);
	ck_assert_int_eq(a->mlock, b->mlock);
	ck_assert_int_eq(a->agent.agent_move, b->agent.agent_move);
	ck_assert_int_eq(a->agent.agent_follow_app, b->agent.agent_follow_app);
	ck_assert_int_eq(a->agent.agent_move_first, b->agent.agent_move_first);
	ck_assert_str_eq(a->swap.swap_file, b->swap.swap_file);
	ck_assert_uint_eq(a->swap.swap_file_size, b->swap.swap_file_size);
	ck_assert_uint_eq(a->swap.readahead_pages, b->swap.readahead_pages);
	ck_assert_uint_eq(a->fault.prefetch_pages, b->fault.prefetch_pages);
	ck_assert_uint_eq(a->policy.hot_window_seconds, b->policy.hot_window_seconds);
	ck_assert_uint_eq(a->policy.idle_evict_seconds, b->policy.idle_evict_seconds);
	ck_assert_uint_eq(a->policy.default_limit_percent, b->policy.default_limit_percent);
	ck_assert_uint_eq(a->policy.proactive_refault_permille, b->policy.proactive_refault_permille);
	ck_assert_uint_eq(a->policy.proactive_stall_permille, b->policy.proactive_stall_permille);
	ck_assert_int_eq(a->policy.follow_cgroup_limits, b->policy.follow_cgroup_limits);
	ck_assert_uint_eq(a->policy.cgroup_headroom_percent, b->policy.cgroup_headroom_percent);
	ck_assert_uint_eq(a->policy.pressure_stall_ms, b->policy.pressure_stall_ms);
	ck_assert_int_eq(a->nice, b->nice);
	ck_assert_uint_eq(a->socket_mode, b->socket_mode);
	ck_assert_str_eq(a->socket_group, b->socket_group);
	ck_assert_uint_eq(a->users.max_connections_per_user, b->users.max_connections_per_user);
	ck_assert_uint_eq(a->users.max_processes_per_user, b->users.max_processes_per_user);
	ck_assert_uint_eq(a->users.max_pool_percent_per_user, b->users.max_pool_percent_per_user);
}

/* A configuration where every field differs from the defaults. */
static const char nondefault_text[] = "socket = /tmp/other.sock\n"
				      "compressor = zstd\n"
				      "recompressor = none\n"
				      "recompress_seconds = 60\n"
				      "max_pool_percent = 33\n"
				      "max_pool_bytes = 1G\n"
				      "accept_threshold_percent = 50\n"
				      "max_compressed_percent = 75\n"
				      "store_incompressible = no\n"
				      "evict_batch_pages = 64\n"
				      "fault_spin_usec = 0\n"
				      "fault_idle_poll_ms = 0\n"
				      "log_level = debug\n"
				      "mlock = no\n"
				      "agent_move = no\n"
				      "agent_follow_app = no\n"
				      "agent_move_first = no\n"
				      "swap_file = /var/tmp/zswapd.swap\n"
				      "swap_file_size = 1G\n"
				      "readahead_pages = 0\n"
				      "prefetch_pages = 0\n"
				      "hot_window_seconds = 60\n"
				      "idle_evict_seconds = 300\n"
				      "default_limit_percent = 50\n"
				      "proactive_refault_permille = 20\n"
				      "proactive_stall_permille = 100\n"
				      "follow_cgroup_limits = no\n"
				      "cgroup_headroom_percent = 25\n"
				      "pressure_stall_ms = 500\n"
				      "nice = 5\n"
				      "socket_mode = 0600\n"
				      "socket_group = wheel\n"
				      "max_connections_per_user = 8\n"
				      "max_processes_per_user = 16\n"
				      "max_pool_percent_per_user = 100\n";

static void nondefault(struct cfg *c)
{
	char err[256] = "";

	cfg_defaults(c);
	ck_assert_msg(cfg_parse_text(c, nondefault_text, "nd", err, sizeof(err)) == 0, "%s", err);
}

static struct cfg parse_ok(const char *text)
{
	char err[256] = "";
	struct cfg c;

	cfg_defaults(&c);
	ck_assert_msg(cfg_parse_text(&c, text, "test.conf", err, sizeof(err)) == 0,
		      "'%.60s' rejected: %s", text, err);
	return c;
}

START_TEST(test_defaults)
{
	struct cfg c, d;

	memset(&c, 0xa5, sizeof(c));
	cfg_defaults(&c);
	ck_assert_str_eq(c.socket, "/run/zswapd/zswapd.sock");
	ck_assert_int_eq(c.pool.compressor, COMP_LZO);
	ck_assert_int_eq(c.pool.recompressor, COMP_ZSTD);
	ck_assert_uint_eq(c.pool.recompress_seconds, 300);
	ck_assert_uint_eq(c.pool.max_pool_percent, 20);
	ck_assert_uint_eq(c.pool.max_pool_bytes, 0);
	ck_assert_uint_eq(c.pool.accept_threshold_percent, 90);
	ck_assert_uint_eq(c.pool.max_compressed_percent, 90);
	ck_assert_int_eq(c.pool.store_incompressible, CFG_AUTO);
	ck_assert_uint_eq(c.agent.evict_batch_pages, 256);
	ck_assert_uint_eq(c.fault.fault_spin_usec, 50);
	ck_assert_uint_eq(c.fault.fault_idle_poll_ms, 20);
	ck_assert_int_eq(c.log_level, LOG_LVL_INFO);
	ck_assert(c.mlock);
	ck_assert(c.agent.agent_move);
	ck_assert(c.agent.agent_follow_app);
	ck_assert(c.agent.agent_move_first);
	ck_assert_str_eq(c.swap.swap_file, "");
	ck_assert_uint_eq(c.swap.swap_file_size, 0);
	ck_assert_uint_eq(c.swap.readahead_pages, 8);
	ck_assert_uint_eq(c.fault.prefetch_pages, 16);
	ck_assert_uint_eq(c.policy.hot_window_seconds, 10);
	ck_assert_uint_eq(c.policy.idle_evict_seconds, 120);
	ck_assert_uint_eq(c.policy.default_limit_percent, 0);
	ck_assert_uint_eq(c.policy.proactive_refault_permille, 2);
	ck_assert_uint_eq(c.policy.proactive_stall_permille, 10);
	ck_assert(c.policy.follow_cgroup_limits);
	ck_assert_uint_eq(c.policy.cgroup_headroom_percent, 10);
	ck_assert_uint_eq(c.policy.pressure_stall_ms, 150);
	ck_assert_int_eq(c.nice, -10);

	nondefault(&d);
	cfg_defaults(&d);
	assert_cfg_eq(&c, &d);
}
END_TEST

START_TEST(test_nondefault_differs)
{
	struct cfg c, d;

	cfg_defaults(&d);
	nondefault(&c);
	ck_assert_str_ne(c.socket, d.socket);
	ck_assert_int_ne(c.pool.compressor, d.pool.compressor);
	ck_assert_int_ne(c.pool.recompressor, d.pool.recompressor);
	ck_assert_uint_ne(c.pool.recompress_seconds, d.pool.recompress_seconds);
	ck_assert_uint_ne(c.pool.max_pool_percent, d.pool.max_pool_percent);
	ck_assert_uint_ne(c.pool.max_pool_bytes, d.pool.max_pool_bytes);
	ck_assert_uint_ne(c.pool.accept_threshold_percent, d.pool.accept_threshold_percent);
	ck_assert_uint_ne(c.pool.max_compressed_percent, d.pool.max_compressed_percent);
	ck_assert_int_ne(c.pool.store_incompressible, d.pool.store_incompressible);
	ck_assert_uint_ne(c.agent.evict_batch_pages, d.agent.evict_batch_pages);
	ck_assert_uint_ne(c.fault.fault_spin_usec, d.fault.fault_spin_usec);
	ck_assert_uint_ne(c.fault.fault_idle_poll_ms, d.fault.fault_idle_poll_ms);
	ck_assert_int_ne(c.log_level, d.log_level);
	ck_assert_int_ne(c.mlock, d.mlock);
	ck_assert_int_ne(c.agent.agent_move, d.agent.agent_move);
	ck_assert_int_ne(c.agent.agent_follow_app, d.agent.agent_follow_app);
	ck_assert_int_ne(c.agent.agent_move_first, d.agent.agent_move_first);
	ck_assert_str_ne(c.swap.swap_file, d.swap.swap_file);
	ck_assert_uint_ne(c.swap.swap_file_size, d.swap.swap_file_size);
	ck_assert_uint_ne(c.swap.readahead_pages, d.swap.readahead_pages);
	ck_assert_uint_ne(c.fault.prefetch_pages, d.fault.prefetch_pages);
	ck_assert_uint_ne(c.policy.hot_window_seconds, d.policy.hot_window_seconds);
	ck_assert_uint_ne(c.policy.idle_evict_seconds, d.policy.idle_evict_seconds);
	ck_assert_uint_ne(c.policy.default_limit_percent, d.policy.default_limit_percent);
	ck_assert_uint_ne(c.policy.proactive_refault_permille, d.policy.proactive_refault_permille);
	ck_assert_uint_ne(c.policy.proactive_stall_permille, d.policy.proactive_stall_permille);
	ck_assert_int_ne(c.policy.follow_cgroup_limits, d.policy.follow_cgroup_limits);
	ck_assert_uint_ne(c.policy.cgroup_headroom_percent, d.policy.cgroup_headroom_percent);
	ck_assert_uint_ne(c.policy.pressure_stall_ms, d.policy.pressure_stall_ms);
	ck_assert_int_ne(c.nice, d.nice);
}
END_TEST

/* Octal modes and group names: what they take, and a clear refusal of the rest. */
START_TEST(test_socket_access)
{
	static const char *const bad[] = { "socket_mode = 666\n", "socket_mode = 0888\n",
					   "socket_mode = 01777\n", "socket_mode = 0x1ff\n",
					   "socket_group = a b\n", "socket_group = ../x\n",
					   "max_pool_percent_per_user = 0\n",
					   "max_connections_per_user = 0\n" };
	struct cfg c = parse_ok("socket_mode = 0666\nsocket_group = zswapd-users\n");
	char err[256];

	ck_assert_uint_eq(c.socket_mode, 0666);
	ck_assert_str_eq(c.socket_group, "zswapd-users");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfg before = c;

		err[0] = '\0';
		ck_assert_msg(cfg_parse_text(&c, bad[i], "f", err, sizeof(err)) < 0, "%s", bad[i]);
		ck_assert_msg(strncmp(err, "f:1:", 4) == 0, "%s: %s", bad[i], err);
		assert_cfg_eq(&c, &before);
	}
}
END_TEST

START_TEST(test_socket)
{
	char text[256], path[CFG_PATH_MAX];
	struct cfg c;

	c = parse_ok("socket = /tmp/a b#c.sock");
	ck_assert_str_eq(c.socket, "/tmp/a b#c.sock");

	/* 107 bytes + NUL fits sun_path exactly */
	memset(path, 'p', sizeof(path));
	path[0] = '/';
	path[CFG_PATH_MAX - 1] = '\0';
	snprintf(text, sizeof(text), "socket = %s", path);
	c = parse_ok(text);
	ck_assert_str_eq(c.socket, path);
}
END_TEST

START_TEST(test_compressor)
{
	ck_assert_int_eq(parse_ok("compressor = lzo").pool.compressor, COMP_LZO);
	ck_assert_int_eq(parse_ok("compressor = lz4").pool.compressor, COMP_LZ4);
	ck_assert_int_eq(parse_ok("compressor = zstd").pool.compressor, COMP_ZSTD);
	ck_assert_int_eq(parse_ok("recompressor = lz4").pool.recompressor, COMP_LZ4);
	ck_assert_int_eq(parse_ok("recompressor = none").pool.recompressor, CFG_RECOMP_NONE);
}
END_TEST

START_TEST(test_percent_bounds)
{
	ck_assert_uint_eq(parse_ok("max_pool_percent = 0").pool.max_pool_percent, 0);
	ck_assert_uint_eq(parse_ok("max_pool_percent = 100").pool.max_pool_percent, 100);
	ck_assert_uint_eq(parse_ok("max_pool_percent = 007").pool.max_pool_percent, 7);
	ck_assert_uint_eq(parse_ok("accept_threshold_percent = 0").pool.accept_threshold_percent, 0);
	ck_assert_uint_eq(parse_ok("accept_threshold_percent = 100").pool.accept_threshold_percent, 100);
	ck_assert_uint_eq(parse_ok("max_compressed_percent = 1").pool.max_compressed_percent, 1);
	ck_assert_uint_eq(parse_ok("max_compressed_percent = 100").pool.max_compressed_percent, 100);
	ck_assert_uint_eq(parse_ok("evict_batch_pages = 1").agent.evict_batch_pages, 1);
	ck_assert_uint_eq(parse_ok("evict_batch_pages = 1024").agent.evict_batch_pages, 1024);
}
END_TEST

START_TEST(test_pool_bytes)
{
	ck_assert_uint_eq(parse_ok("max_pool_bytes = 0").pool.max_pool_bytes, 0);
	ck_assert_uint_eq(parse_ok("max_pool_bytes = 4096").pool.max_pool_bytes, 4096);
	ck_assert_uint_eq(parse_ok("max_pool_bytes = 192M").pool.max_pool_bytes, 192u << 20);
	ck_assert_uint_eq(parse_ok("max_pool_bytes = 64 KiB").pool.max_pool_bytes, 64u << 10);
	ck_assert_uint_eq(parse_ok("max_pool_bytes = 2T").pool.max_pool_bytes, UINT64_C(2) << 40);
}
END_TEST

START_TEST(test_log_level)
{
	ck_assert_int_eq(parse_ok("log_level = error").log_level, LOG_LVL_ERR);
	ck_assert_int_eq(parse_ok("log_level = warning").log_level, LOG_LVL_WARNING);
	ck_assert_int_eq(parse_ok("log_level = info").log_level, LOG_LVL_INFO);
	ck_assert_int_eq(parse_ok("log_level = debug").log_level, LOG_LVL_DEBUG);
}
END_TEST

START_TEST(test_mlock)
{
	static const char *const yes[] = { "yes", "true", "on", "1", "YES", "True" };
	static const char *const no[] = { "no", "false", "off", "0", "NO", "Off" };
	char text[64];
	struct cfg c;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		snprintf(text, sizeof(text), "mlock = no\nmlock = %s", yes[i]);
		c = parse_ok(text);
		ck_assert_msg(c.mlock, "%s", yes[i]);
		snprintf(text, sizeof(text), "mlock = %s", no[i]);
		c = parse_ok(text);
		ck_assert_msg(!c.mlock, "%s", no[i]);
	}
}
END_TEST

START_TEST(test_auto_bool)
{
	ck_assert_int_eq(parse_ok("store_incompressible = yes").pool.store_incompressible, CFG_YES);
	ck_assert_int_eq(parse_ok("store_incompressible = On").pool.store_incompressible, CFG_YES);
	ck_assert_int_eq(parse_ok("store_incompressible = no").pool.store_incompressible, CFG_NO);
	ck_assert_int_eq(parse_ok("store_incompressible = 0").pool.store_incompressible, CFG_NO);
	ck_assert_int_eq(parse_ok("store_incompressible = no\nstore_incompressible = AUTO")
				 .pool.store_incompressible,
			 CFG_AUTO);
}
END_TEST

START_TEST(test_syntax)
{
	struct cfg c;

	c = parse_ok("");
	c = parse_ok("\n\n   \n\t\n");
	c = parse_ok("# a comment\n"
		     "   # an indented one = with an equals sign\n"
		     "\t\n"
		     "\t max_pool_percent\t=\t 33  \n"
		     "#max_pool_percent = 99\n"
		     "evict_batch_pages=8\n"
		     "mlock = no\r\n"
		     "log_level =    debug");
	ck_assert_uint_eq(c.pool.max_pool_percent, 33);
	ck_assert_uint_eq(c.agent.evict_batch_pages, 8);
	ck_assert(!c.mlock);
	ck_assert_int_eq(c.log_level, LOG_LVL_DEBUG);
	ck_assert_uint_eq(c.pool.accept_threshold_percent, 90);
}
END_TEST

START_TEST(test_repeated_key)
{
	struct cfg c;

	c = parse_ok("max_pool_percent = 10\nmlock = no\nmax_pool_percent = 30\n");
	ck_assert_uint_eq(c.pool.max_pool_percent, 30);
	c = parse_ok("socket = /a\nsocket = /bb\nsocket = /c\n");
	ck_assert_str_eq(c.socket, "/c");
}
END_TEST

static const struct {
	const char *text;
	int r;
	const char *err; /* the whole message */
} bad[] = {
	{ "max_pool_percent = 101", -ERANGE,
	  "test.conf:1: bad value '101' for max_pool_percent: expected 0..100" },
	{ "max_pool_percent = 4294967296", -ERANGE, "expected 0..100" },
	{ "max_pool_percent = 99999999999999999999999", -ERANGE, "expected 0..100" },
	{ "max_pool_percent = -1", -EINVAL, "bad value '-1' for max_pool_percent" },
	{ "max_pool_percent = +1", -EINVAL, "bad value '+1'" },
	{ "max_pool_percent = 1.5", -EINVAL, "bad value '1.5'" },
	{ "max_pool_percent = 0x10", -EINVAL, "bad value '0x10'" },
	{ "max_pool_percent = 20%", -EINVAL, "bad value '20%'" },
	{ "max_pool_percent = 20 # percent", -EINVAL, "bad value '20 # percent'" },
	{ "accept_threshold_percent = 101", -ERANGE,
	  "bad value '101' for accept_threshold_percent: expected 0..100" },
	{ "max_compressed_percent = 0", -ERANGE,
	  "bad value '0' for max_compressed_percent: expected 1..100" },
	{ "max_compressed_percent = 101", -ERANGE, "expected 1..100" },
	{ "fault_spin_usec = 10001", -ERANGE, "bad value '10001' for fault_spin_usec: expected 0..10000" },
	{ "fault_idle_poll_ms = 1001", -ERANGE, "bad value '1001' for fault_idle_poll_ms: expected 0..1000" },
	{ "evict_batch_pages = 0", -ERANGE, "bad value '0' for evict_batch_pages: expected 1..1024" },
	{ "evict_batch_pages = 1025", -ERANGE, "expected 1..1024" },
	{ "evict_batch_pages = many", -EINVAL, "expected 1..1024" },
	{ "proactive_refault_permille = 1001", -ERANGE,
	  "bad value '1001' for proactive_refault_permille: expected 0..1000" },
	{ "proactive_stall_permille = -1", -EINVAL, "for proactive_stall_permille: expected 0..1000" },
	{ "cgroup_headroom_percent = 0", -ERANGE,
	  "bad value '0' for cgroup_headroom_percent: expected 1..50" },
	{ "cgroup_headroom_percent = 51", -ERANGE, "expected 1..50" },
	{ "pressure_stall_ms = 2001", -ERANGE,
	  "bad value '2001' for pressure_stall_ms: expected 0..2000" },
	{ "prefetch_pages = 65", -ERANGE, "bad value '65' for prefetch_pages: expected 0..64" },
	{ "nice = -21", -ERANGE, "bad value '-21' for nice: expected -20..19" },
	{ "nice = 20", -ERANGE, "bad value '20' for nice: expected -20..19" },
	{ "nice = -99999999999999999999", -ERANGE, "for nice" },
	{ "nice = +5", -EINVAL, "bad value '+5' for nice" },
	{ "nice = -", -EINVAL, "bad value '-' for nice" },
	{ "nice = --1", -EINVAL, "for nice" },
	{ "nice = high", -EINVAL, "for nice: expected -20..19" },
	{ "pressure_stall_ms = 1.5", -EINVAL, "for pressure_stall_ms: expected 0..2000" },
	{ "follow_cgroup_limits = sometimes", -EINVAL,
	  "bad value 'sometimes' for follow_cgroup_limits: expected yes or no" },
	{ "max_pool_bytes = 1.5G", -EINVAL, "bad value '1.5G' for max_pool_bytes: expected a size" },
	{ "max_pool_bytes = -1", -EINVAL, "for max_pool_bytes" },
	{ "max_pool_bytes = 12Mx", -EINVAL, "for max_pool_bytes" },
	{ "max_pool_bytes = 16777216T", -ERANGE, "bad value '16777216T' for max_pool_bytes" },
	{ "recompressor = gzip", -EINVAL,
	  "bad value 'gzip' for recompressor: expected lzo, lz4, zstd or none" },
	{ "recompressor = None", -EINVAL, "for recompressor" },
	{ "recompress_seconds = 0", -ERANGE,
	  "bad value '0' for recompress_seconds: expected 1..86400" },
	{ "recompress_seconds = 86401", -ERANGE, "expected 1..86400" },
	{ "compressor = gzip", -EINVAL,
	  "test.conf:1: bad value 'gzip' for compressor: expected lzo, lz4 or zstd" },
	{ "log_level = verbose", -EINVAL,
	  "bad value 'verbose' for log_level: expected error, warning, info or debug" },
	{ "log_level = 7", -EINVAL, "for log_level" },
	{ "mlock = maybe", -EINVAL, "test.conf:1: bad value 'maybe' for mlock: expected yes or no" },
	{ "mlock = 2", -EINVAL, "for mlock" },
	{ "store_incompressible = maybe", -EINVAL,
	  "test.conf:1: bad value 'maybe' for store_incompressible: expected yes, no or auto" },
	{ "store_incompressible = autox", -EINVAL, "for store_incompressible" },
	{ "mlock = auto", -EINVAL, "bad value 'auto' for mlock" },
	{ "socket = run/zswapd.sock", -EINVAL,
	  "bad value 'run/zswapd.sock' for socket: expected an absolute path shorter than 108 bytes" },
	{ "socket = /xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	  -ENAMETOOLONG, "for socket" },
	{ "foo = 1", -EINVAL, "test.conf:1: unknown key 'foo'" },
	{ "Max_pool_percent = 1", -EINVAL, "test.conf:1: unknown key 'Max_pool_percent'" },
	{ "max pool percent = 1", -EINVAL, "unknown key 'max pool percent'" },
	{ "\n# comment\n\nfoo = 1\nmlock = no\n", -EINVAL, "test.conf:4: unknown key 'foo'" },
	{ "mlock = no\nmax_pool_percent = 101\n", -ERANGE, "test.conf:2: bad value '101'" },
	{ "max_pool_percent 20", -EINVAL, "test.conf:1: expected 'key = value'" },
	{ "mlock = no\nmlock\n", -EINVAL, "test.conf:2: expected 'key = value'" },
	{ "max_pool_percent =", -EINVAL, "test.conf:1: empty value for max_pool_percent" },
	{ "max_pool_percent =  \t ", -EINVAL, "test.conf:1: empty value for max_pool_percent" },
	{ " = 20", -EINVAL, "test.conf:1: missing key" },
	{ "foo =", -EINVAL, "test.conf:1: unknown key 'foo'" },
};

/* Each bad text fails with its code and message and changes nothing. */
START_TEST(test_bad)
{
	struct cfg c, before;
	char err[512] = "";
	int r;

	nondefault(&c);
	before = c;
	r = cfg_parse_text(&c, bad[_i].text, "test.conf", err, sizeof(err));
	ck_assert_msg(r == bad[_i].r, "'%s' gave %d, want %d (%s)", bad[_i].text, r, bad[_i].r,
		      err);
	ck_assert_msg(strncmp(err, "test.conf:", 10) == 0, "'%s' gave '%s'", bad[_i].text, err);
	ck_assert_msg(strstr(err, bad[_i].err), "'%s' gave '%s', want '%s'", bad[_i].text, err,
		      bad[_i].err);
	assert_cfg_eq(&c, &before);
}
END_TEST

/* Good lines before the bad one must not leak into the caller's struct. */
START_TEST(test_unchanged_on_error)
{
	static const char text[] = "socket = /x.sock\n"
				   "compressor = lzo\n"
				   "max_pool_percent = 1\n"
				   "max_pool_bytes = 1M\n"
				   "accept_threshold_percent = 2\n"
				   "max_compressed_percent = 3\n"
				   "evict_batch_pages = 4\n"
				   "log_level = error\n"
				   "mlock = yes\n"
				   "evict_batch_pages = 1025\n";
	struct cfg c, before;
	char err[256] = "";

	nondefault(&c);
	before = c;
	ck_assert_int_eq(cfg_parse_text(&c, text, "x.conf", err, sizeof(err)), -ERANGE);
	ck_assert_str_eq(err, "x.conf:10: bad value '1025' for evict_batch_pages: expected 1..1024");
	assert_cfg_eq(&c, &before);
}
END_TEST

START_TEST(test_long_line)
{
	size_t n = 4095 + 64;
	char *text = malloc(n + 16);
	char err[256] = "";
	struct cfg c, before;

	ck_assert_ptr_nonnull(text);
	/* a 4095-character comment line is fine */
	memset(text, 'x', n);
	text[0] = '#';
	text[4095] = '\n';
	strcpy(text + 4096, "mlock = no\n");
	parse_ok(text);
	ck_assert(!parse_ok(text).mlock);

	/* 4096 characters is one too many, even for a comment */
	memset(text, 'x', n);
	strcpy(text, "mlock = no\n");
	text[11] = '#';
	text[11 + 4096] = '\0';
	nondefault(&c);
	before = c;
	ck_assert_int_eq(cfg_parse_text(&c, text, "long.conf", err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "long.conf:2: line longer than 4095 characters");
	assert_cfg_eq(&c, &before);

	/* a 4095-character value reaches its parser whole */
	memset(text, 'x', n);
	memcpy(text, "socket = /", 10);
	text[4095] = '\0';
	ck_assert_int_eq(cfg_parse_text(&c, text, "long.conf", err, sizeof(err)), -ENAMETOOLONG);
	ck_assert_ptr_nonnull(strstr(err, "long.conf:1: bad value '/xxx"));
	free(text);
}
END_TEST

START_TEST(test_err_buffer)
{
	struct cfg c;
	char err[12];

	cfg_defaults(&c);
	ck_assert_int_eq(cfg_parse_text(&c, "foo = 1", "test.conf", NULL, 0), -EINVAL);
	memset(err, 'z', sizeof(err));
	ck_assert_int_eq(cfg_parse_text(&c, "foo = 1", "test.conf", err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "test.conf:1");
	memset(err, 'z', sizeof(err));
	ck_assert_int_eq(cfg_parse_text(&c, "foo = 1", "t", err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "t:1: unknow");
	/* untouched on success */
	ck_assert_int_eq(cfg_parse_text(&c, "mlock = no", "t", err, sizeof(err)), 0);
	ck_assert_str_eq(err, "t:1: unknow");
}
END_TEST

START_TEST(test_pool_limit)
{
	struct cfg c;

	cfg_defaults(&c);
	ck_assert_uint_eq(cfg_pool_limit(&c, 1000), 200);
	ck_assert_uint_eq(cfg_pool_limit(&c, UINT64_C(24) << 30), (UINT64_C(24) << 30) / 5);
	c.pool.max_pool_percent = 33;
	ck_assert_uint_eq(cfg_pool_limit(&c, 1001), 330);
	ck_assert_uint_eq(cfg_pool_limit(&c, 99), 32);
	c.pool.max_pool_percent = 100;
	ck_assert_uint_eq(cfg_pool_limit(&c, UINT64_MAX), UINT64_MAX);
	c.pool.max_pool_percent = 50;
	ck_assert_uint_eq(cfg_pool_limit(&c, UINT64_MAX), UINT64_MAX / 2);
	c.pool.max_pool_percent = 0;
	ck_assert_uint_eq(cfg_pool_limit(&c, 1000), 0);
	c.pool.max_pool_bytes = 4096;
	ck_assert_uint_eq(cfg_pool_limit(&c, 1000), 4096);
	c.pool.max_pool_percent = 20;
	ck_assert_uint_eq(cfg_pool_limit(&c, UINT64_C(1) << 40), 4096);
}
END_TEST

/* Writes len bytes of data to a new temporary file; returns its path. */
static char *write_temp(const void *data, size_t len)
{
	char *path = strdup("/tmp/check_cfg.XXXXXX");
	int fd;

	ck_assert_ptr_nonnull(path);
	fd = mkostemp(path, O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

START_TEST(test_file)
{
	static const char text[] = "# test\nmax_pool_percent = 42\nmlock = off\n";
	char *path = write_temp(text, strlen(text));
	char err[256] = "", want[300];
	struct cfg c;

	cfg_defaults(&c);
	ck_assert_msg(cfg_parse_file(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.pool.max_pool_percent, 42);
	ck_assert(!c.mlock);
	unlink(path);
	free(path);

	path = write_temp("mlock = no\nbogus = 1\n", 21);
	ck_assert_int_eq(cfg_parse_file(&c, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: unknown key 'bogus'", path);
	ck_assert_str_eq(err, want);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_file_errors)
{
	char err[256] = "";
	struct cfg c, before;
	char *path;

	nondefault(&c);
	before = c;
	ck_assert_int_eq(cfg_parse_file(&c, "/nonexistent/zswapd.conf", err, sizeof(err)),
			 -ENOENT);
	ck_assert_str_eq(err, "/nonexistent/zswapd.conf: No such file or directory");
	ck_assert_int_eq(cfg_parse_file(&c, "/tmp", err, sizeof(err)), -EISDIR);
	ck_assert_str_eq(err, "/tmp: Is a directory");

	path = write_temp("mlock = no\0mlock = yes\n", 23);
	ck_assert_int_eq(cfg_parse_file(&c, path, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "NUL"));
	ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
	unlink(path);
	free(path);
	assert_cfg_eq(&c, &before);
}
END_TEST

/* Blank lines up to exactly 1 MiB are a valid file; one byte more is not. */
START_TEST(test_file_size_limit)
{
	size_t max = 1024 * 1024;
	char *data = malloc(max + 1);
	char err[256] = "";
	struct cfg c, before;
	char *path;

	ck_assert_ptr_nonnull(data);
	memset(data, '\n', max + 1);
	memcpy(data + max - 11, "mlock = no\n", 11);
	path = write_temp(data, max);
	nondefault(&c);
	c.mlock = true;
	ck_assert_msg(cfg_parse_file(&c, path, err, sizeof(err)) == 0, "%s", err);
	ck_assert(!c.mlock);
	unlink(path);
	free(path);

	path = write_temp(data, max + 1);
	before = c;
	ck_assert_int_eq(cfg_parse_file(&c, path, err, sizeof(err)), -EFBIG);
	ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
	assert_cfg_eq(&c, &before);
	unlink(path);
	free(path);
	free(data);
}
END_TEST

static char *read_sample(void)
{
	FILE *f = fopen(SAMPLE_CONF, "re");
	char *text;
	long len;

	ck_assert_msg(f != NULL, "cannot open %s (run from the repo root)", SAMPLE_CONF);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_gt(len, 0);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return text;
}

/* Strips the '#' of every "#key = value" line; *ret_n counts them. */
static char *uncomment(const char *text, unsigned *ret_n)
{
	char *out = malloc(strlen(text) + 1), *o = out, *line;
	const char *p = text;
	regex_t re;
	unsigned n = 0;

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(regcomp(&re, "^#[a-z_]+ =", REG_EXTENDED | REG_NOSUB), 0);
	while (*p) {
		const char *eol = strchrnul(p, '\n');
		size_t len = (size_t)(eol - p) + (*eol ? 1 : 0);

		line = strndup(p, (size_t)(eol - p));
		ck_assert_ptr_nonnull(line);
		if (regexec(&re, line, 0, NULL, 0) == 0) {
			p++;
			len--;
			n++;
		}
		free(line);
		memcpy(o, p, len);
		o += len;
		p += len;
	}
	*o = '\0';
	regfree(&re);
	*ret_n = n;
	return out;
}

/*
 * conf/zswapd.conf as shipped changes nothing, and with every key
 * uncommented it resets a configuration that differs from the defaults in
 * every field back to exactly the defaults: every key is in the file, at
 * its default, and the file parses.
 */
START_TEST(test_sample_conf)
{
	struct cfg c, before, defaults;
	char err[512] = "";
	char *text, *live;
	unsigned n;

	cfg_defaults(&defaults);
	nondefault(&c);
	before = c;
	ck_assert_msg(cfg_parse_file(&c, SAMPLE_CONF, err, sizeof(err)) == 0, "%s", err);
	assert_cfg_eq(&c, &before);

	text = read_sample();
	live = uncomment(text, &n);
	ck_assert_uint_eq(n, NKEYS);
	ck_assert_str_ne(live, text);
	ck_assert_msg(cfg_parse_text(&c, live, "uncommented " SAMPLE_CONF, err, sizeof(err)) == 0,
		      "%s", err);
	assert_cfg_eq(&c, &defaults);
	free(live);
	free(text);
}
END_TEST

/* The uncomment() helper itself: it must not turn prose into settings. */
START_TEST(test_uncomment_helper)
{
	unsigned n;
	char *out = uncomment("# Pool size = x\n#mlock = no\n #evict_batch_pages = 2\n#a_b =", &n);

	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(out, "# Pool size = x\nmlock = no\n #evict_batch_pages = 2\na_b =");
	free(out);
}
END_TEST

static Suite *cfg_suite(void)
{
	Suite *s = suite_create("cfg");
	TCase *tc = tcase_create("values");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_nondefault_differs);
	tcase_add_test(tc, test_socket);
	tcase_add_test(tc, test_socket_access);
	tcase_add_test(tc, test_compressor);
	tcase_add_test(tc, test_percent_bounds);
	tcase_add_test(tc, test_pool_bytes);
	tcase_add_test(tc, test_log_level);
	tcase_add_test(tc, test_mlock);
	tcase_add_test(tc, test_auto_bool);
	tcase_add_test(tc, test_pool_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("syntax");
	tcase_add_test(tc, test_syntax);
	tcase_add_test(tc, test_repeated_key);
	tcase_add_loop_test(tc, test_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_unchanged_on_error);
	tcase_add_test(tc, test_long_line);
	tcase_add_test(tc, test_err_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_test(tc, test_file);
	tcase_add_test(tc, test_file_errors);
	tcase_add_test(tc, test_file_size_limit);
	tcase_add_test(tc, test_uncomment_helper);
	tcase_add_test(tc, test_sample_conf);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cfg_suite());

	return check_run(sr);
}
