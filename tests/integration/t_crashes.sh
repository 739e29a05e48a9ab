# SPDX-License-Identifier: GPL-2.0-only
#
# Area crashes: surviving zswapd's own death (survive_crash, under a
# keeper, which starts it again): every page taken over after a crash
# or a restart, the races around a death (events, exits, forks,
# registrations), and the keeper's own protocol.

kpid() { cat "$TMP/kpid" 2>/dev/null; }

# start_kept [zswapd args...]: the daemon under its keeper (zswapd --supervise), the
# stand-in for systemd's fd store: it keeps what the daemon stores, and starts it again
# when it dies.  dpid is the daemon's pid, kpid the keeper's.
start_kept() {
	local wrapper k p
	: >"$TMP/daemon.log"
	rm -f "$TMP/daemon.rc" "$TMP/dpid" "$TMP/kpid"
	( set +e; zswapd_bin --supervise -f -c "$TMP/zswapd.conf" "$@" 2>>"$TMP/daemon.log"
	  echo $? >"$TMP/daemon.rc" ) &
	wrapper=$!
	for _ in $(seq 200); do
		k=$(pgrep -P "$wrapper" | head -n1)
		p=$([ -n "$k" ] && pgrep -P "$k" -x zswapd || true)
		if [ -n "$p" ] && [ -S "$ZSWAP_SOCKET" ] && "$CTL" stats >/dev/null 2>&1; then
			echo "$k" >"$TMP/kpid"
			echo "$p" >"$TMP/dpid"
			return 0
		fi
		[ -e "$TMP/daemon.rc" ] && break
		sleep 0.05
	done
	log "zswapd did not start under its keeper:"; cat "$TMP/daemon.log" >&2
	return 1
}

# restart_kept LINES...: the suite's daemon stopped; one under a keeper with these config lines.
restart_kept() { restart_using start_kept "$@"; }

# kill_kept: SIGKILLs the daemon and waits for the one its keeper starts to have taken
# over (crash_recoveries one more); the milliseconds from the kill to its first answer
# go to $TMP/stalls.
kill_kept() { end_kept crash_recoveries kill -KILL; }

# end_kept COUNTER CMD...: CMD ends the daemon (its pid appended); then waits for the
# one its keeper starts to have taken over (COUNTER one more), as kill_kept.
end_kept() {
	local counter=$1 old n p t0 t1
	shift
	old=$(dpid)
	n=$(stat_of "$counter")
	t0=$(date +%s%N)
	"$@" "$old"
	for _ in $(seq 800); do
		p=$(pgrep -P "$(kpid)" -x zswapd || true)
		if [ -n "$p" ] && [ "$p" != "$old" ] &&
		   [ "$(stat_of "$counter" 2>/dev/null)" = $((n + 1)) ]; then
			t1=$(date +%s%N)
			echo $(((t1 - t0) / 1000000)) >>"$TMP/stalls"
			echo "$p" >"$TMP/dpid"
			return 0
		fi
		sleep 0.02
	done
	log "no zswapd took over after $* $old"
	[ -n "$p" ] && { log "zswapd $p: $(cat /proc/"$p"/wchan)"; cat /proc/"$p"/stack >&2; } || true
	return 1
}

# The stalls kill_kept and end_kept measured: "N ends, stall p50 X ms, p99 Y ms, max Z ms".
stall_figures() {
	sort -n "$TMP/stalls" | awk '{ v[NR] = $1 } END {
		p50 = v[int((NR + 1) / 2)]; p99 = v[int(NR * 0.99 + 0.999)]
		printf "%d ends, stall p50 %d ms, p99 %d ms, max %d ms", NR, p50, p99, v[NR] }'
}

# settle: until writeback has stopped (swap_used_bytes unchanged for half a second).
settle() {
	local a b
	for _ in $(seq 40); do
		a=$(stat_of swap_used_bytes)
		sleep 0.5
		b=$(stat_of swap_used_bytes)
		[ "$a" = "$b" ] && return 0
	done
	return 1
}

# kept_setup NAME: a zswapd under its keeper with a pool and a swap file, a process
# with 32 MiB evicted (pid in a) and one with 16 MiB that forked a child sharing them
# (b), part of it on disk, writeback settled; its stats and list in $TMP/NAME0(.list).
# (no recompressor: what it would do after a take-over is not a level that changed)
kept_setup() {
	restart_kept "max_pool_bytes = 8M" "swap_file = $TMP/swap" "swap_file_size = 128M" \
		"recompressor = none"
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 32 >"$TMP/$1_a.out" &
	a=$!
	LD_PRELOAD=$SHIM "$MEMTEST" fork-wait 16 >"$TMP/$1_b.out" &
	b=$!
	for _ in $(seq 400); do
		grep -q evicted "$TMP/$1_a.out" && grep -q evicted "$TMP/$1_b.out" && break
		sleep 0.05
	done
	sleep 0.5 # the child's registration
	settle
	"$CTL" stats >"$TMP/${1}0"
	"$CTL" list >"$TMP/${1}0.list"
	[ "$(stat_in "$TMP/${1}0" written_back_pages)" -gt 1000 ] # some on disk
}

t_crash() {
	# zswapd SIGKILLed with pages in its pool and its swap file, a process and one that
	# forked a child sharing its pages: the zswapd its keeper starts takes every page
	# over, faults none back, and every level is as it was; every byte comes back.
	local a b k
	kept_setup crash
	k=$(kpid)
	kill_kept
	[ "$(kpid)" = "$k" ]
	"$CTL" stats >"$TMP/crash1"
	"$CTL" list >"$TMP/crash1.list"
	cat "$TMP/crash1.list"
	levels_kept crash0 crash1
	[ "$(stat_in "$TMP/crash1" loads)" -lt 16 ] # nothing faulted back
	grep -q "took over 3 processes .* after a crash" "$TMP/daemon.log"
	# Killed again right away, before it wrote anything of its own: the same.
	kill_kept
	[ "$(stat_of stored_pages)" = "$(stat_in "$TMP/crash0" stored_pages)" ]
	# Upgraded in place, then killed: what the new binary stored is what counts.
	settle
	"$CTL" stats >"$TMP/crash2"
	"$CTL" list >"$TMP/crash2.list"
	"$CTL" upgrade
	echo "$(pgrep -P "$(kpid)" -x zswapd)" >"$TMP/dpid"
	kill_kept
	"$CTL" stats >"$TMP/crash3"
	"$CTL" list >"$TMP/crash3.list"
	levels_kept crash2 crash3
	kill -USR1 $a $b
	wait $a
	wait $b
	[ "$(stat_of stored_pages)" = 0 ]
	stop_daemon
	grep -q "took over" "$TMP/daemon.log"
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	start_daemon
}

# keeper_restart: the keeper's restart (SIGUSR1), what `systemctl restart` is to systemd.
keeper_restart() { kill -USR1 "$(kpid)"; }

# rss_anon PID: its RssAnon, in kB.
rss_anon() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"; }

# levels_kept BEFORE AFTER: saved `stats` and `list` ($TMP/BEFORE, $TMP/BEFORE.list...)
# agree on every level, and per process on its evicted pages.
levels_kept() {
	for s in stored_pages compressed_bytes same_filled_pages swap_used_bytes \
		 stored_incompressible_pages; do
		[ "$(stat_in "$TMP/$1" $s)" = "$(stat_in "$TMP/$2" $s)" ] ||
			{ log "$s: $(stat_in "$TMP/$1" $s) before, $(stat_in "$TMP/$2" $s) after"; return 1; }
	done
	diff <(awk 'NR > 1 { print $1, $4 }' "$TMP/$1.list" | sort) \
	     <(awk 'NR > 1 { print $1, $4 }' "$TMP/$2.list" | sort)
}

t_restart() {
	# `systemctl restart`: SIGTERM, and zswapd asks systemd (a stand-in for its bus)
	# whether its unit has a restart job.  It has: everything is handed over through the
	# fd store, nothing faulted back (the processes do not grow), and the next zswapd
	# serves every page.  The keeper's restart (SIGUSR1) the same.  A stop job that
	# replaced the restart job meanwhile drains.
	local fm a b k rss0
	"$B/tests/fakemanager" "$TMP/systemd-bus" "$TMP/job" >"$TMP/fm.out" 2>&1 &
	fm=$!
	echo restart >"$TMP/job"
	export ZSWAPD_SYSTEMD_BUS="unix:path=$TMP/systemd-bus"
	kept_setup rs
	rss0=$(rss_anon $a)
	k=$(kpid)
	# (a compressor changed in the file meanwhile waits for a stop and a start)
	echo "compressor = zstd" >>"$TMP/zswapd.conf"
	end_kept restarts kill -TERM # as systemd stops the old one of a restart
	grep -q "compressor = zstd in the configuration, but the pool taken over was made with lzo" \
		"$TMP/daemon.log"
	grep -q "ListJobs restart" "$TMP/fm.out"
	grep -q "took over 3 processes .* after a restart" "$TMP/daemon.log"
	[ "$(kpid)" = "$k" ]
	"$CTL" stats >"$TMP/rs1"
	"$CTL" list >"$TMP/rs1.list"
	levels_kept rs0 rs1
	[ "$(stat_in "$TMP/rs1" loads)" -lt 16 ] # nothing faulted back
	[ "$(stat_in "$TMP/rs1" crash_recoveries)" = 0 ]
	[ "$(rss_anon $a)" -lt $((rss0 + 2048)) ] # 32 MiB drained would be 28 MiB more
	# The keeper's restart, without systemd.
	end_kept restarts keeper_restart
	"$CTL" stats >"$TMP/rs2"
	"$CTL" list >"$TMP/rs2.list"
	levels_kept rs0 rs2
	[ "$(stat_in "$TMP/rs2" restarts)" = 2 ]
	# A restart job that a stop job replaced before zswapd went (asked again once
	# quiet): every page back, then the keeper ends with the daemon.
	printf 'restart\nstop\n' >"$TMP/job"
	kill -TERM "$(dpid)"
	for _ in $(seq 600); do [ -e "$TMP/daemon.rc" ] && break; sleep 0.05; done
	[ "$(cat "$TMP/daemon.rc")" = 0 ]
	grep -q "ListJobs stop" "$TMP/fm.out"
	grep -q "systemd no longer restarts zswapd; stopping instead" "$TMP/daemon.log"
	grep -q "stopped: every page is back" "$TMP/daemon.log"
	[ "$(rss_anon $a)" -gt $((rss0 + 16384)) ] # drained: its pages are back in it
	kill -USR1 $a $b
	wait $a
	wait $b
	kill $fm
	unset ZSWAPD_SYSTEMD_BUS
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	start_daemon
}

t_crash_events() {
	# zswapd killed, the next held back while the process discards evicted pages and
	# moves others (events nobody reads yet: its madvise and mremap wait); then the
	# next takes over and reads them: discarded pages read zero, moved ones their data.
	restart_kept
	local pid rc
	LD_PRELOAD=$SHIM "$MEMTEST" change-while-away 16 >"$TMP/ce.out" 2>"$TMP/ce.err" &
	pid=$!
	for _ in $(seq 200); do grep -q evicted "$TMP/ce.out" && break; sleep 0.05; done
	kill -STOP "$(kpid)"
	kill -KILL "$(dpid)"
	kill -USR1 $pid
	sleep 0.5
	kill -0 $pid # still waiting on its events
	kill -CONT "$(kpid)"
	rc=0; wait $pid || rc=$?
	cat "$TMP/ce.out" "$TMP/ce.err"
	[ $rc -eq 0 ]
	grep -q "pages checked" "$TMP/ce.out"
	pgrep -P "$(kpid)" -x zswapd >"$TMP/dpid"
	[ "$(stat_of crash_recoveries)" = 1 ]
	stop_daemon
	start_daemon
}

t_crash_exited() {
	# A process that exits while zswapd is dead is not taken over: its pages and pool
	# objects go (its pidfd says so, whatever process has its pid by then).
	restart_kept
	local a b
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 32 >"$TMP/cx_a.out" &
	a=$!
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 16 >"$TMP/cx_b.out" &
	b=$!
	for _ in $(seq 400); do
		grep -q evicted "$TMP/cx_a.out" && grep -q evicted "$TMP/cx_b.out" && break
		sleep 0.05
	done
	kill -STOP "$(kpid)" # nobody starts zswapd again for now
	kill -KILL "$(dpid)"
	kill -KILL $a
	wait $a || true
	kill -CONT "$(kpid)"
	for _ in $(seq 400); do [ "$(stat_of crash_recoveries 2>/dev/null)" = 1 ] && break; sleep 0.05; done
	pgrep -P "$(kpid)" -x zswapd >"$TMP/dpid"
	"$CTL" list
	[ "$("$CTL" list | awk 'NR > 1' | wc -l)" = 1 ]
	"$CTL" list | grep -q "^ *$b "
	kill -USR1 $b
	wait $b
	[ "$(stat_of stored_pages)" = 0 ]
	[ "$(stat_of compressed_bytes)" = 0 ]
	stop_daemon
	start_daemon
}

t_fork_kept_died_late() {
	# As fork_daemon_died_late, but zswapd survives its death (a keeper): killed
	# once the child holds its uffd and before it has emptied its beacon page.  Its
	# connection is in the store, a new zswapd takes it over, and the child's
	# watcher, which saw the old one die, must wait for the new one, not take the
	# uffd for orphaned and end the child at its first inherited evicted page.
	restart_kept
	fork_held_start beacon
	kill_kept
	sleep 1.5 # past the watcher's grace for the agent (orphan.c)
	fork_held_finish
	stop_daemon
	start_daemon
	grep -q "^child: exit 0$" "$TMP/held.out"
	refute grep -q "aborting rather than letting it read zeros" "$TMP/held.err"
	[ $HELD_RC -eq 0 ]
}

t_kept_died_registering() {
	# zswapd killed while a process registers, once it sent ZS_READY and before the
	# shim mapped its staging (held there by childhold.so), with a keeper: the next
	# zswapd serves the process, and its watcher, which saw the old one die, must
	# wait for the registration and then for the new one, not take the uffd for
	# orphaned and end the process at its first fault.
	restart_kept
	local pid rc
	rm -f "$TMP/held.go" && mkfifo "$TMP/held.go"
	CHILDHOLD_AT=staging CHILDHOLD_FIFO=$TMP/held.go LD_PRELOAD="$SHIM $B/tests/childhold.so" \
		"$MEMTEST" evict-then-touch 16 >"$TMP/reg.out" 2>"$TMP/reg.err" &
	pid=$!
	for _ in $(seq 200); do grep -q "childhold: waiting" "$TMP/reg.err" && break; sleep 0.05; done
	grep -q "childhold: waiting" "$TMP/reg.err"
	kill_kept
	sleep 1.5 # past the watcher's grace for the agent (orphan.c)
	timeout 10 sh -c 'echo go >"$1"' _ "$TMP/held.go"
	for _ in $(seq 200); do grep -q evicted "$TMP/reg.out" && break; sleep 0.05; done
	kill -USR1 $pid || true
	rc=0; wait $pid || rc=$?
	cat "$TMP/reg.out" "$TMP/reg.err"
	stop_daemon
	start_daemon
	refute grep -q "aborting rather than letting it read zeros" "$TMP/reg.err"
	[ $rc -eq 0 ]
}

# adopt_killed WHEN: zswapd (with a keeper) SIGKILLed as it takes on a forked
# child's shim, at the store of the child's connection (WHEN: "" right after it,
# --before right before), that is after the store of its staging and before the
# journal's record of either.  The child must read every page it inherited
# evicted.  Before, the next zswapd took a staging the record did not name for
# a process never fully taken on and let the child go, closing its uffd: the
# keeper's copy held its registrations until the next zswapd dropped it, and
# the child read zeros, or ended loudly if it looked first.  Sets ADOPT_AGENT
# to whether the child's shim was served (its agent runs).
adopt_killed() {
	local pid kpy child n rc=0
	restart_kept
	rm -f "$TMP/adopt.in" && mkfifo "$TMP/adopt.in"
	LD_PRELOAD=$SHIM "$MEMTEST" fork-unclaimed 16 <"$TMP/adopt.in" >"$TMP/adopt.out" \
		2>"$TMP/adopt.err" &
	pid=$!
	exec 3>"$TMP/adopt.in"
	for _ in $(seq 200); do grep -q evicted "$TMP/adopt.out" && break; sleep 0.05; done
	rm -f "$TMP/killat.out"
	python3 "$ROOT/tests/integration/kill_at_store.py" $1 "$(dpid)" '^t[0-9]+[.]conn$' \
		>"$TMP/killat.out" 2>&1 &
	kpy=$!
	for _ in $(seq 200); do grep -q armed "$TMP/killat.out" && break; sleep 0.05; done
	n=$(stat_of crash_recoveries)
	echo fork >&3
	wait "$kpy" || rc=1
	cat "$TMP/killat.out"
	for _ in $(seq 400); do
		[ "$(stat_of crash_recoveries 2>/dev/null)" = $((n + 1)) ] && break
		sleep 0.05
	done
	[ "$(stat_of crash_recoveries)" = $((n + 1)) ] || rc=1
	pgrep -P "$(kpid)" -x zswapd >"$TMP/dpid"
	# The child says its pid once its shim's registration has ended, served or not.
	for _ in $(seq 200); do grep -q "^child: [0-9]" "$TMP/adopt.out" && break; sleep 0.05; done
	child=$(sed -n 's/^child: \([0-9]*\)$/\1/p' "$TMP/adopt.out")
	ADOPT_AGENT=0
	[ -n "$child" ] && grep -qx zswap-agent /proc/"$child"/task/*/comm 2>/dev/null && ADOPT_AGENT=1
	echo read >&3
	exec 3>&-
	child_ended "$TMP/adopt.out" "$pid"
	wait "$pid" || rc=1
	cat "$TMP/adopt.out" "$TMP/adopt.err"
	refute grep -q "aborting rather than letting it read zeros" "$TMP/adopt.err"
	grep -q "^child: exit 0$" "$TMP/adopt.out"
	[ $rc -eq 0 ]
}

t_fork_kept_died_adopting() {
	adopt_killed ""
	# Its connection stored, the record not written: READY came from the next zswapd.
	[ "$ADOPT_AGENT" = 1 ]
	adopt_killed --before
	# No connection stored: the child runs on unserved, its pages served all the same.
	[ "$ADOPT_AGENT" = 0 ]
	echo "result: killed right after and right before storing a forked child's connection: the child read every page"
	stop_daemon
	start_daemon
}

t_crash_chaos() {
	# zswapd SIGKILLed at random moments, again and again, while a process writes with
	# four threads, reclaims itself in a loop and forks a child every 200 ms that reads
	# its pages: nothing may end, hang or read a wrong page.  The long run:
	# tests/bench/run.sh chaos.  CHAOS_KILLS: how many kills (20);
	# CHAOS_CONF: one more config line ("log_level = debug" to trace a failure).
	restart_kept "max_pool_bytes = 16M" "swap_file = $TMP/swap" "swap_file_size = 128M" ${CHAOS_CONF:+"$CHAOS_CONF"}
	local pid rc fds0 fds1 loud c kills=${CHAOS_KILLS:-20}
	: >"$TMP/stalls"
	# Under AddressSanitizer a forked child of this threaded process now and
	# then fails a check of ASan's own as its shim starts a thread
	# ("CHECK failed: asan_posix.cpp ... tsd_key_inited"): such an end is
	# counted against the loud ones below, no other may be.
	case "${SANITIZE:-}" in *address*) export CHAOS_LOUD_OK=1 ;; esac
	LD_PRELOAD=$SHIM "$MEMTEST" chaos 64 >"$TMP/chaos.out" 2>"$TMP/chaos.err" &
	pid=$!
	for _ in $(seq 200); do grep -q ready "$TMP/chaos.out" && break; sleep 0.05; done
	sleep 1
	fds0=$(ls /proc/"$(kpid)"/fd | wc -l)
	for _ in $(seq "$kills"); do
		sleep "0.$((RANDOM % 9 + 1))"
		kill_kept
	done
	sleep 1
	kill -USR1 $pid || { cat "$TMP/chaos.out" "$TMP/chaos.err"; false; }
	if ! wait_gone $pid 120; then
		grep -H . /proc/$pid/task/*/wchan >&2 || true
		kill -KILL $pid
		false
	fi
	rc=0; wait $pid || rc=$?
	cat "$TMP/chaos.out"
	grep -v "connect to zswapd" "$TMP/chaos.err" | tail -n 5
	loud=$(sed -n 's/.* \([0-9]*\) ended loudly.*/\1/p' "$TMP/chaos.out")
	# A child that ended loudly lost its connection across a kill: what
	# the daemons said of it, and warned of, says where.
	if [ "${loud:-0}" -ne 0 ]; then
		c=$(sed -n 's/^loud child //p' "$TMP/chaos.out" | paste -sd'|')
		grep -E "pid ($c)\b|^<[0-4]>keeper" "$TMP/daemon.log" || true
	fi
	[ $rc -eq 0 ]
	[ "${loud:-0}" -le "$(grep -c 'AddressSanitizer: CHECK failed' "$TMP/chaos.err" || true)" ]
	# What the keeper holds: the daemon's own, and each live process's four.
	sleep 0.5
	fds1=$(ls /proc/"$(kpid)"/fd | wc -l)
	log "keeper descriptors: $fds0 before the kills, $fds1 after"
	[ "$fds1" -le $((fds0 + 4)) ]
	refute grep -q "named by no entry\|poisoned" "$TMP/daemon.log"
	echo "result: $(stall_figures), $(grep -o '[0-9]* children' "$TMP/chaos.out") all right, $(grep -c 'holding .* swap file blocks' "$TMP/daemon.log" || true) take-overs held blocks still being written"
	stop_daemon
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	start_daemon
}

t_reattach_timeout() {
	# zswapd dies and none comes back, its store alive (its keeper stopped): a process
	# touching an evicted page waits, and after reattach_timeout_seconds aborts, saying
	# why, rather than hang or read zeros.  Had the store died too, its connection
	# would close, and it would abort at once: nothing can come back then.
	restart_kept "reattach_timeout_seconds = 2"
	local pid rc t0 t1
	LD_PRELOAD=$SHIM "$MEMTEST" evict-then-touch 16 >"$TMP/rt.out" 2>"$TMP/rt.err" &
	pid=$!
	for _ in $(seq 200); do grep -q evicted "$TMP/rt.out" && break; sleep 0.05; done
	kill -STOP "$(kpid)"
	kill -KILL "$(dpid)"
	t0=$(date +%s%N)
	kill -USR1 $pid
	rc=0; wait $pid || rc=$?
	t1=$(date +%s%N)
	cat "$TMP/rt.err"
	[ $rc -eq $((128 + 6)) ]
	grep -q "aborting rather than letting it read zeros" "$TMP/rt.err"
	log "aborted $(((t1 - t0) / 1000000)) ms after the kill"
	[ $(((t1 - t0) / 1000000)) -ge 1500 ] # it waited for a zswapd first
	kill -CONT "$(kpid)"
	for _ in $(seq 200); do [ "$(stat_of crash_recoveries 2>/dev/null)" = 1 ] && break; sleep 0.05; done
	pgrep -P "$(kpid)" -x zswapd >"$TMP/dpid"
	[ "$(stat_of stored_pages)" = 0 ] # its pages went with it
	stop_daemon
	start_daemon
}

# install_bin FILE: FILE installed over $TMP/bin/zswapd, as a package upgrade does.
install_bin() { cp "$1" "$TMP/bin/zswapd.new" && mv "$TMP/bin/zswapd.new" "$TMP/bin/zswapd"; }

t_crash_redis() {
	# redis-server, 80% of its memory evicted, answers GETs from redis-benchmark while
	# zswapd is restarted 20 times (once to another build, as `systemctl restart` after
	# a package upgrade), SIGKILLed 10 times and upgraded in place once to another
	# build: no client error, its data (DEBUG DIGEST) unchanged, every end taken over.
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
		skip "redis-server or redis-benchmark not installed"
	# The other build: the same sources at -O0 (the upgrade test's, if it ran).
	[ -x "$TMP/b0/zswapd" ] ||
		make -C "$ROOT" -s BUILD="$TMP/b0" CFLAGS="-O0 -g" "$TMP/b0/zswapd" >/dev/null
	mkdir -p "$TMP/bin" && install_bin "$B/zswapd"
	export ZSWAPD_KEEPER_EXEC=$TMP/bin/zswapd # what the keeper starts: the installed one
	restart_kept
	local i kills=0 restarts=0
	: >"$TMP/stalls"
	redis_under_gets
	for i in $(seq 30); do
		[ "$i" != 10 ] || install_bin "$TMP/b0/zswapd"
		if [ $((i % 3)) = 0 ]; then
			kill_kept
			kills=$((kills + 1))
		else
			end_kept restarts keeper_restart
			restarts=$((restarts + 1))
		fi
		[ "$i" != 10 ] ||
			[ "$(stat -L -c %s "/proc/$(dpid)/exe")" = "$(stat -c %s "$TMP/b0/zswapd")" ]
		if [ "$i" = 20 ]; then
			install_bin "$B/zswapd"
			"$CTL" upgrade
			[ "$(stat -L -c %s "/proc/$(dpid)/exe")" = "$(stat -c %s "$B/zswapd")" ]
		fi
		sleep 0.2
	done
	[ "$(stat_of restarts)" = $restarts ]
	[ "$(stat_of crash_recoveries)" = $kills ]
	redis_checked
	echo "result: crash_redis: $kills kills, $restarts restarts (one to an -O0 build) and an upgrade to another build under GETs, $(stall_figures), $("$CTL" list | awk -v p="$rpid" '$1 == p { print $4 }') evicted at the end, digest unchanged"
	redis_stop
	stop_daemon
	unset ZSWAPD_KEEPER_EXEC
	start_daemon
}

t_keeper() {
	# The keeper speaks systemd's fd-store protocol (FDSTORE=1, FDNAME=, FDPOLL=,
	# FDSTOREREMOVE=1; LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID back) and restarts as
	# systemd's Restart=on-failure does: checked against a fake daemon.
	command -v python3 >/dev/null || skip "python3 not installed"
	python3 "$ROOT/tests/integration/keeper_test.py" "$B/zswapd"
}

area_crashes() {
	run keeper t_keeper
	run crash t_crash
	run restart t_restart
	run crash_exited t_crash_exited
	run crash_events t_crash_events
	run fork_kept_died_late t_fork_kept_died_late
	run kept_died_registering t_kept_died_registering
	run fork_kept_died_adopting t_fork_kept_died_adopting
	run crash_chaos t_crash_chaos
	run reattach_timeout t_reattach_timeout
	run crash_redis t_crash_redis
}
