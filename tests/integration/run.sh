#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Integration tests: a real zswapd on a temporary socket, real processes under
# the shim.  Every test asserts something that fails if one byte comes back
# wrong, a counter lies, or the daemon misbehaves; a test that needs what the
# machine lacks says SKIP and why.  Timings are never asserted here (the
# machines are noisy): they belong in tests/bench.
#
# Usage: tests/integration/run.sh [NAME...]   (BUILD=build by default)
#
# With no NAME every test runs, area after area in the order of AREAS below.
# Each NAME is a test's (the word after `run` in an area_*() list:
# `run.sh crash_chaos fork` runs those two) or an area's, which runs every
# test of that area (`run.sh crashes` runs all of t_crashes.sh).  So that
# both work, no test is named as an area (the tests crash, limit and upgrade
# are in the areas crashes, limits and upgrades), and run() fails a test
# named as an area.  A NAME that is neither is said, and counts as failed.
#
# The files: lib.sh, what every test shares (the daemon, run(), helpers used
# in more than one area); t_AREA.sh, one per area, with its tests (t_NAME),
# the helpers only it uses, and area_AREA(), its `run NAME t_NAME` lines in
# order.  A new test goes in its area's file, and in that area's list.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ONLY=("$@")
# The areas, in the order they run (each t_AREA.sh says what it holds).
AREAS=(basic agents clients hostile limits policy tiers lifecycle faults deaths upgrades crashes)

. "$HERE/lib.sh" || exit 1
for area in "${AREAS[@]}"; do
	. "$HERE/t_$area.sh" || { echo "integration: cannot read $HERE/t_$area.sh"; exit 1; }
done

if [ "$(id -u)" -ne 0 ]; then
	echo "integration: SKIP all (zswapd needs root for /dev/userfaultfd and CAP_SYS_PTRACE)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
if [ ! -c /dev/userfaultfd ]; then
	echo "integration: SKIP all (no /dev/userfaultfd: kernel without CONFIG_USERFAULTFD)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

# Proactive eviction and followed cgroup limits act by themselves, on by
# default: off for the suite, whose tests ask for what they check (their own
# tests turn them on).  The socket is open to every user: tests run
# processes as users outside the zswapd group (socket_perms checks the default).
printf 'socket = %s\nsocket_mode = 0666\nlog_level = info\nidle_evict_seconds = 0\nfollow_cgroup_limits = no\n' \
	"$ZSWAP_SOCKET" >"$TMP/zswapd.conf"
cp "$TMP/zswapd.conf" "$TMP/zswapd.conf.base"
start_daemon || exit 1

for AREA in "${AREAS[@]}"; do
	"area_$AREA"
done

for name in ${ONLY[@]+"${ONLY[@]}"}; do
	if [[ ! " ${AREAS[*]} ${NAMES[*]} " == *" $name "* ]]; then
		echo "integration: no test or area is named $name"
		FAIL=$((FAIL + 1))
	fi
done

if ! stop_daemon; then
	echo "zswapd did not stop cleanly at the end"
	FAIL=$((FAIL + 1))
fi
echo "integration: $PASS passed, $FAIL failed, $SKIP skipped"
[ $FAIL -eq 0 ]
