# SPDX-License-Identifier: GPL-2.0-only
#
# Area agents: the agent thread the shim runs in each process, the other
# ways it can take pages out (MADV_DONTNEED, write-protected batches),
# and what it must survive: writes of its own mid-batch, a slow agent,
# moves misreported, forks mid-batch; and following the app's CPU.

# The memtest hazards, for the tests that run them again another way.
memtest_hazards() {
	local h
	for h in threads churn fork fork_reclaim discard mremap_race; do
		shimmed "$MEMTEST" "$h" || return 1
	done
}

t_agent_dontneed() {
	# The same hazards with the agent dropping pages by MADV_DONTNEED
	# (agent_move = no, and what kernels before 6.8 get; the default takes
	# them out by UFFDIO_MOVE): each drop a REMOVE event it waits on.
	[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
	restart_with "agent_move = no"
	memtest_hazards
	# The app discards the first page of a range just before the agent
	# drops it: two REMOVE events at one address (the agent announces its
	# drops, ZS_STAGING_DROPS; a match by address alone lost the rest).
	LD_PRELOAD="$SHIM $B/tests/agentdiscard.so" "$MEMTEST" discard_agent
	local batches
	batches=$(stat_of evict_batches)
	echo "result: agent_dontneed: $batches batches, $(stat_of evict_moved_batches) moved out"
	[ "$batches" -gt 100 ]
	[ "$(stat_of evict_moved_batches)" = 0 ]
	# A live process evicted from by MADV_DONTNEED, and stats say so.
	hold_start "$TMP/hold.out" 16
	"$CTL" reclaim "$HOLD_PID" 8M >/dev/null
	[ "$(stat_of targets)" = 1 ]
	[ "$(stat_of targets_moving)" = 0 ]
	kill -USR1 "$HOLD_PID"
	wait "$HOLD_PID"
	stop_daemon
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	start_daemon
}

t_discard_stuck() {
	# Discard, then write, pages of eviction batches that are stuck (the
	# agent pausing 30 ms after each move, agentslow.so): the write's fault
	# on the discarded page is served at once with zeros, and the agent
	# must not then take the page out, or the write is lost (memtest
	# discard_stuck checks every page's last write).
	local out
	out=$(AGENTSLOW_USEC=30000 LD_PRELOAD="$SHIM $B/tests/agentslow.so" "$MEMTEST" discard_stuck 8 4)
	echo "result: $out"
}

t_fork_orphan() {
	# A child forked mid-batch whose parent exits at once (memtest
	# fork_orphan, a daemonizing double fork), the agent pausing 20 ms
	# after each move, before its copy (agentslow.so).  A page moved out
	# and not copied yet is only in the parent's scratch area, which the
	# child does not inherit and which goes with the parent: the child read
	# zeros there (229 pages wrong in one run) until fork() waited for the
	# agent's copy (ZS_STAGING_FORK_GATE).
	local out mf
	mf=$(stat_of evict_move_first_batches)
	out=$(LD_PRELOAD="$SHIM $B/tests/agentslow.so" "$MEMTEST" fork_orphan 16)
	echo "$out"
	echo "result: fork_orphan: $(sed -n 's/^fork_orphan: child: //p' <<<"$out")"
	grep -qx 'fork_orphan: child: 0 pages wrong' <<<"$out"
	[ "$(stat_of evict_move_first_batches)" != "$mf" ] ||
		skip "no move-first batch (a kernel without UFFDIO_MOVE?): no gate to test"
}

t_agent_writes() {
	# The agent writes to a page of its own batch right before moving it
	# out (agentwrite.so, as a sanitizer or tracer would): in the process's
	# first batch, write-protected, the page must be vetoed, stay, and keep
	# its bytes; in a move-first one the write must come back with the
	# page.  Also shows that the default configuration moves pages out:
	# agentwrite writes only then.
	LD_PRELOAD="$SHIM $B/tests/agentwrite.so" "$MEMTEST" basic 32 32 2>"$TMP/aw.err"
	cat "$TMP/aw.err"
	local writes
	writes=$(sed -n 's/^agentwrite: \([0-9]*\) pages.*before.*/\1/p' "$TMP/aw.err")
	echo "result: agent_writes: $writes pages written by the agent mid-batch, all back intact"
	[ "${writes:-0}" -gt 0 ]
}

t_agent_writes_after() {
	# The agent writes right after each move out to the first page it
	# moved (agentwrite.so with AGENTWRITE_AFTER): in a move-first batch
	# that page is then only in its scratch, not copied to staging yet.
	# The agent's fault must be served from the scratch (through
	# /proc/PID/mem, evict_scratch_reads), not from a stale staging slot,
	# and memtest's byte check sees any page served wrong.
	local before after writes
	before=$(stat_of evict_scratch_reads)
	AGENTWRITE_AFTER=1 LD_PRELOAD="$SHIM $B/tests/agentwrite.so" "$MEMTEST" basic 32 32 \
		2>"$TMP/awa.err"
	cat "$TMP/awa.err"
	after=$(stat_of evict_scratch_reads)
	writes=$(sed -n 's/^agentwrite: \([0-9]*\) pages.*after.*/\1/p' "$TMP/awa.err")
	echo "result: agent_writes_after: $writes pages written by the agent right after its move, $((after - before)) read back from its scratch, all intact"
	[ "${writes:-0}" -gt 0 ] && [ $((after - before)) -ge 1 ]
}

t_agent_wp() {
	# The hazards again with every batch write-protected first
	# (agent_move_first = no; the default moves, then copies, and only a
	# process's first batch is protected).
	restart_with "agent_move_first = no"
	memtest_hazards
	LD_PRELOAD="$SHIM $B/tests/agentwrite.so" "$MEMTEST" basic 32 32
	AGENTSLOW_USEC=30000 LD_PRELOAD="$SHIM $B/tests/agentslow.so" "$MEMTEST" discard_stuck 8 4
	echo "result: agent_wp: $(stat_of evict_batches) batches, $(stat_of evict_move_first_batches) move-first"
	[ "$(stat_of evict_batches)" -gt 100 ] && [ "$(stat_of evict_move_first_batches)" = 0 ] ||
		return 1
	restart_with
}

t_agent_misreport() {
	# UFFDIO_MOVE says nothing moved although it moved a page (movelie.so
	# makes every fifth move do that): the agent must find the page in its
	# scratch area and count it moved, not veto it and lose it.  With the
	# default configuration: movelie lies only about moves.
	local lies counted before
	before=$(stat_of agent_move_misreports)
	LD_PRELOAD="$SHIM $B/tests/movelie.so" "$MEMTEST" basic 32 32 2>"$TMP/ml.err"
	cat "$TMP/ml.err"
	lies=$(sed -n 's/^movelie: \([0-9]*\) moves.*/\1/p' "$TMP/ml.err")
	counted=$(($(stat_of agent_move_misreports) - before))
	echo "result: agent_misreport: $lies moves misreported, $counted counted, every page back intact"
	[ "${lies:-0}" -gt 0 ]
	[ "$counted" = "$lies" ]
}

# follow_batches [two]: one memtest follow run, which must pass (it
# verifies every byte); writes its batches, how many of them the agent
# took out from the app's CPU, and the threads it had to $TMP/follow.res
# as "BATCHES LOCAL THREADS".
follow_batches() {
	local b0 l0
	b0=$(stat_of evict_batches)
	l0=$(stat_of evict_local_batches)
	shimmed "$MEMTEST" follow "$@" >"$TMP/follow.out" || return 1
	echo "$(($(stat_of evict_batches) - b0)) $(($(stat_of evict_local_batches) - l0))" \
	     "$(sed -n 's/^threads: //p' "$TMP/follow.out")" >"$TMP/follow.res"
}

t_agent_follow() {
	# The agent of a one-thread app takes each batch out from that
	# thread's CPU (agent_follow_app = yes, the default); not with a
	# second app thread (a sanitizer's runtime thread is one), nor when
	# told not to.
	local one two off
	follow_batches
	read -r -a one <"$TMP/follow.res"
	follow_batches two
	read -r -a two <"$TMP/follow.res"
	restart_with "agent_follow_app = no"
	follow_batches
	read -r -a off <"$TMP/follow.res"
	restart_with
	echo "result: agent_follow: one thread ${one[1]} of ${one[0]} batches from its CPU," \
	     "two ${two[1]} of ${two[0]}, off ${off[1]} of ${off[0]}"
	# One command per check: set -e ignores a failure before the last &&.
	[ "${one[0]}" -gt 0 ]
	[ "${two[0]}" -gt 0 ]
	# Without a sanitizer's thread, exactly those three: a thread the shim
	# adds must be counted by agent_app_cpu() too, or following stops unseen.
	[ -n "${SANITIZE:-}" ] || [ "${one[2]}" = 3 ]
	[ "${off[0]}" -gt 0 ]
	if [ "${one[2]}" = 3 ]; then # the app's, the agent and the watcher
		[ "${one[1]}" = "${one[0]}" ]
	else
		[ "${one[1]}" = 0 ]
	fi
	[ "${two[1]}" = 0 ]
	[ "${off[1]}" = 0 ]
}

area_agents() {
	run agent_dontneed t_agent_dontneed
	run agent_writes t_agent_writes
	run agent_writes_after t_agent_writes_after
	run fork_orphan t_fork_orphan
	run discard_stuck t_discard_stuck
	run agent_wp t_agent_wp
	run agent_misreport t_agent_misreport
	run agent_follow t_agent_follow
}
