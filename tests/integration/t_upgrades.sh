# SPDX-License-Identifier: GPL-2.0-only
#
# Area upgrades: zswapd upgraded in place (SIGUSR2, zswapctl upgrade, make
# start) with every page handed over: to another build, from an old
# image version, under load, under redis, and killed in the middle.

# What the pool's arena holds (bytes), and how many descriptors of it the daemon has.
arena_of() {
	local f n=0 bytes=0
	for f in /proc/"$1"/fd/*; do
		case $(readlink "$f") in
		/memfd:zswapd-pool*) n=$((n + 1)); bytes=$(stat -L -c '%b * %B' "$f") ;;
		esac
	done
	echo "$n $((bytes))"
}

# upgrade_wait N: until zswapd has taken over N times (30 s at most).
upgrade_wait() {
	for _ in $(seq 600); do
		[ "$(stat_of upgrades)" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# upgrade_to_new N: a new file at the daemon's path, then SIGUSR2; waits for upgrades = N.
upgrade_to_new() {
	cp "$B/zswapd" "$TMP/bin/zswapd.new" && mv "$TMP/bin/zswapd.new" "$TMP/bin/zswapd"
	kill -USR2 "$(dpid)"
	upgrade_wait "$1"
}

# upgrade_setup NAME: a zswapd with a pool and a swap file, a process with
# 32 MiB evicted (pid in a) and one with 16 MiB that forked a child sharing
# them (b), part of it on disk; its counters in $TMP/NAME.before, its pid in dp.
upgrade_setup() {
	restart_with "max_pool_bytes = 8M" "swap_file = $TMP/swap" "swap_file_size = 128M"
	dp=$(dpid)
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 32 >"$TMP/$1_a.out" &
	a=$!
	LD_PRELOAD=$SHIM "$MEMTEST" fork-wait 16 >"$TMP/$1_b.out" &
	b=$!
	for _ in $(seq 400); do
		grep -q evicted "$TMP/$1_a.out" && grep -q evicted "$TMP/$1_b.out" && break
		sleep 0.05
	done
	sleep 0.5 # the child's registration
	"$CTL" stats >"$TMP/$1.before"
	[ "$(stat_in "$TMP/$1.before" written_back_pages)" -gt 1000 ] # some on disk
}

t_upgrade() {
	# SIGUSR2 execs the binary now at the path zswapd was started from, in
	# the same process, and hands it every page (pool, swap file), process
	# and connection: nothing is faulted back, every byte comes back right.
	mkdir -p "$TMP/bin" && cp "$B/zswapd" "$TMP/bin/zswapd"
	zswapd_bin() { "$TMP/bin/zswapd" "$@"; }
	local dp a b before after
	upgrade_setup up
	"$CTL" list --json >"$TMP/up_list.before"
	upgrade_to_new 1
	[ "$(dpid)" = "$dp" ] && kill -0 "$dp"
	# The new file runs now, not the replaced one.
	[ "$(readlink "/proc/$dp/exe")" = "$TMP/bin/zswapd" ]
	"$CTL" stats >"$TMP/up.after"
	# The pool was handed over, not copied: one arena, holding no more than
	# the pool's size, and the image is gone.
	local arena; arena=$(arena_of "$dp")
	echo "result: upgrade: arena descriptors and bytes: $arena; pool_total_size $(stat_in "$TMP/up.after" pool_total_size)"
	[ "${arena% *}" = 1 ]
	[ "${arena#* }" -gt 0 ] && [ "${arena#* }" -le "$(stat_in "$TMP/up.after" pool_total_size)" ]
	if ls -l /proc/"$dp"/fd | grep -q zswapd-handover; then false; fi
	# Then, while serving, the new binary maps (so locks) every page of it.
	for _ in $(seq 100); do grep -q "pool is locked again" "$TMP/daemon.log" && break; sleep 0.05; done
	grep "pool is locked again" "$TMP/daemon.log"
	[ "$(awk '/^RssShmem/ { print $2 * 1024 }' /proc/"$dp"/status)" -ge "${arena#* }" ]
	"$CTL" list --json >"$TMP/up_list.after"
	cat "$TMP/daemon.log"
	for k in stored_pages swap_used_bytes compressed_bytes loads stores written_back_pages; do
		before=$(stat_in "$TMP/up.before" $k); after=$(stat_in "$TMP/up.after" $k)
		echo "result: upgrade: $k $before -> $after"
		[ "$before" = "$after" ]
	done
	python3 - "$TMP/up_list.before" "$TMP/up_list.after" <<'PY'
import json, sys
before, after = (json.load(open(f)) for f in sys.argv[1:])
key = lambda ts: {t['pid']: (t['evicted_pages'], t['compressed_bytes']) for t in ts}
assert len(before) == 3 and key(before) == key(after), (before, after)
for b, a in zip(sorted(before, key=lambda t: t['pid']), sorted(after, key=lambda t: t['pid'])):
    assert a['resident_pages'] <= b['resident_pages'] + 8, (b, a) # nothing faulted back
PY
	# Again while threads write and reclaim: their batches finish first.
	# Asked by zswapctl this time, which the new binary answers; root only.
	# To another build: the same sources at -O0, other code and layout.
	make -C "$ROOT" -s BUILD="$TMP/b0" CFLAGS="-O0 -g" "$TMP/b0/zswapd" >/dev/null
	echo "result: upgrade: then to an -O0 build, $(stat -c %s "$TMP/b0/zswapd") bytes against $(stat -c %s "$B/zswapd")"
	LD_PRELOAD=$SHIM "$MEMTEST" threads >"$TMP/up_t.out" &
	local th=$!
	sleep 1
	if command -v setpriv >/dev/null; then
		refute setpriv --reuid=65534 --regid=65534 --clear-groups env ZSWAP_SOCKET="$ZSWAP_SOCKET" \
			"$CTL" upgrade 2>"$TMP/up_denied.err"
		grep -q "only root may upgrade" "$TMP/up_denied.err"
	fi
	cp "$TMP/b0/zswapd" "$TMP/bin/zswapd.new" && mv "$TMP/bin/zswapd.new" "$TMP/bin/zswapd"
	"$CTL" upgrade | tee "$TMP/up_ctl.out"
	grep -q "upgraded in place: 4 processes and [0-9]* evicted pages handed over" "$TMP/up_ctl.out"
	[ "$(stat_of upgrades)" = 2 ]
	wait $th
	cat "$TMP/up_t.out"
	# A binary that cannot take over is refused, and nothing changes.
	chmod -x "$TMP/bin/zswapd"
	refute "$CTL" upgrade 2>"$TMP/up_refused.err"
	cat "$TMP/up_refused.err"
	grep -q "cannot take over" "$TMP/up_refused.err" "$TMP/daemon.log"
	kill -USR2 "$dp"
	sleep 0.5
	[ "$(stat_of upgrades)" = 2 ]
	# One that never answers is given 5 s and killed, and zswapd serves
	# all along: a request answers at once meanwhile.
	mv "$TMP/bin/zswapd" "$TMP/bin/zswapd.real"
	printf '#!/bin/sh\nexec sleep 59.25\n' >"$TMP/bin/zswapd" && chmod +x "$TMP/bin/zswapd"
	local t0 t1
	t0=$(date +%s%N)
	"$CTL" upgrade 2>"$TMP/up_hang.err" &
	local up=$!
	sleep 1
	timeout 1 "$CTL" stats >/dev/null
	pgrep -f "^sleep 59.25" >/dev/null # the binary under check runs
	refute wait $up
	t1=$(date +%s%N)
	cat "$TMP/up_hang.err"
	grep -q "cannot take over" "$TMP/up_hang.err"
	grep -q "no answer within 5 s" "$TMP/daemon.log"
	echo "result: upgrade: a binary that never answers refused after $(( (t1 - t0) / 1000000 )) ms"
	refute pgrep -f "^sleep 59.25" >/dev/null
	[ "$(stat_of upgrades)" = 2 ]
	mv "$TMP/bin/zswapd.real" "$TMP/bin/zswapd"
	chmod +x "$TMP/bin/zswapd"
	kill -USR1 $a $b
	wait $a
	wait $b
	# A stop still drains, and exits 0.
	stop_daemon
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	zswapd_bin() { "$B/zswapd" "$@"; }
	start_daemon
	# Something that is not an image is refused before anything starts.
	local rc=0
	printf 'not a handover image' >"$TMP/junk"
	ZSWAPD_HANDOVER_FD=7 "$B/zswapd" -f -s "$TMP/junk.sock" 7<"$TMP/junk" 2>"$TMP/junk.err" || rc=$?
	cat "$TMP/junk.err"
	[ $rc -eq 1 ] && grep -q "not one this zswapd reads" "$TMP/junk.err" && [ ! -e "$TMP/junk.sock" ]
}

t_upgrade_soak() {
	# Upgrade after upgrade while the hazards run (writers racing batches,
	# a parent and children sharing entries, discards, mremaps racing
	# reclaims) and the pool writes back to a swap file: each program
	# checks every byte it wrote.
	restart_with "max_pool_bytes = 16M" "swap_file = $TMP/swap" "swap_file_size = 256M"
	local -a pids=()
	local h p n=0 rc=0 alive
	for h in threads churn fork_reclaim discard mremap_race; do
		LD_PRELOAD=$SHIM "$MEMTEST" $h >"$TMP/soak_$h.out" 2>&1 &
		pids+=($!)
	done
	for _ in $(seq 200); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive -eq 1 ] || break
		kill -USR2 "$(dpid)"
		n=$((n + 1))
		upgrade_wait $n || { echo "upgrade $n did not happen"; rc=1; break; }
		sleep 0.1
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	cat "$TMP"/soak_*.out
	echo "result: upgrade_soak: $n upgrades while the hazards ran, $(grep -c abandoned "$TMP/daemon.log") abandoned"
	[ $rc -eq 0 ] && [ $n -ge 5 ]
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

t_upgrade_redis() {
	# A real program: redis-server, 80% of its memory evicted, answers GETs
	# from redis-benchmark through 20 upgrades: no client error, and its
	# data (DEBUG DIGEST) is unchanged.
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
		skip "redis-server or redis-benchmark not installed"
	local i
	redis_under_gets
	for i in $(seq 20); do
		kill -USR2 "$(dpid)"
		upgrade_wait "$i"
		sleep 0.2
	done
	redis_checked
	echo "result: upgrade_redis: 20 upgrades under GETs, $("$CTL" list | awk -v p="$rpid" '$1 == p { print $4 }') evicted at the end, digest unchanged"
	redis_stop
}

# The last commit whose zswapd writes handover image version 1 (its pool
# copied through the image, before the pool lived in a memfd).
UPGRADE_V1_COMMIT=0a6d8cf

t_upgrade_v1() {
	# A zswapd built before the pool lived in a memfd writes image version 1;
	# this binary still reads it, and says so the way that build asks
	# (--handover-version), so the upgrade from it keeps every page.
	git -C "$ROOT" cat-file -e "$UPGRADE_V1_COMMIT^{commit}" 2>/dev/null ||
		skip "no git history with $UPGRADE_V1_COMMIT to build the old zswapd from"
	mkdir -p "$TMP/v1" "$TMP/bin"
	git -C "$ROOT" archive "$UPGRADE_V1_COMMIT" | tar -x -C "$TMP/v1"
	make -C "$TMP/v1" -s BUILD="$TMP/v1/build" "$TMP/v1/build/zswapd" >/dev/null
	cp "$TMP/v1/build/zswapd" "$TMP/bin/zswapd"
	zswapd_bin() { "$TMP/bin/zswapd" "$@"; }
	local dp a b k before after
	# That build knows no socket_mode (its socket is open to all anyway).
	cp "$TMP/zswapd.conf.base" "$TMP/v1.conf.base"
	grep -v '^socket_mode' "$TMP/v1.conf.base" >"$TMP/zswapd.conf.base"
	upgrade_setup v1
	upgrade_to_new 1
	"$CTL" stats >"$TMP/v1.after"
	grep -q "took over 3 processes" "$TMP/daemon.log"
	[ "$(readlink "/proc/$dp/exe")" = "$TMP/bin/zswapd" ]
	for k in stored_pages swap_used_bytes compressed_bytes loads stores; do
		before=$(stat_in "$TMP/v1.before" $k); after=$(stat_in "$TMP/v1.after" $k)
		echo "result: upgrade_v1: $k $before -> $after"
		[ "$before" = "$after" ]
	done
	# From here on this binary's pool is a memfd: the next upgrade hands it over.
	upgrade_to_new 2
	[ "$(arena_of "$dp" | cut -d' ' -f1)" = 1 ]
	# Back to the old build is refused: it cannot read this binary's image.
	cp "$TMP/v1/build/zswapd" "$TMP/bin/zswapd.new" && mv "$TMP/bin/zswapd.new" "$TMP/bin/zswapd"
	refute "$CTL" upgrade 2>"$TMP/v1_refused.err"
	grep -q "cannot take over" "$TMP/v1_refused.err"
	[ "$(stat_of upgrades)" = 2 ]
	kill -USR1 $a $b
	wait $a
	wait $b
	cat "$TMP/v1_a.out" "$TMP/v1_b.out"
	stop_daemon
	cp "$TMP/v1.conf.base" "$TMP/zswapd.conf.base"
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	zswapd_bin() { "$B/zswapd" "$@"; }
	start_daemon
}

t_upgrade_killed() {
	# zswapd SIGKILLed in the middle of an upgrade (quiescing, writing the
	# image, exec'ing, reading it back): what holds for any death holds, the
	# process aborts at its next touch of an evicted page, saying why; it
	# never hangs, never reads a wrong page.
	local delay pid rc
	for delay in 0 0.01 0.03 0.1; do
		LD_PRELOAD=$SHIM "$MEMTEST" evict-then-touch 64 >"$TMP/ukill.out" 2>"$TMP/ukill.err" &
		pid=$!
		for _ in $(seq 200); do grep -q evicted "$TMP/ukill.out" && break; sleep 0.05; done
		kill -USR2 "$(dpid)"
		sleep "$delay"
		kill -KILL "$(dpid)"
		[ "$(wait_daemon_exit)" = 137 ]
		kill -USR1 $pid
		rc=0; wait $pid || rc=$?
		echo "result: upgrade_killed: killed ${delay}s into an upgrade: $(grep -c . "$TMP/daemon.log") log lines, the process ended with $rc"
		cat "$TMP/ukill.err"
		[ $rc -eq $((128 + 6)) ] # SIGABRT
		grep -q "aborting rather than letting it read zeros" "$TMP/ukill.err"
		start_daemon
	done
}

t_make_start() {
	# `make start` without systemd: starts the installed zswapd; run again,
	# it upgrades that zswapd in place, and a served process keeps its pages.
	[ -d /run/systemd/system ] && skip "systemd runs this machine: make start goes through it"
	local root=$TMP/started dp pid
	export ZSWAP_SOCKET=$TMP/started.sock
	mstart() {
		make -C "$ROOT" -s start BUILD="${BUILD:-build}" DESTDIR="$root" PREFIX=/usr \
			UNITDIR=/lib/systemd/system LOGFILE="$TMP/started.log"
	}
	mstart
	dp=$(pgrep -of "^$root/usr/sbin/zswapd ")
	STARTED_DPID=$dp
	trap 'kill -TERM "$STARTED_DPID" 2>/dev/null || true' EXIT # whatever happens here
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 16 >"$TMP/started.out" &
	pid=$!
	for _ in $(seq 200); do grep -q evicted "$TMP/started.out" && break; sleep 0.05; done
	local loads; loads=$(stat_of loads)
	mstart | tee "$TMP/started.say"
	grep -q "upgraded in place: 1 processes" "$TMP/started.say"
	[ "$(pgrep -of "^$root/usr/sbin/zswapd ")" = "$dp" ]
	[ "$(stat_of upgrades)" = 1 ]
	[ $(($(stat_of loads) - loads)) -lt 16 ] # nothing faulted back
	kill -USR1 $pid
	wait $pid
	kill -TERM "$dp"
	wait_gone "$dp" 60
	cat "$TMP/started.log"
}

area_upgrades() {
	run upgrade t_upgrade
	run make_start t_make_start
	run upgrade_soak t_upgrade_soak
	run upgrade_killed t_upgrade_killed
	run upgrade_v1 t_upgrade_v1
	run upgrade_redis t_upgrade_redis
}
