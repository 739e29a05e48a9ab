# SPDX-License-Identifier: GPL-2.0-only
#
# Area deaths: zswapd killed with no keeper to start it again: a process
# or a forked child never reads zeros; it ends loudly, or runs on once
# its pages are back.

t_daemon_killed() {
	# zswapd dies holding pages: the process must not read zeros; it aborts, saying why.
	LD_PRELOAD=$SHIM "$MEMTEST" evict-then-touch 16 >"$TMP/kill.out" 2>"$TMP/kill.err" &
	local pid=$! rc
	for _ in $(seq 200); do grep -q evicted "$TMP/kill.out" && break; sleep 0.05; done
	kill -KILL "$(dpid)"
	[ "$(wait_daemon_exit)" = 137 ]
	kill -USR1 $pid
	rc=0; wait $pid || rc=$?
	cat "$TMP/kill.err"
	[ $rc -eq $((128 + 6)) ] # SIGABRT
	grep -q "aborting rather than letting it read zeros" "$TMP/kill.err"
	start_daemon
	# A child forked once zswapd is dead reads its inherited evicted pages: a SIGBUS, not zeros.
	rm -f "$TMP/kill.out"
	LD_PRELOAD=$SHIM "$MEMTEST" fork-then-touch 16 >"$TMP/kill.out" 2>"$TMP/kill.err" &
	pid=$!
	for _ in $(seq 200); do grep -q evicted "$TMP/kill.out" 2>/dev/null && break; sleep 0.05; done
	kill -KILL "$(dpid)"
	[ "$(wait_daemon_exit)" = 137 ]
	kill -USR1 $pid
	rc=0; wait $pid || rc=$?
	cat "$TMP/kill.out" "$TMP/kill.err"
	# SIGBUS, or what a sanitizer's SIGBUS handler makes of it (ASan: SIGSEGV, meeting
	# another evicted page; TSan: exit 66); never exit 0 or 1, which would mean it read on.
	grep -q "^child: " "$TMP/kill.out"
	refute grep -Eq "^child: exit [01]$" "$TMP/kill.out"
	grep -q "the child gets a SIGBUS rather than zeros" "$TMP/kill.err"
	[ $rc -eq $((128 + 6)) ]
	start_daemon
}

t_fork_unclaimed() {
	# A child forked while it cannot reach zswapd holds no copy of its uffd; zswapd has the
	# only one.  Had zswapd died then, the kernel would have dropped the child's
	# registrations and its inherited evicted pages would read as zeros.  zswapd brings an
	# unclaimed child's pages back by itself, and then a kill loses nothing.
	local fifo=$TMP/unclaimed.in pid back rc=0
	rm -f "$fifo" "$TMP/unclaimed.out"
	mkfifo "$fifo"
	LD_PRELOAD=$SHIM "$MEMTEST" fork-unclaimed 16 <"$fifo" >"$TMP/unclaimed.out" 2>"$TMP/unclaimed.err" &
	pid=$!
	exec 3>"$fifo"
	for _ in $(seq 200); do grep -q evicted "$TMP/unclaimed.out" && break; sleep 0.05; done
	mv "$ZSWAP_SOCKET" "$ZSWAP_SOCKET.away"
	echo fork >&3
	for _ in $(seq 200); do grep -q "^child: [0-9]" "$TMP/unclaimed.out" && break; sleep 0.05; done
	mv "$ZSWAP_SOCKET.away" "$ZSWAP_SOCKET"
	for _ in $(seq 100); do
		[ "$(stat_of unclaimed_children)" = 1 ] && grep -q "restore done: .* 0 left (ok)" "$TMP/daemon.log" &&
			break
		sleep 0.1
	done
	grep "claimed\|restore done" "$TMP/daemon.log" >&2 || true
	[ "$(stat_of unclaimed_children)" = 1 ]
	back=$(sed -n 's/.*restore done: \([0-9]*\) pages back, 0 left (ok).*/\1/p' "$TMP/daemon.log")
	[ "${back:-0}" -gt 0 ]
	"$CTL" restore "$pid" >/dev/null # the parent's own pages: it prints after the kill
	kill -KILL "$(dpid)"
	[ "$(wait_daemon_exit)" = 137 ]
	echo read >&3
	exec 3>&-
	wait $pid || rc=$?
	cat "$TMP/unclaimed.out" "$TMP/unclaimed.err"
	start_daemon
	grep -q "^child: exit 0$" "$TMP/unclaimed.out"
	[ $rc -eq 0 ]
	echo "result: unclaimed child: $back pages brought back before the kill, all read right after it"
}

# fork_held_killed AT: zswapd SIGKILLed while a forked child's shim is held at AT
# (fork_held_start).  Held before it connects, the child aborts as its registration
# fails; held at the beacon it holds its uffd, goes on, and ends loudly at its first
# inherited evicted page, or reads every page right if none of its data was evicted
# (under ThreadSanitizer the reclaim takes the sanitizer's own memory first).
fork_held_killed() {
	fork_held_start "$1"
	kill -KILL "$(dpid)"
	[ "$(wait_daemon_exit)" = 137 ]
	fork_held_finish
	start_daemon
	if [ "$1" = beacon ] && grep -q "^child: exit 0$" "$TMP/held.out"; then
		echo "result: the child went on and read every page right"
	else
		grep -q "^child: signal 6$" "$TMP/held.out"
		grep -q "aborting rather than letting it read zeros" "$TMP/held.err"
	fi
	[ $HELD_RC -eq 0 ]
}

t_fork_daemon_died() {
	# zswapd SIGKILLed between a fork and the child's claim of its uffd: zswapd's copy was
	# the only one, and the kernel dropped the child's registrations with it.  The child must
	# end loudly; its inherited evicted pages would read as zeros.
	fork_held_killed connect
}

t_fork_daemon_stopped() {
	# zswapd stopped in order at the same moment: its drain faults the child's pages back
	# as well and marks its beacon page, so the child, registrations gone too, runs on.
	fork_held_start connect
	kill -TERM "$(dpid)"
	[ "$(wait_daemon_exit)" = 0 ]
	fork_held_finish
	start_daemon
	grep -q "^child: exit 0$" "$TMP/held.out"
	[ $HELD_RC -eq 0 ]
}

t_fork_daemon_died_late() {
	# zswapd SIGKILLed once it has named a forked child and sent it its uffd, before the
	# child empties its beacon page: that MADV_DONTNEED is a REMOVE event nobody but the
	# child's own watcher can read now.  The child must not wait there for good; it goes
	# on, and its first touch of an inherited evicted page ends it loudly.
	fork_held_killed beacon
}

t_daemon_killed_busy() {
	# zswapd SIGKILLed at random moments under four writer threads, a reclaim loop and a fork
	# every 100 ms.  No thread may hang on the dead daemon (a fault it had read, an event of
	# the agent's own, the dynamic linker's lazy binding on a page gone with it), and every
	# page reads as its data or the process ends loudly: never zeros.
	local round pid rc aborted=0
	for round in $(seq "${KILL_ROUNDS:-6}"); do
		rm -f "$TMP/orphan.out" # (not this round's "ready" otherwise)
		LD_PRELOAD=$SHIM "$MEMTEST" orphan 64 >"$TMP/orphan.out" 2>"$TMP/orphan.err" &
		pid=$!
		for _ in $(seq 200); do grep -q ready "$TMP/orphan.out" && break; sleep 0.05; done
		sleep "0.$((RANDOM % 9 + 1))"
		kill -KILL "$(dpid)"
		[ "$(wait_daemon_exit)" = 137 ]
		sleep 0.3
		kill -USR1 $pid 2>/dev/null || true # the writers may have met an evicted page already
		if ! wait_gone $pid 30; then
			log "round $round: memtest hangs"
			grep -H . /proc/$pid/task/*/wchan >&2 || true
			kill -KILL $pid
			false
		fi
		rc=0; wait $pid || rc=$?
		cat "$TMP/orphan.out" "$TMP/orphan.err"
		refute grep -q "differs\|FAIL" "$TMP/orphan.err"
		if [ $rc -eq 134 ]; then
			grep -q "aborting rather than letting it read zeros" "$TMP/orphan.err"
			aborted=$((aborted + 1))
		else
			[ $rc -eq 0 ]
		fi
		start_daemon
	done
	# A forked child whose shim threads never started (seen under ASan only:
	# its thread-start wrapper) has no watcher, and hangs once zswapd is dead:
	# counted, and ended, so that no run leaves it behind.
	local stuck
	stuck=$(pgrep -f "^$B/tests/memtest orphan" | wc -l)
	pkill -KILL -f "^$B/tests/memtest orphan" || true
	echo "result: ${KILL_ROUNDS:-6} kills, $aborted aborted at an evicted page, none hung or read zeros; $stuck of its forked children left hanging (ended)"
}

area_deaths() {
	run daemon_killed t_daemon_killed
	run fork_unclaimed t_fork_unclaimed
	run fork_daemon_died t_fork_daemon_died
	run fork_daemon_stopped t_fork_daemon_stopped
	run fork_daemon_died_late t_fork_daemon_died_late
	run daemon_killed_busy t_daemon_killed_busy
}
