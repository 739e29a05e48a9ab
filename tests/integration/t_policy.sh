# SPDX-License-Identifier: GPL-2.0-only
#
# Area policy: what the daemon decides by itself: proactive eviction of
# cold pages, host memory pressure, one budget for a group of processes,
# and the memory limits of cgroups it follows.

t_proactive() {
	no_rss_under_tsan
	# Proactive eviction (idle_evict_seconds; on by default, off in the rest
	# of the suite): nothing goes before the process has been served for the
	# cold age; then its cold three quarters go, its hot quarter comes back at
	# once and stays; the refaults of that quarter make its sweeps back off
	# (said once in the log), and the stall and the refault rate show in
	# `list --json` and the counters.  Every byte is checked at the end.
	restart_with "idle_evict_seconds = 4" "hot_window_seconds = 1"
	hold_start "$TMP/pro.out" 64 hot
	local pid=$HOLD_PID kb rf stall backoff ev
	[ "$(stat_of stores)" -eq 0 ] # served for less than the cold age
	sleep 8
	kb=$(awk '/^RssAnon/ { print $2 }' /proc/$pid/status)
	read -r rf stall backoff ev < <("$CTL" list --json | python3 -c "import json,sys
t = [t for t in json.load(sys.stdin) if t['pid'] == $pid][0]
print(t['refaults_per_min'], t['stall_usec'], t['proactive_backoff'], t['evicted_pages'])")
	echo "result: proactive, cold age 4 s: RssAnon $((kb / 1024)) MiB of 64, $((ev / 256)) MiB evicted, $rf refaults/min, stall $((stall / 1000)) ms, backoff x$backoff, $(stat_of proactive_sweeps) sweeps"
	[ "$kb" -lt $((32 * 1024)) ] # the cold 48 MiB went
	[ "$kb" -gt $((8 * 1024)) ]  # the hot 16 MiB came back and stays
	[ "$rf" -gt 0 ]
	[ "$stall" -gt 0 ]
	[ "$(stat_of fault_stall_usec)" -ge "$stall" ]
	[ "$(stat_of proactive_sweeps)" -gt 1 ]
	grep -q "pid $pid: proactive eviction backs off" "$TMP/daemon.log"
	kill -USR1 $pid
	wait $pid
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

t_host_pressure() {
	no_rss_under_tsan
	local root=/sys/fs/cgroup/memory
	[ -f $root/memory.limit_in_bytes ] || skip "no cgroup v1 memory hierarchy here"
	[ -w /proc/pressure/memory ] || skip "no PSI (/proc/pressure/memory) here"
	# Host memory pressure makes proactive eviction act at once: with a cold
	# age of an hour nothing would go for an hour, but when some task on the
	# host stalls on memory (a PSI trigger, here 10 ms in 2 s) every served
	# process is swept: the cold three quarters of this one go.  The pressure is made without squeezing the host:
	# a reader of a file four times the size of its 32M memory cgroup,
	# whose page cache the kernel reclaims there (PSI counts that stall
	# host-wide).  Then SIGHUP with pressure_stall_ms = 0 takes the trigger
	# away, and every byte of the process verifies.
	restart_with "idle_evict_seconds = 3600" "pressure_stall_ms = 10"
	grep -q "host memory pressure events off" "$TMP/daemon.log" && false
	hold_start "$TMP/hp.out" 32 hot
	local pid=$HOLD_PID dir=$root/zswapd-test-hp-$$ kb
	[ "$(stat_of stores)" -eq 0 ]
	mkdir "$dir"
	trap "for _ in \$(seq 50); do rmdir '$dir' 2>/dev/null && break; sleep 0.1; done" EXIT
	echo 32M >"$dir/memory.limit_in_bytes"
	dd if=/dev/urandom of="$TMP/big" bs=1M count=128 oflag=direct status=none
	for _ in $(seq 10); do
		(echo $BASHPID >"$dir/cgroup.procs" && exec cat "$TMP/big" "$TMP/big" >/dev/null)
		[ "$(stat_of pressure_events)" -gt 0 ] && break
	done
	# (its cold three quarters go; the hot quarter comes back)
	for _ in $(seq 100); do
		kb=$(awk '/^RssAnon/ { print $2 }' /proc/$pid/status)
		[ "$kb" -lt $((16 * 1024)) ] && break
		sleep 0.05
	done
	echo "result: host pressure: $(stat_of pressure_events) events, $(stat_of proactive_sweeps) sweeps, RssAnon $((kb / 1024)) MiB of 32"
	[ "$(stat_of pressure_events)" -gt 0 ]
	grep -q "memory pressure (host): cold pages of every served process go now" "$TMP/daemon.log"
	[ "$(stat_of proactive_sweeps)" -gt 0 ]
	[ "$kb" -lt $((16 * 1024)) ]
	printf 'pressure_stall_ms = 0\n' >>"$TMP/zswapd.conf"
	kill -HUP "$(dpid)"
	for _ in $(seq 100); do grep -q "host memory pressure events off" "$TMP/daemon.log" && break; sleep 0.05; done
	grep -q "host memory pressure events off (pressure_stall_ms = 0)" "$TMP/daemon.log"
	kill -USR1 $pid
	wait $pid
	rm -f "$TMP/big"
	rmdir "$dir"
	trap - EXIT
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

# list_resident PID...: each one's resident pages, as `list --json` says.
list_resident() {
	"$CTL" list --json | python3 -c "import json,sys
r = {t['pid']: t['resident_pages'] for t in json.load(sys.stdin)}
print(' '.join(str(r.get(int(p), -1)) for p in sys.argv[1:]))" "$@"
}

t_group_budget() {
	no_rss_under_tsan
	# One budget for every served process (zswapctl limit --all): three of
	# 64 MiB, one idle, one with a hot quarter, one touching all of itself,
	# under 80M.  The group holds the budget (within 15%: the busy ones
	# fault back what goes, 89 MiB here), taking from the coldest first:
	# the idle one gives all it can (8 MiB stay), the busiest keeps the most.
	local p1 p2 p3 r1 r2 r3 total extra=0
	hold_start "$TMP/g1.out" 64 idle
	p1=$HOLD_PID
	hold_start "$TMP/g2.out" 64 hot
	p2=$HOLD_PID
	hold_start "$TMP/g3.out" 64
	p3=$HOLD_PID
	"$CTL" limit --all 80M | grep -q "3 processes, resident .*, budget 80M"
	sleep 8
	read -r r1 r2 r3 < <(list_resident $p1 $p2 $p3)
	total=$(((r1 + r2 + r3) / 256))
	echo "result: --all 80M over idle, quarter-hot and busy 64 MiB: resident $((r1 / 256)), $((r2 / 256)), $((r3 / 256)) MiB ($total MiB), $(stat_of group_reclaims) group reclaims"
	# ASan's runtime adds resident memory to each process that the budget counts.
	case "${SANITIZE:-}" in *address*) extra=30 ;; esac
	[ "$total" -le $((92 + extra)) ] # within 15%: the busy ones fault back what goes
	[ "$r1" -lt "$r2" ]
	[ "$r2" -lt "$r3" ]
	[ "$r3" -ge $((40 * 256)) ]
	[ "$(stat_of group_reclaims)" -gt 0 ]
	# the group's figures, and each process's for Prometheus
	"$CTL" limit --all | grep -q "budget 80M; evicted .*, saving .* refaults and .* ms of stall a minute"
	"$CTL" groups | grep -q "^all  *3  *.*80M"
	"$CTL" groups --json | python3 -c "import json,sys
g = json.load(sys.stdin)
assert len(g) == 1 and g[0]['group'] == 'all' and g[0]['members'] == 3, g
assert g[0]['budget_bytes'] == 80 << 20 and g[0]['saved_bytes'] > 0, g"
	"$CTL" groups --prometheus | grep -q '^zswapd_group_budget_bytes{group="all"} 83886080$'
	"$CTL" list --prometheus | grep -q "^zswapd_process_saved_bytes{pid=\"$p1\",comm=\"memtest\",cgroup=\".*\"} [1-9]"
	"$CTL" list --prometheus | grep -q "^# TYPE zswapd_process_stall_seconds_total counter"
	"$CTL" limit --all none | grep -q "no budget"
	[ "$(stat_of groups)" -eq 0 ]
	# A budget below what the members cannot give up is refused, and changes
	# nothing: pages they locked, and pages a forked child shares.
	hold_start "$TMP/g4.out" 16 locked
	[ "$(rc "$CTL" limit --all 8M 2>"$TMP/e")" = 1 ]
	grep -q "below what the group's processes cannot give up: pages locked (VmLck)" "$TMP/e"
	"$CTL" limit --all | grep -q "no budget"
	[ "$(stat_of groups)" -eq 0 ]
	[ "$("$CTL" groups --json)" = "[]" ]
	[ "$(rc "$CTL" groups --jsn 2>/dev/null)" = 2 ]
	kill -USR1 $HOLD_PID
	wait $HOLD_PID
	"$CTL" limit --all 8M | grep -q ", budget 8"
	"$CTL" limit --all none
	hold_start "$TMP/g5.out" 16 forked
	[ "$(rc "$CTL" limit --all 8M 2>"$TMP/e")" = 1 ]
	grep -q "or shared with another process" "$TMP/e"
	"$CTL" limit --all | grep -q "no budget"
	[ "$(stat_of groups)" -eq 0 ]
	kill -USR1 $HOLD_PID
	wait $HOLD_PID
	kill -USR1 $p1 $p2 $p3
	wait $p1
	wait $p2
	wait $p3
}

t_cgroup_limit() {
	no_rss_under_tsan
	local root=/sys/fs/cgroup/memory
	[ -f $root/memory.limit_in_bytes ] || skip "no cgroup v1 memory hierarchy here"
	# A memory cgroup with a 200M limit holding two served processes of 64
	# MiB (a hot quarter each), then a third that grows by 128 MiB: 256 MiB
	# in all, and no swap, so without zswapd the OOM killer would fire.
	# zswapd follows the limit by itself (follow_cgroup_limits, on by
	# default) and keeps the cgroup's usage under it, here 15% (10% by
	# default: the margin is for a loaded machine, the growth is 80 MiB/s);
	# nobody is killed and every byte verifies.  Then page cache read inside
	# the cgroup makes the kernel reclaim there: its pressure event reaches
	# zswapd.
	restart_with "follow_cgroup_limits = yes" "cgroup_headroom_percent = 15"
	local cg=/zswapd-test-$$ dir=$root/zswapd-test-$$ p1 p2 p3 usage max
	mkdir "$dir"
	# (set -e holds in the trap too: every command there must succeed)
	# (expanded now: the function's locals are gone when the trap runs)
	trap "pkill -KILL -f '^$MEMTEST hold' || true
	      for _ in \$(seq 50); do rmdir '$dir' 2>/dev/null && break; sleep 0.1; done" EXIT
	echo 200M >"$dir/memory.limit_in_bytes"
	in_cgroup() { echo $BASHPID >"$dir/cgroup.procs" && exec "$@"; }
	(in_cgroup env LD_PRELOAD="$SHIM" "$MEMTEST" hold 64 hot >"$TMP/cg1.out") &
	p1=$!
	(in_cgroup env LD_PRELOAD="$SHIM" "$MEMTEST" hold 64 hot >"$TMP/cg2.out") &
	p2=$!
	for _ in $(seq 200); do grep -q ready "$TMP/cg1.out" && grep -q ready "$TMP/cg2.out" && break; sleep 0.05; done
	for _ in $(seq 100); do "$CTL" limit --cgroup "$cg" | grep -q "200M followed" && break; sleep 0.05; done
	(in_cgroup env LD_PRELOAD="$SHIM" "$MEMTEST" hold 128 grow >"$TMP/cg3.out") &
	p3=$!
	for _ in $(seq 400); do grep -q ready "$TMP/cg3.out" && break; sleep 0.05; done
	sleep 3
	usage=$(($(cat "$dir/memory.usage_in_bytes") >> 20))
	max=$(($(cat "$dir/memory.max_usage_in_bytes") >> 20))
	"$CTL" limit --cgroup "$cg" | tee "$TMP/cg.group"
	echo "result: cgroup limit 200M, 256 MiB served in it: usage $usage MiB, at most $max MiB, $(stat_of group_reclaims) group reclaims"
	grep -q "cgroup $cg: limit 200 MiB, kept 15% under it" "$TMP/daemon.log"
	grep -q "3 processes, .*cgroup limit 200M followed" "$TMP/cg.group"
	"$CTL" groups | grep -q "^$cg  *3  *.*200M"
	[ "$usage" -le 175 ] # a 170M goal, a slack of 3M
	[ "$max" -lt 200 ]   # never at the limit
	[ "$(stat_of group_reclaims)" -gt 0 ]
	# Page cache charged to the cgroup, more than its room: the kernel
	# reclaims there and memory.pressure_level says so.
	dd if=/dev/zero of="$TMP/big" bs=1M count=64 oflag=direct status=none
	(in_cgroup cat "$TMP/big" >/dev/null)
	for _ in $(seq 100); do [ "$(stat_of pressure_events)" -gt 0 ] && break; sleep 0.05; done
	[ "$(stat_of pressure_events)" -gt 0 ]
	grep -q "cgroup $cg: memory pressure" "$TMP/daemon.log"
	kill -USR1 $p1 $p2 $p3
	wait $p1
	wait $p2
	wait $p3
	rm -f "$TMP/big"
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

area_policy() {
	run proactive t_proactive
	run group_budget t_group_budget
	run cgroup_limit t_cgroup_limit
	run host_pressure t_host_pressure
}
