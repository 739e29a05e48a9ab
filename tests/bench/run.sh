#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Benchmarks: rerunnable, never pass/fail on timings (a run that corrupts
# data fails loudly, though).  What each part measures and how to read its
# table: docs/benchmarks.md.
#
#   tests/bench/run.sh [--quick] [micro] [compare] [writeback] [workers] [redis] [memcached]
#                      [unmap] [pairs] [squeeze] [proactive] [scan] [pyheap]
#
# Output: $BENCH_OUT if set, else ${BUILD:-build}/bench under the repository
# (created if missing), a NAME.json, NAME.md (and for some a NAME.png) per
# part.  A run never writes the committed results in tests/bench/results/
# unless told to: those change only when someone copies a run there on
# purpose, e.g.
#
#   BENCH_OUT=tests/bench/results tests/bench/run.sh compare
#
# With no part named: `make bench` runs all six (about 45 minutes),
# `make bench-quick` (--quick) micro and compare on smaller sizes (under 3).
# --micro-only, --compare-only and --writeback are the older names of
# micro, compare and writeback.
#
# micro:   per-page store and load cost of zswapd for lzo, lz4 and zstd
#          (tests/bench/micro.c), and kernel zswap lzo's loads measured by
#          the same program in the same run: the process in a memory
#          cgroup whose limit is forced down to push its memory out, then
#          lifted, vm.page-cluster = 0, a first touch of each page in
#          random order; and the same loads served by a bare userfaultfd
#          server that only copies a ready page in (tests/bench/roundtrip.c),
#          the floor under any daemon of this kind.  -> micro.{json,md}
#
# unmap:   what taking a page out of a process costs through each kernel
#          interface (tests/bench/unmap.c: UFFDIO_MOVE, UFFDIO_WRITEPROTECT,
#          MADV_DONTNEED, batched process_madvise, with REMOVE events and
#          without), with the process's other thread idle or busy on the
#          other CPU: the floor under zswapd's eviction.  No daemon, a few
#          seconds.  -> unmap.{json,md}
#
# pairs:   zswapd's throughput against kernel zswap's, one case against one:
#          kernel zswap lzo and zswapd lzo with the pool outside (as in
#          compare), back to back at 50% and 25% of S, BENCH_ROUNDS (5)
#          times; medians, spread and the ratio per round.  S = 1024 MiB,
#          10 s + 20 s (--quick: 256 MiB, 3 s + 8 s, 2 rounds).  Not in
#          `make bench` (about 25 minutes).  -> pairs.{json,md}
#
# compare: one workload (tests/bench/workload.c: S MiB of the same page mix,
#          20% of pages taking 80% of accesses, half of them writes, every
#          page verified at the end) at budgets of 50% and 25% of S, served by
#            ram     everything in RAM, no limit;
#            swap    kernel swap to a swap file, process in a cgroup v1 memory
#                    cgroup with memory.limit_in_bytes = budget, zswap off;
#            zswap   the same with kernel zswap on (lzo);
#            zswapd  zswapd (lzo; lz4 and zstd too in the full run), process
#                    in no cgroup, `zswapctl limit` = budget - pool allowance.
#          full: S = 1024 MiB, 10 s warm-up + 30 s measured; --quick: 256 MiB,
#          3 s + 8 s.  -> compare.{json,md,png} (report.py)
#          The workload stops at handshakes (before the fill, after the
#          warm-up, after the window) so that the limit is placed before its
#          memory grows and the counters bracket exactly the window; after
#          it the budget is lifted and every page is read back and checked.
#          A kernel case killed by the OOM killer is reported, not failed.
#
# Needs root.  For the kernel cases it switches on a swap file, zswap and a
# memory cgroup; the EXIT trap puts the machine back as it found it (swap
# file off and removed, zswap parameters restored, cgroup removed, debugfs
# unmounted if we mounted it) on every exit path.  A run killed with SIGKILL
# runs no trap: what it changed is written down in $STATE as it goes, and
# the next run puts it back first (recover_stale).
#
# writeback: the same workload, sizes
#          and window as compare, ONE total budget B = 25% of S (resident +
#          pool), pool capped at P = B/4:
#            swap    kernel swap only, cgroup v1 limit B, zswap off;
#            zswap   kernel zswap lzo + swap, cgroup limit B - P, zswap
#                    max_pool_percent = P as % of MemTotal (at least 1);
#            zswapd  zswapd lzo, max_pool_bytes = P, swap_file = $WBFILE
#                    (2×S, removed afterwards), `zswapctl limit` B - P.
#          -> writeback.{json,md} (report.py --writeback): faults,
#          swap I/O bytes, written-back pages, readahead hits, and the ratio
#          zswapd swap I/O / kernel zswap swap I/O.
#
# workers: N jobs of 64 MiB (--quick: 32), each a fixed amount of work, under
#          one budget of 256 MiB (128), N = 2 4 8 12 16 (2 8): runtime, pages
#          in, swap I/O, peak resident + pool for all in RAM, swap, kernel
#          zswap and zswapd (see run_workers).  -> workers.{json,md,png}
#
# squeeze: a memory cgroup of 1.5 GiB holding four processes of 256 MiB, half
#          of each never touched, then a fifth that grows by 768 MiB at
#          SQUEEZE_FILL_MIBPS (100) MiB/s: 1.75 GiB in all, no swap.  Nothing
#          (the OOM killer), kernel zswap lzo + swap file in the cgroup, and
#          zswapd with its default config (it follows the cgroup's limit).
#          Who was killed, every byte checked, the cgroup's peak usage, the
#          grower's fill time, the worst p99, the stall.  -> squeeze.{json,md}
#
# proactive: eight processes of 128 MiB opted in, half of each never touched,
#          the other half taking every access, for PROACTIVE_SECONDS (600),
#          beside eight more alike not opted in, at the same time on the same
#          CPUs; zswapd with its default config (cold age 120 s).  Memory
#          saved (the served ones' RssAnon + the pool against the others'),
#          their speed against the others', the refault rate and the stall,
#          every 30 s.  -> proactive.{json,md}
#
# redis:   redis-server (installed from Debian if missing) holding about twice
#          a 256 MiB budget (64), redis-benchmark GET and SET throughput and
#          p99 under swap, kernel zswap and zswapd, every key checked at the
#          end (see run_redis).  -> redis.{json,md}
#
# memcached: memcached (installed from Debian if missing) holding about
#          twice a 256 MiB budget (64), four connections of tests/bench/mcload.c
#          doing GETs and 10% SETs, every value read checked, under swap,
#          kernel zswap and zswapd; every key checked at the end (see
#          run_memcached).  Not in `make bench` (about 4 minutes).
#          -> memcached.{json,md}
#
# scan:    S MiB pushed out, then read back in one pass in address order
#          (workload --pattern sequential): zswapd with prefetch and without,
#          kernel zswap and kernel swap with their readahead, BENCH_ROUNDS (3)
#          rounds, medians.  S = 256 MiB (--quick 64).  Not in `make bench`
#          (about 5 minutes).  -> scan.{json,md}
#
# pyheap:  a Python program with a large heap (tests/bench/pyheap.py, 1.2 M
#          records, about 520 MiB) under a 256 MiB budget: random lookups and
#          updates for 30 s, a full gc.collect() every 5 s (the heap walked);
#          all in RAM, kernel swap, kernel zswap lzo, zswapd lzo with prefetch
#          and without, every record checked.  Not in `make bench` (about 5
#          minutes).  -> pyheap.{json,md}
#
# chaos:   zswapd under its keeper (zswapd --supervise) SIGKILLed BENCH_KILLS
#          (200) times at random moments, 0.1 to 1 s apart, while a process of
#          S MiB (1024; --quick 256) writes with four threads, reclaims itself
#          in a loop into a pool of S/4 backed by a swap file, and forks a
#          child every second that reads its pages; then every byte of it
#          and of its children checked.  The stall of each kill (kill to the
#          new zswapd's first answer), the keeper's descriptors before and
#          after, and what one kill with all S MiB evicted costs the host's
#          used memory.  Not in `make bench`.  -> chaos.{json,md}
#
# BENCH_SIZE_MIB, BENCH_SECONDS, BENCH_WARMUP override the compare sizes
# (for trying things out; the results say what was used).  BENCH_KEEP=DIR
# keeps the raw per-case figures there, a directory per part
# (report.py --cases DIR/cases re-reads compare's).  BENCH_ZSWAPD_CONF adds
# config lines to every zswapd the bench starts (e.g. "agent_move = no"),
# to measure a setting against the default; the results' command says so.
# BENCH_HALT_POLL_NS sets the KVM guest's haltpoll cpuidle polling
# (/sys/module/haltpoll/parameters/guest_halt_poll_ns) for every case of
# the run, and puts it back after; BENCH_OUT writes the results to that
# directory instead of build/bench (see above).  BENCH_DAEMON_CPUS=LIST runs
# every zswapd on those CPUs (taskset -c LIST) whatever the bench's own affinity:
# `BENCH_DAEMON_CPUS=1 taskset -c 0 tests/bench/run.sh compare` puts the
# workloads on CPU 0 and the daemon on CPU 1.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/${BUILD:-build}
OUT=${BENCH_OUT:-$B/bench}
QUICK=0 PARTS=
for arg in "$@"; do
	case $arg in
	--quick) QUICK=1 ;;
	--micro-only) PARTS="$PARTS micro" ;;       # the older spellings
	--compare-only) PARTS="$PARTS compare" ;;
	--writeback) PARTS="$PARTS writeback" ;;
	micro | compare | writeback | workers | redis | memcached | unmap | pairs | squeeze | proactive | scan | pyheap | upgrade | chaos) PARTS="$PARTS $arg" ;;
	*) echo "usage: $0 [--quick] [micro] [compare] [writeback] [workers] [redis] [memcached] [unmap] [pairs] [squeeze] [proactive] [scan] [pyheap] [upgrade] [chaos]" >&2; exit 2 ;;
	esac
done
# make bench: everything; make bench-quick: micro and compare (CI smoke)
if [ -z "$PARTS" ]; then
	PARTS="micro compare"
	[ $QUICK -eq 1 ] || PARTS="$PARTS writeback workers redis unmap"
fi
want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (zswapd uses /dev/userfaultfd)"; exit 1; }

# Everything this script changes on the machine, so cleanup() can undo it.
STATE=/var/tmp/zswapd-bench.state       # what a SIGKILLed run left behind
SWAPFILE=/var/tmp/zswapd-bench.swap     # fixed name: a later run can find a stale one
WBFILE=/var/tmp/zswapd-bench-wb.swap    # zswapd's writeback file (--writeback), same rule
CGROOT=/sys/fs/cgroup/memory
CGPREFIX=zswapd-bench.
ZSWAP=/sys/module/zswap/parameters
DEBUGFS=/sys/kernel/debug
ZSWAP_SAVED=                            # "enabled compressor max_pool_percent shrinker" once changed
HALTPOLL=/sys/module/haltpoll/parameters/guest_halt_poll_ns
HALTPOLL_SAVED=                         # its value before BENCH_HALT_POLL_NS
DEBUGFS_MOUNTED=0
CG=                                     # the memory cgroup of the current case
DPID='' WPID='' LPID='' KPID=''         # zswapd, workload, fallback limiter, budget keeper
# --writeback: per-case overrides of run_case (empty: the compare behaviour)
CASE_LIMIT=                             # cgroup limit / fixed `zswapctl limit`, MiB
CASE_CONF=                              # zswapd config file
ZSWAP_POOL_PCT=                         # kernel zswap max_pool_percent

# One run at a time: two would share the swap file, the state file and the
# zswap knobs.  The lock is a fixed path, not this script: a run from a
# second checkout took the first one's state file for a stale one and
# killed its workload.  Children are started with 9>&- so that an orphan
# never holds it.
LOCK=/var/tmp/zswapd-bench.lock
exec 9>>"$LOCK"
flock -n 9 || { echo "bench: another benchmark run is going on ($LOCK is locked)" >&2; exit 1; }

cc -O2 -std=c11 -D_GNU_SOURCE -I"$ROOT/include" -o "$B/micro" "$ROOT/tests/bench/micro.c"
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$B/workload" "$ROOT/tests/bench/workload.c"
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$B/unmap" "$ROOT/tests/bench/unmap.c" -lpthread
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$B/roundtrip" "$ROOT/tests/bench/roundtrip.c"

TMP=$(mktemp -d /tmp/zswapd-bench.XXXXXX)
export ZSWAP_SOCKET=$TMP/zswapd.sock

state_add() { echo "$*" >>"$STATE"; }
state_drop_pid() { if [ -f "$STATE" ]; then sed -i "/^pid $1 /d" "$STATE"; fi; }

swap_off() {
	if grep -q "^$SWAPFILE " /proc/swaps; then swapoff "$SWAPFILE"; fi
}

zswap_restore() {
	[ -n "$ZSWAP_SAVED" ] || return 0
	set -- $ZSWAP_SAVED
	echo N >"$ZSWAP/enabled"                # off first: then the knobs, then the old state
	echo "$2" >"$ZSWAP/compressor"
	echo "$3" >"$ZSWAP/max_pool_percent"
	if [ "${4:--}" != - ] && [ -w "$ZSWAP/shrinker_enabled" ]; then echo "$4" >"$ZSWAP/shrinker_enabled"; fi
	echo "$1" >"$ZSWAP/enabled"
	ZSWAP_SAVED=
}

PAGECLUSTER_SAVED=                      # vm.page-cluster before micro's kernel case
pagecluster_restore() {
	[ -n "$PAGECLUSTER_SAVED" ] || return 0
	echo "$PAGECLUSTER_SAVED" >/proc/sys/vm/page-cluster
	PAGECLUSTER_SAVED=
}
haltpoll_restore() {
	[ -n "$HALTPOLL_SAVED" ] || return 0
	echo "$HALTPOLL_SAVED" >"$HALTPOLL"
	HALTPOLL_SAVED=
}

cgroup_remove() {
	[ -n "$CG" ] || return 0
	# The tasks are gone (killed and reaped) before we get here; a v1 memory
	# cgroup with no tasks can be removed, its charges move to the parent.
	for _ in 1 2 3 4 5; do rmdir "$CG" 2>/dev/null && break; sleep 0.2; done
	[ -d "$CG" ] && echo "bench: WARNING: could not remove $CG" >&2
	CG=
}

WORKERS_PIDS=()                         # the jobs of a workers case
workers_kill() {
	local p
	for p in "${WORKERS_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
}

cleanup() {
	set +e
	[ -n "$WPID" ] && kill -KILL "$WPID" 2>/dev/null
	workers_kill
	[ -n "$LPID" ] && kill "$LPID" 2>/dev/null
	[ -n "$KPID" ] && kill "$KPID" 2>/dev/null
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null
	wait 2>/dev/null
	swap_off
	rm -f "$SWAPFILE" "$WBFILE"
	zswap_restore
	haltpoll_restore
	pagecluster_restore
	cgroup_remove
	[ "$DEBUGFS_MOUNTED" -eq 1 ] && umount "$DEBUGFS"
	rm -f "$STATE"
	# every part's raw figures: cases (compare), wbcases, wcases, rcases
	[ -n "${BENCH_KEEP:-}" ] && rm -rf "$BENCH_KEEP" && mkdir -p "$BENCH_KEEP" &&
		cp -r "$TMP"/*cases "$BENCH_KEEP"/ 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP    # through the EXIT trap

# pid_is PID EXE: PID is still that program (and not a reused pid).
pid_is() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$2" ]; }

# A run killed with SIGKILL left its processes, swap file, zswap settings,
# cgroup or debugfs mount behind: undo all that before measuring anything.
recover_stale() {
	local what a b c d
	if [ -f "$STATE" ]; then
		echo "bench: a previous run did not clean up; restoring from $STATE" >&2
		# Workloads (and redis) first, then their daemons (TERM: a daemon gives back
		# what it holds before it exits), so swap and cgroups come free.
		while read -r what a b; do
			if [ "$what" = pid ] && [ "${b##*/}" != zswapd ] && pid_is "$a" "$b"; then
				kill -KILL "$a"
			fi
		done <"$STATE"
		while read -r what a b; do
			if [ "$what" = pid ] && [ "${b##*/}" = zswapd ] && pid_is "$a" "$b"; then
				kill -TERM "$a"
				for _ in $(seq 100); do pid_is "$a" "$b" || break; sleep 0.1; done
			fi
		done <"$STATE"
		while read -r what a b c d; do
			case $what in
			zswap) ZSWAP_SAVED="$a $b $c ${d:--}"; zswap_restore ;;
			haltpoll) HALTPOLL_SAVED=$a; haltpoll_restore ;;
			pagecluster) PAGECLUSTER_SAVED=$a; pagecluster_restore ;;
			debugfs) if mountpoint -q "$DEBUGFS"; then umount "$DEBUGFS"; fi ;;
			esac
		done <"$STATE"
	fi
	swap_off
	rm -f "$SWAPFILE" "$WBFILE"
	for d in "$CGROOT/$CGPREFIX"*; do
		[ -d "$d" ] || continue
		for _ in $(seq 50); do [ -z "$(cat "$d/tasks")" ] && break; sleep 0.1; done
		if rmdir "$d" 2>/dev/null; then
			echo "bench: removed stale cgroup $d" >&2
		else
			echo "bench: WARNING: stale cgroup $d still has tasks, leaving it" >&2
		fi
	done
	rm -f "$STATE"
}
recover_stale

if [ -n "${BENCH_DAEMON_CPUS:-}" ] && ! taskset -c "$BENCH_DAEMON_CPUS" true 2>/dev/null; then
	echo "bench: BENCH_DAEMON_CPUS=$BENCH_DAEMON_CPUS is not a CPU list taskset can use here" >&2
	exit 2
fi
if [ -n "${BENCH_HALT_POLL_NS:-}" ]; then
	case $BENCH_HALT_POLL_NS in
	*[!0-9]*) echo "bench: BENCH_HALT_POLL_NS must be a number of nanoseconds" >&2; exit 2 ;;
	esac
	[ -w "$HALTPOLL" ] || { echo "bench: BENCH_HALT_POLL_NS: no $HALTPOLL (not a KVM guest with haltpoll)" >&2; exit 2; }
	HALTPOLL_SAVED=$(cat "$HALTPOLL")
	state_add "haltpoll $HALTPOLL_SAVED"
	echo "$BENCH_HALT_POLL_NS" >"$HALTPOLL"
fi

# The command line that reproduces this run: the knobs it was given, and
# the CPUs it was held to when that is not all of them (taskset -c 0
# tests/bench/run.sh runs every workload, kernel or zswapd, and the daemon
# on one CPU: their affinity is inherited).
bench_command() {  # ARGS...
	local pin=
	[ "$(nproc)" = "$(getconf _NPROCESSORS_ONLN)" ] || pin="taskset -c $(taskset -pc $$ | sed 's/.*: //') "
	local v knobs=
	for v in BENCH_SIZE_MIB BENCH_SECONDS BENCH_WARMUP BENCH_ROUNDS BENCH_HALT_POLL_NS BENCH_DAEMON_CPUS \
		WORKERS_NS SQUEEZE_FILL_MIBPS PROACTIVE_SECONDS; do
		case ${!v:-} in
		"") ;;
		*" "*) knobs="$knobs$v=\"${!v}\" " ;;
		*) knobs="$knobs$v=${!v} " ;;
		esac
	done
	[ -z "${BENCH_OUT:-}" ] || knobs="${knobs}BENCH_OUT=${BENCH_OUT#"$ROOT"/} "
	echo "$knobs${BENCH_ZSWAPD_CONF:+BENCH_ZSWAPD_CONF='$BENCH_ZSWAPD_CONF' }${pin}tests/bench/run.sh${*:+ $*}"
}

start_daemon() {  # COMPRESSOR [CONFIG]
	local conf=${2:-}
	if [ -n "${BENCH_ZSWAPD_CONF:-}" ]; then
		{ if [ -n "$conf" ]; then cat "$conf"; fi; printf '%b\n' "$BENCH_ZSWAPD_CONF"; } \
			>"$TMP/zswapd-extra.conf"
		conf=$TMP/zswapd-extra.conf
	fi
	${BENCH_DAEMON_CPUS:+taskset -c "$BENCH_DAEMON_CPUS"} \
		"$B/zswapd" ${SUPERVISE:+--supervise} -f -s "$ZSWAP_SOCKET" --compressor "$1" \
		${conf:+-c "$conf"} 2>"$TMP/daemon.log" 9>&- &
	DPID=$!
	state_add "pid $DPID $B/zswapd"
	for _ in $(seq 100); do "$B/zswapctl" stats >/dev/null 2>&1 && return 0; sleep 0.05; done
	cat "$TMP/daemon.log"; return 1
}
stop_daemon() {
	kill -TERM "$DPID" 2>/dev/null || true
	wait "$DPID" || echo "bench: zswapd exited with $?" >&2
	state_drop_pid "$DPID"
	DPID=
}

# The end of every case: the daemon stopped (its log kept), the kernel's
# setup undone, a failure shouted with the tails of LOGs.  STATUS is ok,
# OOM-killed... or what went wrong; CASE_STATUS is set to it, with
# "; zswapd died" added if the daemon did.
case_end() {  # MODE NAME STATUS LOG...
	local mode=$1 name=$2 f
	CASE_STATUS=$3
	shift 3
	if [ "$mode" = zswapd ] && [ -n "$DPID" ]; then
		alive "$DPID" || CASE_STATUS="$CASE_STATUS; zswapd died"
		stop_daemon
		cp "$TMP/daemon.log" "$CASE/daemon.log"
	fi
	case $mode in swap | zswap) kernel_teardown ;; esac
	case $CASE_STATUS in
	ok | OOM-killed* | "no progress, killed") ;;
	*)
		FAILED=1
		echo "bench: !!!!! $name: $CASE_STATUS !!!!!" >&2
		for f; do tail -n 10 "$f"; done | sort | uniq -c | sort -rn | head -n 20 >&2
		[ -f "$CASE/daemon.log" ] && tail -n 20 "$CASE/daemon.log" >&2
		;;
	esac
	return 0
}

# What the figures depend on most besides the CPU: the hypervisor (a PVM
# guest pays a hypercall for each TLB shootdown, and UFFDIO_MOVE does one
# per run of pages) and how an idle vCPU waits (each fault round trip wakes
# one).
platform() {
	local hv idle
	hv=$(dmesg 2>/dev/null | sed -n 's/.*Hypervisor detected: //p' | head -n1)
	idle=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null) || idle=
	[ "$idle" != haltpoll ] || idle="haltpoll, guest_halt_poll_ns $(cat "$HALTPOLL" 2>/dev/null)"
	echo "${hv:+$hv guest, }cpuidle ${idle:-unknown}"
}
host="$(nproc) vCPU $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1), $(uname -r), $(platform)"
stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# ---------------------------------------------------------------- micro
micro_row() {  # NAME RESULT
	python3 - "$1" "$2" >>"$OUT/micro.md" <<'EOF'
import json, sys
c, r = sys.argv[1], json.loads(sys.argv[2])
ph = " | ".join(f"{r.get(k, 0):.2f}" for k in ("zswapd_us_per_load", "decompress_us_per_load", "map_us_per_load"))
print(f"| {c} | {r['store_us_per_page']:.2f} | {r['load_us_mean']:.2f} | {r['load_us_p50']:.2f} | {r['load_us_p90']:.2f} | {r['load_us_p99']:.2f} | {r['pool_bytes_per_stored_page']:.0f} | {ph} |")
EOF
}

roundtrip_row() {  # RESULT of roundtrip
	python3 - "$1" >>"$OUT/micro.md" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
print("| userfaultfd round trip alone (no zswapd: a ready page copied in) | — | %.2f | %.2f | %.2f | %.2f | — | %.2f | — | %.2f |"
      % (r["load_us_mean"], r["load_us_p50"], r["load_us_p90"], r["load_us_p99"],
         r["server_us_per_load"], r["copy_us_per_load"]))
EOF
}

# run_micro_kernel MIB ROUNDS: micro's loads served by kernel zswap (lzo,
# vm.page-cluster 0: one page a fault, as zswapd serves them), in this run;
# the memory pushed out before each round by the cgroup's limit forced down,
# then lifted.  Its JSON in $TMP/micro.kernel.json, and a row in micro.md.
run_micro_kernel() {
	local mib=$1 rounds=$2 fifo=$TMP/micro.in pool=0 stored=0 r res
	SIZE=$mib
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	kernel_setup zswap $((2 * mib))
	PAGECLUSTER_SAVED=$(cat /proc/sys/vm/page-cluster)
	state_add "pagecluster $PAGECLUSTER_SAVED"
	echo 0 >/proc/sys/vm/page-cluster
	rm -f "$fifo"
	mkfifo "$fifo"
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$B/micro" "$mib" "$rounds" kernel \
		<"$fifo" >"$TMP/micro.kernel.json" 2>"$TMP/micro.kernel.err" 9>&- &
	WPID=$!
	state_add "pid $WPID $B/micro"
	exec 8>"$fifo"
	for r in $(seq "$rounds"); do
		for _ in $(seq 600); do
			[ "$(grep -c 'push out' "$TMP/micro.kernel.err")" -ge "$r" ] && break
			alive "$WPID" || break
			sleep 0.1
		done
		echo $((16 << 20)) >"$CG/memory.limit_in_bytes" 2>/dev/null || true
		echo -1 >"$CG/memory.limit_in_bytes"
		if [ "$r" -eq 1 ] && [ -d "$DEBUGFS/zswap" ]; then
			pool=$(cat "$DEBUGFS/zswap/pool_total_size")
			stored=$(cat "$DEBUGFS/zswap/stored_pages")
		fi
		echo >&8
	done
	exec 8>&-
	wait "$WPID" || echo "bench: micro under kernel zswap failed: $(tail -n 3 "$TMP/micro.kernel.err")" >&2
	state_drop_pid "$WPID"
	WPID=
	pagecluster_restore
	kernel_teardown
	rm -f "$SWAPFILE"
	res=$(cat "$TMP/micro.kernel.json")
	echo "kernel zswap lzo: $res"
	[ -n "$res" ] || return 0
	printf ',{"compressor":"kernel zswap lzo, page-cluster 0","host":"%s","date":"%s","pool_total_size":%s,"stored_pages":%s,"result":%s}' \
		"$host" "$stamp" "$pool" "$stored" "$res" >>"$OUT/micro.json"
	python3 - "$res" "$pool" "$stored" >>"$OUT/micro.md" <<'EOF'
import json, sys
r, pool, stored = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
per = f"{pool / stored:.0f}" if stored else "—"
print(f"| kernel zswap lzo, page-cluster 0 (this run) | — | {r['load_us_mean']:.2f} | {r['load_us_p50']:.2f} | {r['load_us_p90']:.2f} | {r['load_us_p99']:.2f} | {per} | — | — | — |")
EOF
}

run_micro() {
	local MIB=256 ROUNDS=3 json=$OUT/micro.json first=1 c res
	[ $QUICK -eq 1 ] && MIB=64 ROUNDS=2
	echo "[" >"$json"
	printf '\n| compressor | store µs/page | load µs mean | p50 | p90 | p99 | pool bytes/page | in zswapd µs/load | decompress | map |\n' >"$OUT/micro.md"
	printf '|---|---|---|---|---|---|---|---|---|---|\n' >>"$OUT/micro.md"
	for c in lzo lz4 zstd; do
		start_daemon "$c"
		res=$(LD_PRELOAD=$B/libzswap.so "$B/micro" $MIB $ROUNDS)
		stop_daemon
		echo "$c: $res"
		[ $first -eq 1 ] || echo "," >>"$json"
		first=0
		printf '{"compressor":"%s","host":"%s","date":"%s","result":%s}' "$c" "$host" "$stamp" "$res" >>"$json"
		micro_row "zswapd $c" "$res"
	done
	# lzo, then recompressed by zstd (recompress_seconds = 1 instead of 300):
	# the pool and the loads of what stayed cold.
	printf 'recompress_seconds = 1\n' >"$TMP/recomp.conf"
	start_daemon lzo "$TMP/recomp.conf"
	res=$(LD_PRELOAD=$B/libzswap.so "$B/micro" $MIB 1 recompressed)
	stop_daemon
	echo "lzo, recompressed: $res"
	printf ',{"compressor":"lzo, recompressed with zstd","host":"%s","date":"%s","result":%s}' \
		"$host" "$stamp" "$res" >>"$json"
	micro_row "zswapd lzo, recompressed by zstd (1 round)" "$res"
	# lzo as the shipped unit runs it, under an fd store (here its keeper):
	# every store and load journaled, every page taken out marked.
	SUPERVISE=1 start_daemon lzo
	res=$(LD_PRELOAD=$B/libzswap.so "$B/micro" $MIB $ROUNDS)
	stop_daemon
	echo "lzo, surviving a crash: $res"
	printf ',{"compressor":"lzo, surviving a crash","host":"%s","date":"%s","result":%s}' \
		"$host" "$stamp" "$res" >>"$json"
	micro_row "zswapd lzo, surviving a crash (fd store: journal, markers)" "$res"
	# lzo with idle CPUs left to sleep through the loads: what holding them
	# polling (fault_idle_poll_ms) is worth on this machine.
	printf 'fault_idle_poll_ms = 0\n' >"$TMP/nopoll.conf"
	start_daemon lzo "$TMP/nopoll.conf"
	res=$(LD_PRELOAD=$B/libzswap.so "$B/micro" $MIB $ROUNDS)
	stop_daemon
	echo "lzo, idle CPUs sleeping: $res"
	printf ',{"compressor":"lzo, fault_idle_poll_ms = 0","host":"%s","date":"%s","result":%s}' \
		"$host" "$stamp" "$res" >>"$json"
	micro_row "zswapd lzo, idle CPUs left to sleep (fault_idle_poll_ms = 0)" "$res"
	# No zswapd: another process copies each page in, nothing else.
	res=$("$B/roundtrip" $MIB $ROUNDS)
	echo "userfaultfd round trip alone: $res"
	printf ',{"compressor":"none, userfaultfd round trip alone","host":"%s","date":"%s","result":%s}' \
		"$host" "$stamp" "$res" >>"$json"
	roundtrip_row "$res"
	if kernel_cases_possible; then
		run_micro_kernel "$MIB" "$ROUNDS"
	else
		echo "bench: $KERNEL_SKIP" >&2
	fi
	echo "]" >>"$json"
	printf '\nin zswapd µs/load: from its read of the fault to the wake (fault_stall_usec over loads), of which decompress (load_decompress_nsec) and map (UFFDIO_COPY, load_map_nsec); the rest of a load (mean less this) is the kernel'"'"'s: the fault delivered, the daemon woken, the thread woken and back.\n' >>"$OUT/micro.md"
	printf '\nRound-trip row: tests/bench/roundtrip.c, the same loads served by a forked process that reads each fault and answers it with UFFDIO_COPY of its own copy of the page, polling as zswapd does in a burst and idle CPUs held polling; its in zswapd column is that server'"'"'s time from its read to the copy'"'"'s return, its map column the UFFDIO_COPY. What a zswapd load costs over it is what zswapd adds; what it costs over kernel zswap'"'"'s is the round trip itself.\n' >>"$OUT/micro.md"
	printf '\nKernel zswap row: the same program and loads, in this run, with the process in a cgroup v1 memory cgroup, its memory pushed out before each round by the limit forced down to 16 MiB and lifted, vm.page-cluster = 0 (one page a fault, as zswapd serves them) and kernel zswap lzo; no store figure (the kernel stores under the limit, untimed); pool bytes/page from debugfs zswap after the first push.\n' >>"$OUT/micro.md"
	printf '\n%s, %s MiB x %s rounds; %s.\nCommand: `%s`\n' "$host" "$MIB" "$ROUNDS" "$stamp" \
		"$(bench_command "$@")" >>"$OUT/micro.md"
	cat "$OUT/micro.md"
}

# ---------------------------------------------------------------- compare

# The kernel cases need the machine's swap to be ours alone: someone else's
# swap device would take part of the load and make the figures meaningless.
kernel_cases_possible() {
	if [ "$(wc -l </proc/swaps)" -gt 1 ]; then
		KERNEL_SKIP="swap already on (not ours): kernel cases skipped"
	elif [ ! -w "$ZSWAP/enabled" ] || [ ! -f "$CGROOT/memory.limit_in_bytes" ]; then
		KERNEL_SKIP="no zswap parameters or no cgroup v1 memory controller: kernel cases skipped"
	else
		KERNEL_SKIP=
	fi
	[ -z "$KERNEL_SKIP" ]
}

# zswap state on arrival is saved once, before the first change.
zswap_set() {  # ENABLED(Y|N)
	local pct need
	if [ -z "$ZSWAP_SAVED" ]; then
		ZSWAP_SAVED="$(cat "$ZSWAP/enabled") $(cat "$ZSWAP/compressor") $(cat "$ZSWAP/max_pool_percent") $(cat "$ZSWAP/shrinker_enabled" 2>/dev/null || echo -)"
		state_add "zswap $ZSWAP_SAVED"
	fi
	echo N >"$ZSWAP/enabled"
	echo lzo >"$ZSWAP/compressor"
	# The pool must be able to hold all of the workload's data, even
	# uncompressed, so that the pool limit never enters the comparison.
	pct=$(set -- $ZSWAP_SAVED; echo "$3")
	need=$(( (SIZE * 100 + MEMTOTAL_MIB - 1) / MEMTOTAL_MIB + 1 ))
	[ "$need" -gt "$pct" ] && pct=$need
	# --writeback: the pool cap is the point, not to be lifted
	[ -n "$ZSWAP_POOL_PCT" ] && pct=$ZSWAP_POOL_PCT
	echo "$pct" >"$ZSWAP/max_pool_percent"
	# The shrinker writes the pool's coldest entries back to swap under
	# memory-cgroup pressure.  Off (the default), a cgroup v1 budget of half
	# this workload or less OOM-kills it (seen on the KVM guest, at every
	# budget of compare); on, it runs.
	if [ -w "$ZSWAP/shrinker_enabled" ]; then echo Y >"$ZSWAP/shrinker_enabled"; fi
	echo "$1" >"$ZSWAP/enabled"
}

kernel_setup() {  # MODE BUDGET_MIB
	if [ ! -f "$SWAPFILE" ]; then
		# fallocate, not a sparse file: swapon refuses files with holes.
		fallocate -l $((2 * SIZE))M "$SWAPFILE"
		chmod 600 "$SWAPFILE"
		mkswap "$SWAPFILE" >/dev/null
	fi
	swapon "$SWAPFILE"
	if [ "$1" = zswap ]; then zswap_set Y; else zswap_set N; fi
	if [ "$1" = zswap ] && ! mountpoint -q "$DEBUGFS"; then
		state_add debugfs
		mount -t debugfs none "$DEBUGFS"
		DEBUGFS_MOUNTED=1
	fi
	CG=$CGROOT/$CGPREFIX$$
	mkdir "$CG"
	echo $(($2 * 1024 * 1024)) >"$CG/memory.limit_in_bytes"
}

kernel_teardown() {
	cgroup_remove
	swap_off                   # the workload has exited: nothing left to read back
	zswap_set N
}

# alive and wait_phase run all through the measured window, on the same
# two CPUs as the workload and zswapd: they use shell builtins only, and
# wait_phase looks five times a second.  Looking twenty times a second with
# grep and sed (60-80 programs started a second) cost zswapd a third of its
# accesses/s on the PVM guest (by hand, 1 GiB at limit 438M: 36.1k and
# 41.3k with such a loop beside it, 56.3k and 53.8k without).
alive() {  # PID: running, not a zombie
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) } # the command name may hold ") ": the state follows the last
	st=${st%% *}
	[ -n "$st" ] && [ "$st" != Z ]
}

# wait_phase N SECONDS: until the workload has printed its Nth handshake
# line ("..., waiting for SIGUSR1").  1: it died first; 2: timed out.
wait_phase() {
	local deadline=$((SECONDS + $2)) n line
	while :; do
		n=0
		# (the file may not exist yet: the shell creates it as it forks)
		if [ -e "$CASE/workload.err" ]; then
			while IFS= read -r line; do
				[[ $line == *'waiting for SIGUSR1'* ]] && n=$((n + 1))
			done <"$CASE/workload.err"
		fi
		[ "$n" -lt "$1" ] || return 0
		alive "$WPID" || return 1
		[ $SECONDS -lt $deadline ] || return 2
		sleep 0.2
	done
}

# Everything the report needs, read while the workload waits at a handshake
# (nothing moves then: the window's deltas are exact).  TAG: w (after
# warm-up) or m (after the measured window).
snapshot() {  # TAG
	local s=$CASE/$1
	cat /proc/vmstat >"$s.vmstat"
	cat /proc/meminfo >"$s.meminfo"
	cat "/proc/$WPID/status" >"$s.status" 2>/dev/null || true
	if [ -n "$DPID" ]; then
		cat "/proc/$DPID/stat" >"$s.dstat"
		"$B/zswapctl" stats >"$s.zswapd" || true
	fi
	if [ -d "$DEBUGFS/zswap" ]; then
		grep -r . "$DEBUGFS/zswap" >"$s.debugfs" 2>/dev/null || true
	fi
	if [ -n "$CG" ]; then
		for f in usage_in_bytes max_usage_in_bytes memsw.usage_in_bytes; do
			echo "$f $(cat "$CG/memory.$f")"
		done >"$s.cgroup"
		cat "$CG/memory.stat" >>"$s.cgroup"
	fi
}

# Fallback while `zswapctl limit` does not exist: the same policy from out
# here, evicting the excess over LIMIT every 100 ms with `zswapctl reclaim`.
limiter_loop() {  # PID LIMIT_KB
	local rss
	while alive "$1"; do
		rss=$(sed -n 's/^RssAnon:\s*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null) || break
		if [ "${rss:-0}" -gt "$2" ]; then
			"$B/zswapctl" reclaim "$1" "$((rss - $2))K" >/dev/null 2>&1 || true
		fi
		sleep 0.1
	done
}

# During the warm-up only, once a second: aim the limit at budget - pool as
# the pool settles.  The first limit comes from micro's figures (below), but
# the workload's writes make pages compress worse than micro's, so the pool
# ends up larger; L = B - pool(L) converges in a few steps (pool grows by
# only ~q for each byte L shrinks).  Fixed from the measured window on.
budget_keeper() {  # PID BUDGET_MIB
	local pool lim
	while sleep 1 && alive "$1"; do
		pool=$("$B/zswapctl" stats | awk '$1 == "pool_total_size" { print $2 }')
		[ -n "$pool" ] || break
		lim=$(($2 - (pool + 1048575) / 1048576))
		[ $lim -ge 4 ] || lim=4
		"$B/zswapctl" limit "$1" "${lim}M" >/dev/null || break
		echo "$lim" >"$CASE/limit.final"
	done
}

# The workload has allocated but not filled: make sure zswapd serves it,
# then put the limit in place before its memory grows.
zswapd_attach() {  # LIMIT_MIB BUDGET_MIB
	if ! "$B/zswapctl" list | awk -v p="$WPID" '$1 == p { f = 1 } END { exit !f }'; then
		echo "bench: pid $WPID is not served by zswapd" >&2
		return 1
	fi
	if [ -n "$CASE_LIMIT" ]; then
		# --writeback: a fixed limit B - P, the pool being capped at P
		"$B/zswapctl" limit "$WPID" "${1}M" >"$CASE/limit.txt"
	elif [ "$HAVE_LIMIT" -eq 1 ]; then
		"$B/zswapctl" limit "$WPID" "${1}M" >"$CASE/limit.txt"
		budget_keeper "$WPID" "$2" 9>&- &
		KPID=$!
	else
		limiter_loop "$WPID" $(($1 * 1024)) 9>&- &
		LPID=$!
	fi
}

stop_keeper() {
	if [ -n "$KPID" ]; then kill "$KPID" 2>/dev/null || true; wait "$KPID" 2>/dev/null || true; KPID=; fi
}

# After the measured window, before the verification: the verification reads
# every page back from wherever it went (swap, zswap, zswapd) -- that is the
# point of it -- but under the budget each page read would evict another, at
# disk speed for swap, tens of seconds per case.  Nothing is measured then,
# so the budget is lifted and the pages just come back.
lift_limit() {  # MODE
	case $1 in
	swap | zswap) echo -1 >"$CG/memory.limit_in_bytes" ;;
	zswapd)
		if [ "$HAVE_LIMIT" -eq 1 ]; then
			"$B/zswapctl" limit "$WPID" none >/dev/null
		elif [ -n "$LPID" ]; then
			kill "$LPID" 2>/dev/null || true
			wait "$LPID" 2>/dev/null || true
			LPID=
		fi ;;
	esac
}

# How much of the budget to leave to zswapd's pool, so that resident + pool
# stays within the budget: the pool holds the evicted part, S - L, at q bytes
# of pool per byte stored, so B = L + (S - L) q gives L = (B - S q) / (1 - q).
# q is micro's pool bytes per stored page / 4096, on the same page mix: from
# $OUT/micro.json (this run's, or the last run's into that directory), else
# from the committed tests/bench/results/micro.json (what a part run alone
# read when $OUT defaulted to tests/bench/results), else q = 0.25.
# That is the first aim; budget_keeper corrects it during the warm-up.
zswapd_limit_mib() {  # COMPRESSOR BUDGET_MIB
	python3 - "$1" "$SIZE" "$2" "$OUT/micro.json" "$ROOT/tests/bench/results/micro.json" <<'EOF'
import json, sys
comp, s, b = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
q = None
for path in sys.argv[4:]:
    try:
        for r in json.load(open(path)):
            if r["compressor"] == comp and r["result"]["pool_bytes_per_stored_page"] > 0:
                q = r["result"]["pool_bytes_per_stored_page"] / 4096
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if q is not None:
        break
q = 0.25 if q is None else q
print(max(4, int((b - s * q) / (1 - q))), f"{q:.4f}")
EOF
}

# run_case NAME MODE BUDGET_MIB COMPRESSOR: one workload run, its raw
# figures left in $CASE for report.py.
run_case() {
	local name=$1 mode=$2 budget=$3 comp=$4 rc=0 status=ok limit=0 q= oom=0 t0=$SECONDS
	local -a wl=("$B/workload" --size "$SIZE" --seconds "$SECS" --warmup "$WARMUP"
		--pattern hotcold --hot-pct 20 --hot-access-pct 80 --write-pct 50 --handshake --json)
	NCASE=$((NCASE + 1))
	CASE=$TMP/$CASES/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] $name${budget:+, budget $budget MiB}" >&2

	case $mode in
	ram)
		"${wl[@]}" >"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- &
		;;
	swap | zswap)
		kernel_setup "$mode" "${CASE_LIMIT:-$budget}"
		limit=${CASE_LIMIT:-0}
		# Into the cgroup before exec, so that every page is charged there.
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "${wl[@]}" \
			>"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- &
		;;
	zswapd)
		if [ -n "$CASE_LIMIT" ]; then
			limit=$CASE_LIMIT
			start_daemon "$comp" "$CASE_CONF"
		else
			read -r limit q < <(zswapd_limit_mib "$comp" "$budget")
			# A pool limit that holds all of the data: as for kernel zswap,
			# the pool limit must not enter the comparison.
			echo "max_pool_bytes = ${SIZE}M" >"$TMP/zswapd.conf"
			start_daemon "$comp" "$TMP/zswapd.conf"
		fi
		LD_PRELOAD=$B/libzswap.so "${wl[@]}" >"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- &
		;;
	esac
	WPID=$!
	state_add "pid $WPID $B/workload"

	# Walk it through its handshakes.  Fill (slow under a small budget),
	# warm-up, window and verification each get generous room; `stage`
	# says where it stuck if it does.
	local stage=start-up deadline
	if wait_phase 1 60 && stage="zswapd attach" &&
		{ [ "$mode" != zswapd ] || zswapd_attach "$limit" "$budget"; } &&
		kill -USR1 "$WPID" && stage="fill + warm-up" && wait_phase 2 $((WARMUP + 300)) &&
		stop_keeper && snapshot w && kill -USR1 "$WPID" && stage="measured window" &&
		wait_phase 3 $((SECS + 120)) && snapshot m && lift_limit "$mode" &&
		kill -USR1 "$WPID"; then
		stage=verification deadline=$((SECONDS + 600))
		while alive "$WPID" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
	fi
	if alive "$WPID"; then
		kill -KILL "$WPID"
		status="stuck in $stage, killed"
	fi
	wait "$WPID" 2>/dev/null || rc=$?
	state_drop_pid "$WPID"
	WPID=
	if [ -n "$LPID" ]; then kill "$LPID" 2>/dev/null || true; wait "$LPID" 2>/dev/null || true; LPID=; fi
	stop_keeper
	[ -f "$CASE/limit.final" ] && limit=$(cat "$CASE/limit.final")

	if [ -n "$CG" ]; then
		oom=$(sed -n 's/^oom_kill //p' "$CG/memory.oom_control")
	fi
	if [ "$status" != ok ]; then
		:
	elif [ $rc -eq 0 ]; then
		status=ok
	elif [ $rc -eq 1 ]; then
		status=CORRUPT
	elif [ $rc -eq 137 ] && { [ "${oom:-0}" -gt 0 ] || [ "$mode" = swap ] || [ "$mode" = zswap ]; }; then
		status=OOM-killed
	else
		status="failed (exit $rc)"
	fi
	case_end "$mode" "$name${budget:+ at $budget MiB}" "$status" "$CASE/workload.err"
	status=$CASE_STATUS
	cat >"$CASE/meta" <<EOF
name=$name
mode=$mode
compressor=$comp
budget_mib=$budget
limit_mib=$limit
pool_q=$q
rc=$rc
status=$status
oom_kill=${oom:-0}
wall_s=$((SECONDS - t0))
EOF
	echo "bench:   $status, $((SECONDS - t0)) s" >&2
}

run_compare() {
	local b c comps=lzo
	SIZE=1024 SECS=30 WARMUP=10
	[ $QUICK -eq 1 ] && SIZE=256 SECS=8 WARMUP=3
	SIZE=${BENCH_SIZE_MIB:-$SIZE} SECS=${BENCH_SECONDS:-$SECS} WARMUP=${BENCH_WARMUP:-$WARMUP}
	[ $QUICK -eq 1 ] || comps="lzo lz4 zstd"
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	HAVE_LIMIT=0
	"$B/zswapctl" --help 2>&1 | grep -q '^ *limit ' && HAVE_LIMIT=1
	FAILED=0 NCASE=0 CASES=cases   # each part its own directory of cases
	local budgets="$((SIZE / 2)) $((SIZE / 4))" kernel=1
	kernel_cases_possible || { kernel=0; echo "bench: $KERNEL_SKIP" >&2; }
	# Kernel zswap's pool lies outside its cgroup v1 budget, zswapd's
	# within: "pool outside" gives zswapd the kernel's accounting (limit =
	# budget, pool on top), so that faults per access compare the two
	# policies at the same resident memory.  And the kernel's choice for
	# pages that do not compress (stored as they are, since writeback is
	# possible), where zswapd's default without a swap file leaves them
	# resident.
	local outside=$((kernel && !QUICK))
	NCASES=$((1 + 2 * ($(echo $comps | wc -w) + 2 * kernel + outside)))
	local load
	load=$(cut -d' ' -f1-3 /proc/loadavg)

	run_case ram ram "" ""
	for b in $budgets; do
		if [ $kernel -eq 1 ]; then
			run_case swap swap "$b" ""
			run_case "zswap lzo" zswap "$b" lzo
		fi
		for c in $comps; do run_case "zswapd $c" zswapd "$b" "$c"; done
		if [ $outside -eq 1 ]; then
			printf '%s\n' "max_pool_bytes = ${SIZE}M" "store_incompressible = yes" \
				>"$TMP/zswapd-outside.conf"
			CASE_LIMIT=$b CASE_CONF=$TMP/zswapd-outside.conf
			run_case "zswapd lzo, pool outside" zswapd "$b" lzo
			CASE_LIMIT= CASE_CONF=
		fi
	done
	rm -f "$SWAPFILE"

	local cmd target=bench
	cmd=$(bench_command "$@")
	[ $QUICK -eq 1 ] && target=bench-quick
	[ -n "${MAKELEVEL:-}" ] && cmd="make $target ($cmd)"
	if ! command -v gnuplot >/dev/null; then
		# Only the plot needs it; .ci/deps does not install it (yet).
		apt-get install -y -qq gnuplot-nox >/dev/null 2>&1 ||
			echo "bench: no gnuplot (apt-get install gnuplot-nox): no compare.png" >&2
	fi
	python3 "$ROOT/tests/bench/report.py" --cases "$TMP/cases" --out "$OUT" \
		--host "$host, $(awk -v m="$MEMTOTAL_MIB" 'BEGIN { printf "%.1f", m / 1024 }') GiB RAM, $(. /etc/os-release && echo "$PRETTY_NAME"), swap file on $(findmnt -no FSTYPE -T "$(dirname "$SWAPFILE")") ($SWAPFILE)" \
		--command "$cmd" --date "$stamp" --load "$load" --size "$SIZE" --seconds "$SECS" \
		--warmup "$WARMUP" --limit-cmd "$([ $HAVE_LIMIT -eq 1 ] && echo limit || echo 'reclaim loop')" \
		--kernel-skip "${KERNEL_SKIP:-}"
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a run lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- writeback

# One total budget B = S/4 for resident + pool, the pool capped at
# P = B/4, and a swap file behind it: who moves fewer bytes to and from disk?
run_writeback() {
	SIZE=1024 SECS=30 WARMUP=10
	[ $QUICK -eq 1 ] && SIZE=256 SECS=8 WARMUP=3
	SIZE=${BENCH_SIZE_MIB:-$SIZE} SECS=${BENCH_SECONDS:-$SECS} WARMUP=${BENCH_WARMUP:-$WARMUP}
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	HAVE_LIMIT=0
	"$B/zswapctl" --help 2>&1 | grep -q '^ *limit ' && HAVE_LIMIT=1
	[ $HAVE_LIMIT -eq 1 ] || { echo "bench: --writeback needs \`zswapctl limit\`" >&2; return 1; }
	local budget=$((SIZE / 4)) pool pct kernel=1 load
	pool=$((budget / 4))
	# kernel zswap's cap is a whole percent of MemTotal: the largest one
	# not above P, at least 1 (which on a big machine is far above P).
	pct=$((pool * 100 / MEMTOTAL_MIB))
	[ $pct -ge 1 ] || pct=1
	FAILED=0 NCASE=0 CASES=wbcases
	kernel_cases_possible || { kernel=0; echo "bench: $KERNEL_SKIP" >&2; }
	NCASES=$((1 + 2 * kernel))
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	echo "bench: writeback: S $SIZE MiB, budget B $budget MiB, pool cap P $pool MiB" \
		"(kernel zswap: $pct% of $MEMTOTAL_MIB MiB = $((MEMTOTAL_MIB * pct / 100)) MiB)" >&2

	if [ $kernel -eq 1 ]; then
		CASE_LIMIT=$budget
		run_case "swap only" swap "$budget" ""
		CASE_LIMIT=$((budget - pool)) ZSWAP_POOL_PCT=$pct
		run_case "zswap lzo + swap" zswap "$budget" lzo
		ZSWAP_POOL_PCT=
	fi
	printf 'max_pool_bytes = %sM\nswap_file = %s\nswap_file_size = %sM\n' \
		"$pool" "$WBFILE" $((2 * SIZE)) >"$TMP/zswapd-wb.conf"
	CASE_LIMIT=$((budget - pool)) CASE_CONF=$TMP/zswapd-wb.conf
	run_case "zswapd lzo + swap file" zswapd "$budget" lzo
	CASE_LIMIT= CASE_CONF=
	rm -f "$SWAPFILE" "$WBFILE"

	local cmd
	cmd=$(bench_command "$@")
	python3 "$ROOT/tests/bench/report.py" --writeback --cases "$TMP/wbcases" --out "$OUT" \
		--host "$host, $(awk -v m="$MEMTOTAL_MIB" 'BEGIN { printf "%.1f", m / 1024 }') GiB RAM, $(. /etc/os-release && echo "$PRETTY_NAME"), swap files on $(findmnt -no FSTYPE -T "$(dirname "$SWAPFILE")") ($SWAPFILE, $WBFILE)" \
		--command "$cmd" --date "$stamp" --load "$load" --size "$SIZE" --seconds "$SECS" \
		--warmup "$WARMUP" --budget "$budget" --pool-cap "$pool" --zswap-pool-pct "$pct" \
		--memtotal "$MEMTOTAL_MIB" --kernel-skip "${KERNEL_SKIP:-}"
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a run lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- workers

# N jobs of W MiB each, started together
# under one budget B, like `make -jN` on a small machine.  How long until the
# last one is done, and how much went to disk?  Each job fills its W MiB,
# does a fixed number of accesses (hot/cold 20/80, half writes) and checks
# every page; N rises until N×W is 4× B.
#   ram     no budget;
#   swap    all N in one cgroup v1 memory cgroup, limit B, swap file;
#   zswap   the same with kernel zswap on (lzo);
#   zswapd  zswapd lzo with default_limit_percent = L / (N×W), so that each
#           job keeps its share of L = B − pool allowance (as in compare);
#           no limit while N×W fits in B.  Per-process limits: one job
#           gives as much as another, hot or cold.
#   zswapd one budget: `zswapctl limit --all L`, one budget for the N jobs
#           as the cgroup has: the coldest job gives first.
# Resident + pool of the case now, in kB, and the pool alone: the cgroup's
# usage (kernel) or the jobs' RssAnon summed, plus kernel zswap's or
# zswapd's pool.
workers_sample() {  # MODE: sets SAMPLE_KB and SAMPLE_POOL_KB
	local p k v rest
	SAMPLE_KB=0 SAMPLE_POOL_KB=0
	# Shell builtins only, as alive and wait_phase (above): this runs four
	# times a second through the whole case, and a sed per job and sample
	# (70 programs a second at N = 16) cost the zswapd cases CPU the kernel
	# ones, with one cat, did not pay.  (`if`, not `&&`, and `|| true`: a
	# loop whose last test failed, or a job gone, must not stop set -e.)
	case $1 in
	swap | zswap)
		read -r v <"$CG/memory.usage_in_bytes" && SAMPLE_KB=$((v / 1024)) || true ;;
	*)
		for p in "${WORKERS_PIDS[@]}"; do
			while read -r k v rest; do
				if [ "$k" = RssAnon: ]; then SAMPLE_KB=$((SAMPLE_KB + v)); break; fi
			done 2>/dev/null <"/proc/$p/status" || true
		done ;;
	esac
	case $1 in
	zswap)
		while read -r k v rest; do
			if [ "$k" = Zswap: ]; then SAMPLE_POOL_KB=$v; break; fi
		done </proc/meminfo ;;
	zswapd) # one program: only the daemon knows its pool
		while read -r k v rest; do
			if [ "$k" = pool_total_size ]; then SAMPLE_POOL_KB=$((v / 1024)); break; fi
		done < <("$B/zswapctl" stats 2>/dev/null) ;;
	esac
	SAMPLE_KB=$((SAMPLE_KB + SAMPLE_POOL_KB))
}

workers_snapshot() {  # TAG
	cat /proc/vmstat >"$CASE/$1.vmstat"
	if [ -n "$DPID" ]; then
		cat "/proc/$DPID/stat" >"$CASE/$1.dstat"
		"$B/zswapctl" stats >"$CASE/$1.zswapd" || true
	fi
}

run_workers_case() {  # NAME MODE N
	local name=$1 mode=$2 n=$3 i p rc t0 t1 peak=0 kb pct=0 limit= q= deadline live
	local ok=0 oomed=0 bad=0 other=0 status oom_kill=0 group=0 budget= sum=0 nsamples=0
	if [ "$mode" = zswapd-group ]; then
		mode=zswapd group=1
	fi
	local -a wl=("$B/workload" --size "$WSIZE" --accesses "$WACCESSES" --warmup 0
		--pattern hotcold --hot-pct 20 --hot-access-pct 80 --write-pct 50 --json)
	NCASE=$((NCASE + 1))
	CASE=$TMP/wcases/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] workers: $name, N = $n ($((n * WSIZE)) MiB)" >&2

	case $mode in
	swap | zswap) kernel_setup "$mode" "$WBUDGET" ;;
	zswapd)
		echo "max_pool_bytes = $((n * WSIZE))M" >"$TMP/zswapd-workers.conf"
		if [ $((n * WSIZE)) -gt "$WBUDGET" ]; then
			read -r limit q < <(SIZE=$((n * WSIZE)) zswapd_limit_mib lzo "$WBUDGET")
			pct=$((limit * 100 / (n * WSIZE)))
			[ $pct -ge 1 ] || pct=1
			[ $group -eq 1 ] || echo "default_limit_percent = $pct" >>"$TMP/zswapd-workers.conf"
		fi
		start_daemon lzo "$TMP/zswapd-workers.conf"
		if [ $group -eq 1 ] && [ -n "$limit" ]; then
			budget=$limit pct=0
			"$B/zswapctl" limit --all "${budget}M" >&2
		fi ;;
	esac
	workers_snapshot 0
	WORKERS_PIDS=() PEAK_POOL_KB=0
	t0=$(date +%s.%N)
	for i in $(seq "$n"); do
		case $mode in
		ram) "${wl[@]}" --seed "$i" >"$CASE/w$i.json" 2>"$CASE/w$i.err" 9>&- & ;;
		swap | zswap)
			sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "${wl[@]}" --seed "$i" \
				>"$CASE/w$i.json" 2>"$CASE/w$i.err" 9>&- & ;;
		zswapd)
			LD_PRELOAD=$B/libzswap.so "${wl[@]}" --seed "$i" \
				>"$CASE/w$i.json" 2>"$CASE/w$i.err" 9>&- & ;;
		esac
		WORKERS_PIDS+=($!)
		state_add "pid $! $B/workload"
	done
	# Until the last job exits: the peak of resident + pool, 4 times a second.
	deadline=$((SECONDS + WDEADLINE))
	while [ $SECONDS -lt $deadline ]; do
		live=0
		for p in "${WORKERS_PIDS[@]}"; do alive "$p" && live=1 && break; done
		[ $live -eq 1 ] || break
		workers_sample "$mode"
		[ "$SAMPLE_KB" -gt "$peak" ] && peak=$SAMPLE_KB
		sum=$((sum + SAMPLE_KB)) nsamples=$((nsamples + 1))
		[ "$SAMPLE_POOL_KB" -gt "$PEAK_POOL_KB" ] && PEAK_POOL_KB=$SAMPLE_POOL_KB
		sleep 0.25
	done
	t1=$(date +%s.%N)
	workers_kill
	# The cgroup keeps its exact peak; a short case may end before a sample.
	if [ -n "$CG" ]; then
		kb=$(($(cat "$CG/memory.max_usage_in_bytes") / 1024 + PEAK_POOL_KB))
		[ "$kb" -gt "$peak" ] && peak=$kb
	fi
	for p in "${WORKERS_PIDS[@]}"; do
		rc=0
		wait "$p" 2>/dev/null || rc=$?
		state_drop_pid "$p"
		case $rc in
		0) ok=$((ok + 1)) ;;
		1) bad=$((bad + 1)) ;;
		137) if [ "$mode" = swap ] || [ "$mode" = zswap ]; then oomed=$((oomed + 1)); else other=$((other + 1)); fi ;;
		*) other=$((other + 1)) ;;
		esac
	done
	WORKERS_PIDS=()
	workers_snapshot 1
	[ -n "$CG" ] && oom_kill=$(sed -n 's/^oom_kill //p' "$CG/memory.oom_control")
	if [ $bad -gt 0 ]; then
		status="CORRUPT ($bad of $n)"
	elif [ $ok -eq "$n" ]; then
		status=ok
	elif [ $SECONDS -ge $deadline ]; then
		status="not done after $WDEADLINE s, killed"
	elif [ $oomed -gt 0 ] && [ $other -eq 0 ] && [ "${oom_kill:-0}" -gt 0 ]; then
		status="OOM-killed $oomed of $n"
	else
		status="failed ($other of $n)"
	fi
	case_end "$mode" "workers $name N=$n" "$status" "$CASE"/w*.err
	status=$CASE_STATUS
	{
		echo "name=$name"
		echo "mode=$mode"
		echo "workers=$n"
		awk -v a="$t1" -v b="$t0" 'BEGIN { printf "runtime_s=%.3f\n", a - b }'
		echo "peak_kb=$peak"
		echo "mean_kb=$((nsamples ? sum / nsamples : 0))"
		echo "limit_percent=$pct"
		echo "group_budget_mib=$budget"
		echo "pool_q=$q"
		echo "oom_kill=${oom_kill:-0}"
		echo "status=$status"
	} >"$CASE/meta"
	echo "bench:   $status, $(sed -n 's/^runtime_s=//p' "$CASE/meta") s" >&2
}

run_workers() {
	local n m ns modes="ram zswapd zswapd-group" load
	WSIZE=64 WBUDGET=256 WACCESSES=200000 WDEADLINE=600 ns="2 4 8 12 16"
	[ $QUICK -eq 1 ] && WSIZE=32 WBUDGET=128 WACCESSES=100000 WDEADLINE=300 ns="2 8"
	ns=${WORKERS_NS:-$ns} # e.g. WORKERS_NS="8 12 16": only those N
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	FAILED=0 NCASE=0
	if kernel_cases_possible; then modes="ram swap zswap zswapd zswapd-group"; else echo "bench: $KERNEL_SKIP" >&2; fi
	NCASES=$(($(echo $modes | wc -w) * $(echo $ns | wc -w)))
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	# the kernel cases' swap file and zswap pool must hold the largest N
	SIZE=$((${ns##* } * WSIZE))
	for n in $ns; do
		for m in $modes; do
			case $m in
			ram) run_workers_case "all in RAM" ram "$n" ;;
			swap) run_workers_case swap swap "$n" ;;
			zswap) run_workers_case "zswap lzo" zswap "$n" ;;
			zswapd) run_workers_case "zswapd lzo" zswapd "$n" ;;
			zswapd-group) run_workers_case "zswapd lzo, one budget" zswapd-group "$n" ;;
			esac
		done
	done
	rm -f "$SWAPFILE"
	python3 "$ROOT/tests/bench/report.py" --workers --cases "$TMP/wcases" --out "$OUT" \
		--host "$host, $(awk -v m="$MEMTOTAL_MIB" 'BEGIN { printf "%.1f", m / 1024 }') GiB RAM" \
		--command "$(bench_command "$@")" --date "$stamp" --load "$load" \
		--size "$WSIZE" --budget "$WBUDGET" --accesses "$WACCESSES" --seconds 0 --warmup 0
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a workers run lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- squeeze

psi_some_us() {  # the host's memory "some" stall, in microseconds, in all
	sed -n 's/^some .*total=\([0-9]*\)$/\1/p' /proc/pressure/memory 2>/dev/null || echo 0
}

run_squeeze_case() {  # NAME MODE
	local name=$1 mode=$2 i rc t0 t1 psi0 psi1 st0=0 st1=0 max status
	local ok=0 bad=0 killed=0 other=0 oom_kill=0 deadline live
	local -a pre=() pids=()
	local -a wl=("$B/workload" --pattern hotcold --hot-pct 50 --hot-access-pct 100 --write-pct 50
		--warmup 0 --json)
	NCASE=$((NCASE + 1))
	CASE=$TMP/scases/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] squeeze: $name" >&2
	case $mode in
	zswap) kernel_setup zswap "$SQ_LIMIT" ;;
	*) CG=$CGROOT/$CGPREFIX$$
	   mkdir "$CG"
	   echo $((SQ_LIMIT * 1024 * 1024)) >"$CG/memory.limit_in_bytes" ;;
	esac
	if [ "$mode" = zswapd ]; then
		: >"$TMP/default.conf" # the defaults, whatever /etc holds
		start_daemon lzo "$TMP/default.conf"
		pre=(env "LD_PRELOAD=$B/libzswap.so")
		st0=$("$B/zswapctl" stats | awk '$1 == "fault_stall_usec" { print $2 }')
	fi
	psi0=$(psi_some_us)
	for i in 1 2 3 4; do
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "${pre[@]}" "${wl[@]}" \
			--size 256 --seconds "$SQ_SECS" --seed "$i" >"$CASE/w$i.json" 2>"$CASE/w$i.err" 9>&- &
		pids+=($!)
		state_add "pid $! $B/workload"
	done
	sleep 5 # filled, and running
	t0=$(date +%s.%N)
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "${pre[@]}" "${wl[@]}" \
		--size 768 --seconds $((SQ_SECS - 5)) --fill-mibps "$SQ_RATE" --seed 5 \
		>"$CASE/w5.json" 2>"$CASE/w5.err" 9>&- &
	pids+=($!)
	state_add "pid $! $B/workload"
	deadline=$((SECONDS + SQ_SECS + 120))
	while [ $SECONDS -lt $deadline ]; do
		live=0
		for i in "${pids[@]}"; do alive "$i" && live=1 && break; done
		[ $live -eq 1 ] || break
		sleep 0.25
	done
	t1=$(date +%s.%N)
	for i in "${pids[@]}"; do kill -KILL "$i" 2>/dev/null || true; done
	for i in "${pids[@]}"; do
		rc=0
		wait "$i" 2>/dev/null || rc=$?
		state_drop_pid "$i"
		case $rc in
		0) ok=$((ok + 1)) ;;
		1) bad=$((bad + 1)) ;;
		137) killed=$((killed + 1)) ;;
		*) other=$((other + 1)) ;;
		esac
	done
	psi1=$(psi_some_us)
	[ "$mode" = zswapd ] && st1=$("$B/zswapctl" stats | awk '$1 == "fault_stall_usec" { print $2 }')
	max=$(($(cat "$CG/memory.max_usage_in_bytes") >> 20))
	oom_kill=$(sed -n 's/^oom_kill //p' "$CG/memory.oom_control")
	if [ $bad -gt 0 ]; then status="CORRUPT ($bad of 5)"
	elif [ $ok -eq 5 ]; then status=ok
	elif [ $killed -gt 0 ] && [ "${oom_kill:-0}" -gt 0 ]; then status="OOM-killed $killed of 5"
	else status="failed ($((killed + other)) of 5)"
	fi
	if [ "$mode" = zswapd ]; then stop_daemon; fi
	case $mode in
	zswap) kernel_teardown ;;
	*) cgroup_remove ;;
	esac
	# Nothing may be OOM-killed; with swap or zswapd, nobody may be.
	if [ $bad -gt 0 ] || { [ "$mode" != none ] && [ "$status" != ok ]; }; then FAILED=1; fi
	echo "bench:   $status" >&2
	python3 - "$CASE" "$name" "$mode" "$status" "$max" "${oom_kill:-0}" "$((psi1 - psi0))" \
		"$((st1 - st0))" "$t0" "$t1" >"$CASE/case.json" <<'PY'
import json, os, sys
d, name, mode, status, mx, oom, psi, stall, t0, t1 = sys.argv[1:]
jobs = []
for i in range(1, 6):
    try:
        with open(os.path.join(d, f"w{i}.json")) as f:
            jobs.append(json.loads(f.read().strip() or "null"))
    except (OSError, ValueError):
        jobs.append(None)
done = [j for j in jobs if j]
print(json.dumps({
    "name": name, "mode": mode, "status": status, "max_usage_mib": int(mx),
    "oom_kill": int(oom), "host_psi_some_ms": int(psi) / 1000,
    "zswapd_stall_ms": int(stall) / 1000 if mode == "zswapd" else None,
    "grower_fill_s": jobs[4]["fill_s"] if jobs[4] else None,
    "worst_p99_us": max((j["lat_us"]["p99"] for j in done), default=None),
    "accesses_per_s": sum(j["accesses_per_s"] for j in done),
    "jobs_verified": sum(1 for j in done if j.get("ok")),
    "seconds": float(t1) - float(t0)}))
PY
}

run_squeeze() {
	local modes="none zswapd" load cmd
	SQ_LIMIT=1536 SQ_SECS=30 SQ_RATE=${SQUEEZE_FILL_MIBPS:-100}
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	FAILED=0 NCASE=0
	[ -f "$CGROOT/memory.limit_in_bytes" ] || { echo "bench: squeeze: no cgroup v1 memory controller, skipped" >&2; return 0; }
	if kernel_cases_possible; then modes="none zswap zswapd"; else echo "bench: $KERNEL_SKIP" >&2; fi
	NCASES=$(echo $modes | wc -w)
	SIZE=1792 # the swap file of the kernel case holds everything
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	cmd=$(bench_command "$@")
	for m in $modes; do
		case $m in
		none) run_squeeze_case "nothing (no swap, no zswapd)" none ;;
		zswap) run_squeeze_case "kernel zswap lzo + swap file" zswap ;;
		zswapd) run_squeeze_case "zswapd, default config" zswapd ;;
		esac
	done
	rm -f "$SWAPFILE"
	python3 - "$TMP/scases" "$OUT" "$host" "$stamp" "$load" "$cmd" "$SQ_RATE" <<'PY'
import glob, json, os, sys
cases_dir, out, host, stamp, load, cmd, rate = sys.argv[1:]
cases = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(cases_dir, "*/case.json")))]
f = lambda v, spec: "—" if v is None else format(v, spec)
rows = ["| case | status | peak usage MiB (limit 1536) | grower fill s | worst p99 µs | accesses/s, all | zswapd-measured stall ms | host PSI some ms |",
        "|---|---|---|---|---|---|---|---|"]
for c in cases:
    rows.append(f"| {c['name']} | {c['status']} | {c['max_usage_mib']} | {f(c['grower_fill_s'], '.1f')} | "
                f"{f(c['worst_p99_us'], '.1f')} | {f(c['accesses_per_s'] / 1e6, '.2f')} M | "
                f"{f(c['zswapd_stall_ms'], '.0f')} | {f(c['host_psi_some_ms'], '.0f')} |")
notes = f"""
How to read it:
- A memory cgroup v1 of 1536 MiB holds four processes of 256 MiB
  (tests/bench/workload.c, half of the pages never touched, the other half taking
  every access, half writes, 30 s), then 5 s later a fifth that fills 768 MiB at
  {rate} MiB/s and runs the same way: 1.75 GiB in the cgroup, no swap but the kernel
  case's.  Every page of every process is checked at its end.
- nothing: no swap and no zswapd; kernel zswap lzo + swap file: in the same cgroup;
  zswapd, default config: the five opted in, zswapd started with no config (it
  follows the cgroup's limit: usage held 10% under it).
- peak usage: the cgroup's memory.max_usage_in_bytes (kernel zswap's pool is not
  charged to a v1 cgroup, nor is zswapd's).  grower fill s: how long the fifth
  took to fill its 768 MiB (at least 768/{rate} s).  worst p99: the highest of
  the five processes' access latency p99.
- stall: zswapd-measured, the time the processes' threads waited on faults zswapd
  served (PSI does not count those); host PSI some: /proc/pressure/memory over the
  case (the kernel's reclaim and swap-in stalls; v1 has no per-cgroup PSI).

Host: {host}. Date: {stamp}. Load before: {load}. Command: `{cmd}`.
"""
title = "## squeeze: a memory cgroup over-committed by 0.25 GiB\n\n"
open(os.path.join(out, "squeeze.md"), "w").write(title + "\n".join(rows) + "\n" + notes)
json.dump({"host": host, "date": stamp, "command": cmd, "fill_mibps": int(rate), "cases": cases},
          open(os.path.join(out, "squeeze.json"), "w"), indent=1)
print("\n".join(rows))
PY
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a squeeze case with swap or zswapd lost a process or a byte" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- proactive

run_proactive() {
	local secs=${PROACTIVE_SECONDS:-600} i t rc bad=0 load cmd
	local -a served=() plain=()
	local -a wl=("$B/workload" --size 128 --seconds "$secs" --warmup 0 --pattern hotcold
		--hot-pct 50 --hot-access-pct 100 --write-pct 50 --json)
	FAILED=0
	mkdir -p "$TMP/pcase"
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	cmd=$(bench_command "$@")
	echo "bench: proactive: 8 + 8 processes of 128 MiB for $secs s" >&2
	: >"$TMP/default.conf" # the defaults, whatever /etc holds
	start_daemon lzo "$TMP/default.conf"
	for i in 1 2 3 4 5 6 7 8; do
		LD_PRELOAD=$B/libzswap.so "${wl[@]}" --seed "$i" >"$TMP/pcase/s$i.json" 2>/dev/null 9>&- &
		served+=($!)
		state_add "pid $! $B/workload"
		"${wl[@]}" --seed "$i" >"$TMP/pcase/p$i.json" 2>/dev/null 9>&- &
		plain+=($!)
		state_add "pid $! $B/workload"
	done
	# Every 30 s: the served ones' RssAnon, the pool, the others' RssAnon, and
	# zswapd's view of the served ones (list --json).
	for t in $(seq 30 30 $((secs - 10))); do
		sleep 30
		{
			echo "t=$t"
			for i in "${served[@]}"; do echo "served $(awk '/^RssAnon/ { print $2 }' "/proc/$i/status")"; done
			for i in "${plain[@]}"; do echo "plain $(awk '/^RssAnon/ { print $2 }' "/proc/$i/status")"; done
			"$B/zswapctl" stats | awk '$1 == "pool_total_size" || $1 == "proactive_sweeps" { print "stat", $1, $2 }'
			echo "list $("$B/zswapctl" list --json)"
		} >"$TMP/pcase/sample-$t" 2>/dev/null || true
	done
	for i in "${served[@]}" "${plain[@]}"; do
		rc=0
		wait "$i" 2>/dev/null || rc=$?
		state_drop_pid "$i"
		[ $rc -eq 0 ] || bad=$((bad + 1))
	done
	cp "$TMP/daemon.log" "$TMP/pcase/daemon.log"
	stop_daemon
	[ $bad -eq 0 ] || FAILED=1
	python3 - "$TMP/pcase" "$OUT" "$host" "$stamp" "$load" "$cmd" "$secs" <<'PY'
import glob, json, os, sys
d, out, host, stamp, load, cmd, secs = sys.argv[1:]
def job(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
served = [job(os.path.join(d, f"s{i}.json")) for i in range(1, 9)]
plain = [job(os.path.join(d, f"p{i}.json")) for i in range(1, 9)]
rows = ["| t s | served RssAnon MiB | pool MiB | plain RssAnon MiB | saved | refaults/min per 1000 pages | stall ms/min, all | sweeps |",
        "|---|---|---|---|---|---|---|---|"]
samples = []
for f in sorted(glob.glob(os.path.join(d, "sample-*")), key=lambda f: int(f.rsplit("-", 1)[1])):
    s = {"served": 0, "plain": 0, "pool": 0, "sweeps": 0, "refaults": 0, "pages": 0, "stall": 0}
    for line in open(f):
        k, _, v = line.strip().partition(" ")
        if k == "t=" or line.startswith("t="):
            s["t"] = int(line.strip()[2:])
        elif k in ("served", "plain") and v.isdigit():
            s[k] += int(v)
        elif k == "stat":
            name, val = v.split()
            s["pool" if name == "pool_total_size" else "sweeps"] = int(val)
        elif k == "list":
            for t in json.loads(v):
                s["refaults"] += t["refaults_per_min"]
                s["pages"] += t["resident_pages"] + t["evicted_pages"]
                s["stall"] += t["stall_usec_per_min"]
    held = s["served"] * 1024 + s["pool"]
    s["saved"] = 1 - held / (s["plain"] * 1024) if s["plain"] else None
    s["refault_permille"] = s["refaults"] * 1000 / s["pages"] if s["pages"] else None
    samples.append(s)
    rows.append(f"| {s['t']} | {s['served'] / 1024:.0f} | {s['pool'] / 2**20:.0f} | {s['plain'] / 1024:.0f} | "
                f"{100 * s['saved']:.0f}% | {s['refault_permille']:.2f} | {s['stall'] / 1000:.0f} | {s['sweeps']} |"
                if s["saved"] is not None and s["refault_permille"] is not None else f"| {s.get('t')} | — | — | — | — | — | — | — |")
ok = all(j and j.get("ok") for j in served + plain)
rate = lambda js: sum(j["accesses_per_s"] for j in js if j) / max(1, sum(1 for j in js if j))
speed = rate(served) / rate(plain) if rate(plain) else None
summary = (f"Every page verified: {'yes' if ok else 'NO'}. Accesses/s, mean per process: served "
           f"{rate(served) / 1e6:.2f} M, not served {rate(plain) / 1e6:.2f} M: "
           f"{speed:.3f}x." if speed else "no speed figures")
notes = f"""
How to read it:
- Sixteen processes of 128 MiB (tests/bench/workload.c, half of the pages never
  touched, the other half taking every access, half writes) run for {secs} s at the
  same time on the same CPUs: eight opted in to a zswapd started with no config
  (proactive eviction, cold age 120 s), eight not.
- saved: 1 - (the served ones' RssAnon + zswapd's pool) / (the others' RssAnon).
- refaults/min per 1000 pages: what the served ones faulted back over the last
  minute, over their anonymous memory (resident + evicted); the default target is 2.
- stall ms/min: what zswapd measured its processes' threads waited on its faults
  over the last minute, all eight together.
- speed: the served ones' accesses per second against the others', over the
  whole run (the first cold age included, where nothing is evicted yet).

{summary}

Host: {host}. Date: {stamp}. Load before: {load}. Command: `{cmd}`.
"""
title = "## proactive: cold memory compressed without being asked\n\n"
open(os.path.join(out, "proactive.md"), "w").write(title + "\n".join(rows) + "\n" + notes)
json.dump({"host": host, "date": stamp, "command": cmd, "seconds": int(secs), "samples": samples,
           "speed_ratio": speed, "verified": ok, "served": served, "plain": plain},
          open(os.path.join(out, "proactive.json"), "w"), indent=1)
print("\n".join(rows))
print(summary)
PY
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a proactive process lost data or died" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- redis

# A real application: redis-server with a dataset about twice its
# memory budget B, then redis-benchmark over a unix socket, GETs and then
# SETs of keys drawn uniformly from the whole dataset (the worst case for
# any swap: half of all GETs miss).  The dataset is tests/bench/redis_data.py
# (1000-byte JSON-ish values that lzo compresses to a little over half), and
# it is read back and checked at the end.
#   ram     no budget;
#   swap    redis-server in a cgroup v1 memory cgroup, limit B, swap file;
#   zswap   the same with kernel zswap (lzo), its pool not charged to the
#           cgroup (cgroup v1) nor capped below the dataset;
#   zswapd  (as the kernel zswap case) zswapd lzo, `zswapctl limit` B on
#           redis-server, its pool not capped below the dataset;
#   zswapd + swap file: zswapd lzo with a pool of P = B/4 and a swap file
#           behind it, `zswapctl limit` B − P: resident + pool within B;
#           the dataset does not fit in B even compressed, so the coldest of
#           the pool goes to disk.
# ---------------------------------------------------------------- servers
# server_start MODE WB BUDGET LOG CMD...: a server program (redis, memcached)
# for one case: all in RAM, in the kernel's memory cgroup of BUDGET MiB, or
# under a zswapd of its own whose pool holds what the limit pushes out (WB
# "wb": a pool capped at BUDGET/4 with a swap file behind, the limit
# BUDGET - BUDGET/4 for resident + pool within BUDGET; else the limit
# BUDGET, the pool not capped below the dataset).  Sets WPID, and
# SRV_LIMIT and SRV_POOL (MiB) for `zswapctl limit` and the report.
server_start() {
	local mode=$1 wb=$2 budget=$3 log=$4
	shift 4
	SRV_LIMIT=0 SRV_POOL=$((budget / 4))
	case $mode in
	ram) "$@" >"$log" 2>&1 9>&- & ;;
	swap | zswap)
		kernel_setup "$mode" "$budget"
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@" >"$log" 2>&1 9>&- & ;;
	zswapd)
		if [ "$wb" = wb ]; then
			SRV_LIMIT=$((budget - SRV_POOL))
			printf 'max_pool_bytes = %sM\nswap_file = %s\nswap_file_size = %sM\n' \
				"$SRV_POOL" "$WBFILE" $((4 * budget)) >"$TMP/zswapd-server.conf"
		else
			SRV_LIMIT=$budget SRV_POOL=$((4 * budget))
			printf 'max_pool_bytes = %sM\n' "$SRV_POOL" >"$TMP/zswapd-server.conf"
		fi
		start_daemon lzo "$TMP/zswapd-server.conf"
		LD_PRELOAD=$B/libzswap.so "$@" >"$log" 2>&1 9>&- & ;;
	esac
	WPID=$!
	state_add "pid $WPID $(readlink -f "$(command -v "$1")")"
}

# server_end MODE NAME STATUS LOG: after the server ($WPID) has gone, the
# case's end (case_end); an OOM kill said as such.  Sets STATUS, and SRV_OOM
# to the cgroup's OOM kills.
server_end() {
	STATUS=$3 SRV_OOM=0
	state_drop_pid "$WPID"
	WPID=
	[ -n "$CG" ] && SRV_OOM=$(sed -n 's/^oom_kill //p' "$CG/memory.oom_control")
	if [ "$STATUS" != ok ] && [ "$STATUS" != CORRUPT ] && [ "${SRV_OOM:-0}" -gt 0 ]; then
		STATUS=OOM-killed
	fi
	case_end "$1" "$2" "$STATUS" "$4"
	STATUS=$CASE_STATUS
	rm -f "$WBFILE"
}

# server_prepare BUDGET: what a server benchmark sets before its cases: the
# cases it can run (SRV_MODES: the kernel's only where possible), their count,
# the load average at start (SRV_LOAD), what the kernel's swap file and pool
# must hold (SIZE: the dataset, about twice BUDGET, and some).
server_prepare() {
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	HAVE_LIMIT=1 FAILED=0 NCASE=0 SRV_MODES="ram zswapd"
	if kernel_cases_possible; then SRV_MODES="ram swap zswap zswapd"; else echo "bench: $KERNEL_SKIP" >&2; fi
	NCASES=$(($(echo $SRV_MODES | wc -w) + 1)) # zswapd: with and without a swap file
	SRV_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
	SIZE=$((2 * $1 + $1 / 4))
}

# server_cases FN MODE...: the cases of a server benchmark, by FN NAME MODE [wb].
server_cases() {
	local fn=$1 m
	shift
	for m in "$@"; do
		case $m in
		ram) "$fn" "all in RAM" ram ;;
		swap) "$fn" swap swap ;;
		zswap) "$fn" "zswap lzo" zswap ;;
		zswapd)
			"$fn" "zswapd lzo" zswapd
			"$fn" "zswapd lzo + swap file" zswapd wb ;;
		esac
	done
}

redis_install() {
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && return 0
	local made=0 rc=0
	# Debian starts a freshly installed service unless policy-rc.d says no;
	# we want the binaries, not a system redis.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null 2>&1 || rc=$?
	[ $made -eq 0 ] || rm -f /usr/sbin/policy-rc.d
	return $rc
}

redis_cli() { redis-cli -s "$TMP/redis.sock" "$@"; }

run_redis_case() {  # NAME MODE [wb]
	local name=$1 mode=$2 wb=${3:-} status=ok limit pool rc t0 t_pop=0
	NCASE=$((NCASE + 1))
	CASE=$TMP/rcases/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] redis: $name" >&2
	rm -f "$TMP/redis.sock"
	server_start "$mode" "$wb" "$RBUDGET" "$CASE/redis.log" redis-server --port 0 \
		--unixsocket "$TMP/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
		--dir "$TMP" --daemonize no
	limit=$SRV_LIMIT pool=$SRV_POOL
	for _ in $(seq 100); do redis_cli ping >/dev/null 2>&1 && break; sleep 0.05; done
	# Each step only if the one before worked; `stage` says where it stopped.
	local stage=start-up
	if redis_cli ping >/dev/null 2>&1 && stage="zswapd attach" &&
		{ [ "$mode" != zswapd ] || "$B/zswapctl" limit "$WPID" "${limit}M" >"$CASE/limit.txt"; } &&
		stage=populate && t0=$(date +%s.%N) &&
		python3 "$ROOT/tests/bench/redis_data.py" gen "$RKEYS" | redis_cli --pipe >"$CASE/populate.txt" 2>&1 &&
		t_pop=$(awk -v b="$t0" -v a="$(date +%s.%N)" 'BEGIN { printf "%.2f", a - b }') &&
		stage=warm-up && redis-benchmark -s "$TMP/redis.sock" -t get -r "$RKEYS" -n "$RWARM" -c 8 -q >/dev/null 2>&1 &&
		snapshot w && stage="GET benchmark" &&
		redis-benchmark -s "$TMP/redis.sock" -t get -r "$RKEYS" -n "$RGETS" -c 8 --csv >"$CASE/get.csv" 2>&1 &&
		stage="SET benchmark" &&
		redis-benchmark -s "$TMP/redis.sock" -t set -d 1000 -r "$RKEYS" -n "$RSETS" -c 8 --csv >"$CASE/set.csv" 2>&1 &&
		snapshot m && redis_cli info memory >"$CASE/info.txt" && stage=check &&
		redis-benchmark -s "$TMP/redis.sock" -t set -d 1000 -n 1 -c 1 -q >/dev/null 2>&1 &&
		lift_limit "$mode"; then
		rc=0
		python3 "$ROOT/tests/bench/redis_data.py" check "$TMP/redis.sock" "$RKEYS" 2>"$CASE/check.txt" || rc=$?
		cat "$CASE/check.txt" >&2
		[ $rc -eq 0 ] || status=CORRUPT
		redis_cli shutdown nosave >/dev/null 2>&1 || true
	else
		status="stopped in $stage"
	fi
	for _ in $(seq 100); do alive "$WPID" || break; sleep 0.1; done
	alive "$WPID" && kill -KILL "$WPID"
	wait "$WPID" 2>/dev/null || true
	server_end "$mode" "redis $name" "$status" "$CASE/redis.log"
	status=$STATUS
	{
		echo "name=$name"
		echo "mode=$mode"
		echo "compressor=$([ "$mode" = ram ] || [ "$mode" = swap ] || echo lzo)"
		echo "budget_mib=$([ "$mode" = ram ] || echo "$RBUDGET")"
		echo "limit_mib=$limit"
		echo "pool_cap_mib=$([ "$wb" = wb ] && echo "$pool")"
		echo "populate_s=$t_pop"
		echo "oom_kill=${SRV_OOM:-0}"
		echo "status=$status"
	} >"$CASE/meta"
	echo "bench:   $status" >&2
}

run_redis() {
	# ~1.1 KiB of redis memory per key: RKEYS keys are about 2×RBUDGET
	RBUDGET=256 RKEYS=480000 RWARM=20000 RGETS=100000 RSETS=50000
	[ $QUICK -eq 1 ] && RBUDGET=64 RKEYS=120000 RWARM=5000 RGETS=20000 RSETS=10000
	if ! redis_install; then
		echo "bench: no redis-server and could not install it (apt-get install redis-server redis-tools): redis skipped" >&2
		return 0
	fi
	server_prepare "$RBUDGET"
	server_cases run_redis_case $SRV_MODES
	rm -f "$SWAPFILE"
	python3 "$ROOT/tests/bench/report.py" --redis --cases "$TMP/rcases" --out "$OUT" \
		--host "$host, $(awk -v m="$MEMTOTAL_MIB" 'BEGIN { printf "%.1f", m / 1024 }') GiB RAM, $(redis-server --version | cut -d' ' -f1-3)" \
		--command "$(bench_command "$@")" --date "$stamp" --load "$SRV_LOAD" \
		--size 0 --budget "$RBUDGET" --keys "$RKEYS" --gets "$RGETS" --sets "$RSETS" --seconds 0 --warmup 0
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a redis run lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- memcached
memcached_install() {
	command -v memcached >/dev/null && return 0
	local made=0 rc=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then # the binary, not a system memcached
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq memcached >/dev/null 2>&1 || rc=$?
	[ $made -eq 0 ] || rm -f /usr/sbin/policy-rc.d
	return $rc
}

run_memcached_case() {  # NAME MODE [wb]
	local name=$1 mode=$2 wb=${3:-} status=ok limit pool rc t0 t_fill=0
	local sock=$TMP/memcached.sock stage=start-up
	NCASE=$((NCASE + 1))
	CASE=$TMP/mcases/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] memcached: $name" >&2
	rm -f "$sock"
	# Its background threads off (the LRU maintainer and crawler walk every
	# item, and made about a fault per request of their own); the hash table
	# sized for the keys up front, not grown while they go in.
	server_start "$mode" "$wb" "$MBUDGET" "$CASE/memcached.log" memcached -u root -s "$sock" \
		-a 0700 -m $((4 * MBUDGET)) -t 2 -c 64 -o no_lru_crawler,no_lru_maintainer,hashpower=20
	limit=$SRV_LIMIT pool=$SRV_POOL
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
	# Each step only if the one before worked; `stage` says where it stopped.
	if [ -S "$sock" ] && stage="zswapd attach" &&
		{ [ "$mode" != zswapd ] || "$B/zswapctl" limit "$WPID" "${limit}M" >"$CASE/limit.txt"; } &&
		stage=fill && t0=$(date +%s.%N) && "$B/mcload" fill "$sock" "$MKEYS" 2>"$CASE/fill.err" &&
		t_fill=$(awk -v b="$t0" -v a="$(date +%s.%N)" 'BEGIN { printf "%.2f", a - b }') &&
		stage=warm-up && "$B/mcload" run "$sock" "$MKEYS" "$MWARM" "$MCONNS" "$MSETPCT" \
			>"$CASE/warm.json" 2>"$CASE/warm.err" &&
		snapshot w && stage="measured window" &&
		"$B/mcload" run "$sock" "$MKEYS" "$MSECS" "$MCONNS" "$MSETPCT" >"$CASE/mc.json" 2>"$CASE/mc.err" &&
		snapshot m && stage=check && lift_limit "$mode"; then
		rc=0
		"$B/mcload" check "$sock" "$MKEYS" 2>"$CASE/check.txt" || rc=$?
		cat "$CASE/check.txt" >&2
		[ $rc -eq 0 ] || status=CORRUPT
	else
		status="stopped in $stage"
		# mcload says so when a value it read was wrong or missing
		if grep -qs "wrong and" "$CASE/warm.err" "$CASE/mc.err"; then status=CORRUPT; fi
	fi
	kill -TERM "$WPID" 2>/dev/null || true
	for _ in $(seq 100); do alive "$WPID" || break; sleep 0.1; done
	alive "$WPID" && kill -KILL "$WPID"
	wait "$WPID" 2>/dev/null || true
	server_end "$mode" "memcached $name" "$status" "$CASE/memcached.log"
	status=$STATUS
	printf 'name=%s\nmode=%s\ncompressor=%s\nbudget_mib=%s\nlimit_mib=%s\npool_cap_mib=%s\nfill_s=%s\nstatus=%s\n' \
		"$name" "$mode" "$([ "$mode" = ram ] || [ "$mode" = swap ] || echo lzo)" \
		"$([ "$mode" = ram ] || echo "$MBUDGET")" "$limit" "$([ "$wb" = wb ] && echo "$pool")" \
		"$t_fill" "$status" >"$CASE/meta"
	echo "bench:   $status" >&2
}

# memcached: 480,000 keys of 1000-byte values (about twice a 256 MiB budget)
# in memcached, then 4 connections of tests/bench/mcload.c, each one request
# at a time: GETs of uniformly random keys, one request in ten a SET, 5 s
# warm-up and 20 s measured; every value read is checked, and every key at
# the end.  Cases as redis's.  --quick: 120,000 keys, 64 MiB, 2 + 5 s.
# -> memcached.{json,md}
run_memcached() {
	MBUDGET=256 MKEYS=480000 MWARM=5 MSECS=20 MCONNS=4 MSETPCT=10
	[ $QUICK -eq 1 ] && MBUDGET=64 MKEYS=120000 MWARM=2 MSECS=5
	if ! memcached_install; then
		echo "bench: no memcached and could not install it (apt-get install memcached): memcached skipped" >&2
		return 0
	fi
	cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$B/mcload" "$ROOT/tests/bench/mcload.c" -lpthread
	server_prepare "$MBUDGET"
	server_cases run_memcached_case $SRV_MODES
	rm -f "$SWAPFILE"
	python3 "$ROOT/tests/bench/report.py" --memcached --cases "$TMP/mcases" --out "$OUT" \
		--host "$host, $(awk -v m="$MEMTOTAL_MIB" 'BEGIN { printf "%.1f", m / 1024 }') GiB RAM, $(memcached -V)" \
		--command "$(bench_command "$@")" --date "$stamp" --load "$SRV_LOAD" \
		--size 0 --budget "$MBUDGET" --keys "$MKEYS" --seconds "$MSECS" --warmup "$MWARM"
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a memcached run lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- scan
# case_reap STAGE: the end of a case's program ($WPID), killed if it still
# runs ("stuck in STAGE, killed"); if STATUS was ok, its exit code judged:
# 1 is CORRUPT (it found a wrong page or record), another "failed (exit N)".
# Sets STATUS and RC.
case_reap() {
	RC=0
	if alive "$WPID"; then
		kill -KILL "$WPID"
		STATUS="stuck in $1, killed"
	fi
	wait "$WPID" 2>/dev/null || RC=$?
	state_drop_pid "$WPID"
	WPID=
	if [ "$STATUS" = ok ] && [ $RC -ne 0 ]; then
		STATUS=$([ $RC -eq 1 ] && echo CORRUPT || echo "failed (exit $RC)")
	fi
}

# run_scan_case NAME MODE [CONF]: one pass over S MiB read in address order
# after every page of it was pushed out; raw figures left in $CASE.
run_scan_case() {
	local name=$1 mode=$2 conf=${3:-} usage stage=start-up
	STATUS=ok
	local -a wl=("$B/workload" --size "$SIZE" --accesses $((SIZE * 256)) --warmup 0
		--pattern sequential --write-pct 0 --handshake --json)
	NCASE=$((NCASE + 1))
	CASE=$TMP/scases/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] scan: $name" >&2
	case $mode in
	swap | zswap)
		kernel_setup "$mode" $((2 * SIZE))
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "${wl[@]}" \
			>"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- & ;;
	zswapd)
		start_daemon lzo "$conf"
		LD_PRELOAD=$B/libzswap.so "${wl[@]}" >"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- & ;;
	esac
	WPID=$!
	state_add "pid $WPID $B/workload"
	if wait_phase 1 60 && kill -USR1 "$WPID" && stage=fill && wait_phase 2 300 && stage="push out"; then
		# Every page out: zswapd's reclaim of all of it, or the cgroup's
		# limit forced down, then lifted (the pass must not evict).
		if [ "$mode" = zswapd ]; then
			"$B/zswapctl" reclaim "$WPID" "${SIZE}M" >"$CASE/reclaim.txt"
		else
			echo $((16 << 20)) >"$CG/memory.limit_in_bytes" 2>/dev/null || true
			usage=$(cat "$CG/memory.usage_in_bytes")
			echo "usage after the push: $((usage >> 20)) MiB" >"$CASE/reclaim.txt"
			echo -1 >"$CG/memory.limit_in_bytes"
		fi
		stage=pass
		snapshot w && kill -USR1 "$WPID" && wait_phase 3 600 && snapshot m && kill -USR1 "$WPID"
		for _ in $(seq 3000); do alive "$WPID" || break; sleep 0.1; done
	fi
	case_reap "$stage"
	case_end "$mode" "scan $name" "$STATUS" "$CASE/workload.err"
	printf 'name=%s\nmode=%s\nround=%s\nstatus=%s\n' "$name" "$mode" "$ROUND" "$CASE_STATUS" >"$CASE/meta"
	echo "bench:   $CASE_STATUS" >&2
}

# scan: S MiB of the page mix, every page pushed out, then read back in one
# pass in address order (workload --pattern sequential, one read a page):
# what prefetch saves a process that walks its cold memory (a scan, a
# collector, a copy).  zswapd lzo with prefetch (prefetch_pages = 16, the
# default) and without (0), kernel zswap lzo and kernel swap with the
# machine's vm.page-cluster, BENCH_ROUNDS (3) rounds, one case after the
# other in each; medians.  S = 256 MiB (--quick 64).  -> scan.{json,md}
run_scan() {
	local rounds=${BENCH_ROUNDS:-3} load cmd m modes="zswapd-prefetch zswapd-none"
	SIZE=${BENCH_SIZE_MIB:-256}
	[ $QUICK -eq 1 ] && SIZE=${BENCH_SIZE_MIB:-64}
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	ZSWAP_POOL_PCT= HAVE_LIMIT=1 FAILED=0 NCASE=0
	if kernel_cases_possible; then modes="$modes zswap swap"; else echo "bench: $KERNEL_SKIP" >&2; fi
	NCASES=$((rounds * $(echo $modes | wc -w)))
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	printf 'max_pool_bytes = %sM\n' "$SIZE" >"$TMP/scan-on.conf"
	printf 'max_pool_bytes = %sM\nprefetch_pages = 0\n' "$SIZE" >"$TMP/scan-off.conf"
	for ROUND in $(seq "$rounds"); do
		for m in $modes; do
			case $m in
			zswapd-prefetch) run_scan_case "zswapd lzo, prefetch_pages = 16" zswapd "$TMP/scan-on.conf" ;;
			zswapd-none) run_scan_case "zswapd lzo, prefetch_pages = 0" zswapd "$TMP/scan-off.conf" ;;
			zswap) run_scan_case "kernel zswap lzo, page-cluster $(cat /proc/sys/vm/page-cluster)" zswap ;;
			swap) run_scan_case "kernel swap, page-cluster $(cat /proc/sys/vm/page-cluster)" swap ;;
			esac
		done
	done
	rm -f "$SWAPFILE"
	cmd=$(bench_command "$@")
	python3 "$ROOT/tests/bench/report.py" --scan --cases "$TMP/scases" --out "$OUT" \
		--host "$host" --command "$cmd" --date "$stamp" --load "$load" --size "$SIZE" \
		--seconds 0 --warmup 0
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a scan lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- upgrade
# used_sampler FILE [PID]: the host's used memory (MemTotal - MemAvailable,
# kB) every 2 ms, "usec kB" a line (the wall clock, as date +%s%N), until
# killed; with PID a third column, zswapd's own: its RssAnon plus the host's
# Shmem (its pool, its image, the staging areas), which the rest of the
# host moves far less than MemAvailable.
used_sampler() {
	exec python3 -c '
import sys, time
out = open(sys.argv[1], "w", buffering=1)
pid = sys.argv[2] if len(sys.argv) > 2 else None
def anon():
    try:
        for l in open("/proc/%s/status" % pid):
            if l.startswith("RssAnon:"):
                return int(l.split()[1])
    except OSError:
        pass
    return 0
while True:
    m = dict(l.split(":", 1) for l in open("/proc/meminfo"))
    kb = lambda k: int(m[k].split()[0])
    own = " %d" % (anon() + kb("Shmem")) if pid else ""
    out.write("%d %d%s\n" % (time.time_ns() // 1000, kb("MemTotal") - kb("MemAvailable"), own))
    time.sleep(0.002)' "$@"
}

# upgrade_wait N: until zswapd says it has taken over N times (60 s at most).
upgrade_wait() {
	for _ in $(seq 1200); do
		[ "$("$B/zswapctl" stats 2>/dev/null | awk '$1 == "upgrades" { print $2 }')" = "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# run_upgrade_case: S MiB of the page mix, every page evicted; then
#  idle:  SIGUSR2 while the process sleeps: the host's used memory around it;
#  busy:  SIGUSR2 while the process reads and writes its evicted memory at
#         full speed (uniform: every access a fault): its slowest access;
#  stop:  SIGTERM, which faults every page back first: the used memory the
#         same way, what a restart costs without an upgrade.
# Figures in $CASE/figures, "key value" lines.
run_upgrade_case() {
	local stage=start-up t0 t1 base peak
	STATUS=ok
	NCASE=$((NCASE + 1))
	CASE=$TMP/ucases/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] upgrade, round $ROUND" >&2
	cp "$B/zswapd" "$TMP/ubin/zswapd"
	# (a page that came back is hot for a second only: the reclaim before the
	# stop takes all of them again)
	printf 'max_pool_bytes = %sM\nidle_evict_seconds = 0\nhot_window_seconds = 1\n' "$SIZE" \
		>"$TMP/upgrade.conf"
	"$TMP/ubin/zswapd" -f -s "$ZSWAP_SOCKET" -c "$TMP/upgrade.conf" 2>"$CASE/daemon.log" 9>&- &
	DPID=$!
	state_add "pid $DPID $TMP/ubin/zswapd"
	for _ in $(seq 100); do "$B/zswapctl" stats >/dev/null 2>&1 && break; sleep 0.05; done
	LD_PRELOAD=$B/libzswap.so "$B/workload" --size "$SIZE" --seconds 8 --warmup 0 \
		--pattern uniform --write-pct 50 --handshake --json >"$CASE/workload.json" \
		2>"$CASE/workload.err" 9>&- &
	WPID=$!
	state_add "pid $WPID $B/workload"
	if wait_phase 1 60 && kill -USR1 "$WPID" && stage=fill && wait_phase 2 600; then
		stage=evict
		"$B/zswapctl" reclaim "$WPID" "${SIZE}M" >"$CASE/reclaim.txt"
		"$B/zswapctl" stats >"$CASE/before.stats"
		stage="idle upgrade"
		used_sampler "$CASE/idle.used" "$DPID" 9>&- &
		KPID=$!
		sleep 1
		t0=$(($(date +%s%N) / 1000))
		kill -USR2 "$DPID"
		upgrade_wait 1 || STATUS="no upgrade"
		t1=$(($(date +%s%N) / 1000))
		sleep 0.5
		kill "$KPID"; wait "$KPID" 2>/dev/null || true; KPID=
		"$B/zswapctl" stats >"$CASE/after.stats"
		python3 - "$CASE/idle.used" "$t0" "$t1" >"$CASE/figures" <<'PY'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 3]
t0 = int(sys.argv[2])  # the signal, on the sampler's clock (wall, microseconds)
for col, name in ((1, "idle"), (2, "own")):
    before = [r[col] for r in rows if r[0] < t0]
    during = [r[col] for r in rows if r[0] >= t0]
    base = sorted(before)[len(before) // 2]
    print(name + "_base_kb", base)
    print(name + "_peak_rise_kb", max(during) - base)
PY
		stage="busy upgrade"
		snapshot w && kill -USR1 "$WPID"
		sleep 1
		kill -USR2 "$DPID"
		upgrade_wait 2 || STATUS="no second upgrade"
		stage=window
		wait_phase 3 120 && snapshot m
		stage="stop (drain)"
		sleep 1.5
		"$B/zswapctl" reclaim "$WPID" "${SIZE}M" >>"$CASE/reclaim.txt" # all of it out again
		"$B/zswapctl" stats >"$CASE/stop.stats"
		used_sampler "$CASE/stop.used" 9>&- &
		KPID=$!
		sleep 1
		base=$(tail -n 50 "$CASE/stop.used" | sort -k2 -n | awk 'NR == 25 { print $2 }')
		kill -TERM "$DPID"
		wait "$DPID" || STATUS="zswapd exited $? on the stop"
		state_drop_pid "$DPID"; DPID=
		sleep 0.5
		kill "$KPID"; wait "$KPID" 2>/dev/null || true; KPID=
		peak=$(awk '{ print $2 }' "$CASE/stop.used" | sort -n | tail -n1)
		echo "stop_peak_rise_kb $((peak - base))" >>"$CASE/figures"
		kill -USR1 "$WPID"
		for _ in $(seq 3000); do alive "$WPID" || break; sleep 0.1; done
	fi
	case_reap "$stage"
	[ -z "$DPID" ] || { kill -TERM "$DPID"; wait "$DPID"; state_drop_pid "$DPID"; DPID=; }
	sed -n 's/.*took over .* in \([0-9]*\) ms.*/handover_ms \1/p' "$CASE/daemon.log" >>"$CASE/figures"
	sed -n 's/.*handover image: .* \([0-9]*\) bytes.*/image_bytes \1/p' "$CASE/daemon.log" | head -n1 >>"$CASE/figures"
	sed -n 's/.*pool is locked again: .* in \([0-9]*\) ms.*/lock_ms \1/p' "$CASE/daemon.log" | head -n1 >>"$CASE/figures"
	echo "status $STATUS" >>"$CASE/figures"
	[ "$STATUS" = ok ] || { FAILED=1; tail -n 20 "$CASE/daemon.log" "$CASE/workload.err" >&2; }
	echo "bench:   $STATUS" >&2
}

# upgrade: what an in-place upgrade (SIGUSR2) costs against a stop, with S
# MiB evicted (1024; --quick 256): the host's used memory, the pause, the
# time; BENCH_ROUNDS (3) rounds, medians.  -> upgrade.{json,md}
run_upgrade() {
	local rounds=${BENCH_ROUNDS:-3} cmd
	SIZE=${BENCH_SIZE_MIB:-1024}
	[ $QUICK -eq 1 ] && SIZE=${BENCH_SIZE_MIB:-256}
	FAILED=0 NCASE=0 NCASES=$rounds
	mkdir -p "$TMP/ubin"
	for ROUND in $(seq "$rounds"); do run_upgrade_case; done
	cmd=$(bench_command "$@")
	python3 - "$TMP/ucases" "$OUT" "$host" "$cmd" "$stamp" "$SIZE" <<'PY'
import json, os, re, statistics, sys
cases, out, host, cmd, stamp, size = sys.argv[1:]
rows = []
for c in sorted(os.listdir(cases)):
    d = os.path.join(cases, c)
    f = dict(l.split(None, 1) for l in open(os.path.join(d, "figures")) if l.strip())
    f = {k: v.strip() for k, v in f.items()}
    st = dict(l.split()[:2] for l in open(os.path.join(d, "before.stats")) if len(l.split()) >= 2)
    w = json.load(open(os.path.join(d, "workload.json")))
    hand = [int(re.search(r" in (\d+) ms", l).group(1))
            for l in open(os.path.join(d, "daemon.log")) if "took over" in l]
    rows.append({"status": f["status"], "stored_pages": int(st["stored_pages"]),
                 "pool_total_size": int(st["pool_total_size"]),
                 "image_bytes": int(f.get("image_bytes", 0)), "lock_ms": int(f.get("lock_ms", 0)),
                 "handover_ms": hand, "idle_peak_rise_kb": int(f["idle_peak_rise_kb"]),
                 "own_peak_rise_kb": int(f["own_peak_rise_kb"]),
                 "stop_peak_rise_kb": int(f["stop_peak_rise_kb"]),
                 "stop_stored_pages": int(dict(l.split()[:2] for l in open(os.path.join(d, "stop.stats"))
                                               if len(l.split()) >= 2)["stored_pages"]),
                 "busy_max_access_us": w["lat_us"]["gap_max"], "busy_p99_us": w["lat_us"]["p99"],
                 "verified": w.get("ok", w.get("bad_pages") == 0)})
med = lambda k: statistics.median(r[k] for r in rows)
res = {"host": host, "command": cmd, "date": stamp, "size_mib": int(size), "rounds": rows,
       "median": {k: med(k) for k in ("stored_pages", "pool_total_size", "image_bytes", "lock_ms",
                                        "idle_peak_rise_kb", "own_peak_rise_kb",
                                        "stop_peak_rise_kb", "stop_stored_pages", "busy_max_access_us")},
       "handover_ms_median": statistics.median(h for r in rows for h in r["handover_ms"])}
json.dump(res, open(os.path.join(out, "upgrade.json"), "w"), indent=1)
m = res["median"]
evicted_kb = m["stored_pages"] * 4
with open(os.path.join(out, "upgrade.md"), "w") as f:
    f.write("# In-place upgrade (SIGUSR2) against a stop\n\n")
    f.write("%s; %s MiB of the page mix, every page evicted into the pool; %d rounds, medians.\n"
            "Command: `%s`\n\n" % (host, size, len(rows), cmd))
    f.write("| | upgrade (SIGUSR2) | stop (SIGTERM, drains) |\n|---|---|---|\n")
    f.write("| host's used memory, peak rise | %d MiB (%.1f%% of the evicted) | %d MiB (%.0f%%) |\n" % (
        m["idle_peak_rise_kb"] // 1024, 100 * m["idle_peak_rise_kb"] / evicted_kb,
        m["stop_peak_rise_kb"] // 1024, 100 * m["stop_peak_rise_kb"] / (m["stop_stored_pages"] * 4)))
    f.write("| zswapd's own memory (its RssAnon + the host's Shmem), peak rise | %d MiB (%.1f%%) | |\n" % (
        m["own_peak_rise_kb"] // 1024, 100 * m["own_peak_rise_kb"] / evicted_kb))
    f.write("| time | %.0f ms (image written to taken over; then the pool locked again, serving: %d ms) | |\n" % (
        res["handover_ms_median"], m["lock_ms"]))
    f.write("| image | %.1f MiB | |\n" % (m["image_bytes"] / 2**20))
    f.write("| longest pause of a process faulting through it (64 accesses) | %.0f ms | |\n\n" % (
        m["busy_max_access_us"] / 1000))
    f.write("Pool: %d MiB for %d pages at the upgrade, %d pages at the stop. Status per round: %s.\n" % (
        m["pool_total_size"] >> 20, m["stored_pages"], m["stop_stored_pages"],
        ", ".join(r["status"] for r in rows)))
print(open(os.path.join(out, "upgrade.md")).read())
PY
	[ $FAILED -eq 0 ] || { echo "bench: FAILED: an upgrade lost data or did not happen" >&2; return 1; }
}

# ---------------------------------------------------------------- chaos
# kept_daemon_pid: the zswapd the keeper KEEPER_PID runs now, if any.
kept_daemon_pid() { pgrep -P "$KEEPER_PID" -x zswapd || true; }

# chaos_end COUNTER CMD...: CMD ends zswapd (its pid appended); wait for its
# successor to answer with COUNTER one more; the stall in ms on stdout.
chaos_end() {
	local counter=$1 old n t0 p
	shift
	old=$(kept_daemon_pid)
	n=$("$B/zswapctl" stats | awk -v k="$counter" '$1 == k { print $2 }')
	t0=$(date +%s%N)
	"$@" "$old"
	for _ in $(seq 3000); do
		p=$(kept_daemon_pid)
		if [ -n "$p" ] && [ "$p" != "$old" ] && [ "$("$B/zswapctl" stats 2>/dev/null |
			awk -v k="$counter" '$1 == k { print $2 }')" = $((n + 1)) ]; then
			echo $((($(date +%s%N) - t0) / 1000000))
			return 0
		fi
		sleep 0.01
	done
	return 1
}
chaos_kill() { chaos_end crash_recoveries kill -KILL; }
# (the keeper's restart, what `systemctl restart` is to systemd; the pid is ignored)
keeper_restart() { kill -USR1 "$KEEPER_PID"; }

# chaos_once NAME COUNTER CMD...: one end of zswapd with everything evicted: the
# host's used memory around it (NAME.used) and its stall (NAME_stall_ms in figures).
chaos_once() {
	local name=$1 ms
	shift
	used_sampler "$TMP/chaos/$name.used" 9>&- &
	KPID=$!
	sleep 1
	ms=$(chaos_end "$@") || status="no take-over after the $name"
	echo "${name}_stall_ms ${ms:--1}" >>"$TMP/chaos/figures"
	sleep 1
	kill "$KPID"; wait "$KPID" 2>/dev/null || true; KPID=
}

run_chaos() {
	local kills=${BENCH_KILLS:-200} size=${BENCH_SIZE_MIB:-1024} cmd status=ok fds0 fds1 pid rc
	[ $QUICK -eq 1 ] && size=${BENCH_SIZE_MIB:-256}
	[ -x "$B/tests/memtest" ] || make -C "$ROOT" -s BUILD="${BUILD:-build}" "$B/tests/memtest"
	mkdir -p "$TMP/chaos"
	printf 'max_pool_bytes = %sM\nswap_file = %s\nswap_file_size = %sM\nidle_evict_seconds = 0\n' \
		$((size / 4)) "$WBFILE" $((size * 2)) >"$TMP/chaos.conf"
	echo "bench: chaos: $kills kills, $size MiB" >&2
	"$B/zswapd" --supervise -f -s "$ZSWAP_SOCKET" -c "$TMP/chaos.conf" 2>"$TMP/chaos/daemon.log" 9>&- &
	KEEPER_PID=$!
	state_add "pid $KEEPER_PID $B/zswapd"
	for _ in $(seq 100); do "$B/zswapctl" stats >/dev/null 2>&1 && break; sleep 0.05; done
	# What one kill, and one restart, cost the host with all of it evicted:
	# nothing comes back.
	LD_PRELOAD=$B/libzswap.so "$B/tests/memtest" wait-signal "$size" >"$TMP/chaos/wait.out" 9>&- &
	pid=$!
	for _ in $(seq 1200); do grep -q evicted "$TMP/chaos/wait.out" && break; sleep 0.1; done
	"$B/zswapctl" stats >"$TMP/chaos/restart.stats"
	: >"$TMP/chaos/figures"
	chaos_once kill crash_recoveries kill -KILL
	chaos_once restart restarts keeper_restart
	kill -USR1 $pid; wait $pid || status="the evicted process read a wrong page"
	# The chaos itself.
	CHAOS_FORK_MS=1000 LD_PRELOAD=$B/libzswap.so "$B/tests/memtest" chaos "$size" \
		>"$TMP/chaos/chaos.out" 2>"$TMP/chaos/chaos.err" 9>&- &
	pid=$!
	state_add "pid $pid $B/tests/memtest"
	for _ in $(seq 1200); do grep -q ready "$TMP/chaos/chaos.out" && break; sleep 0.1; done
	sleep 5
	fds0=$(ls /proc/$KEEPER_PID/fd | wc -l)
	: >"$TMP/chaos/stalls"
	for k in $(seq "$kills"); do
		sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.1 + 0.9 * r / 32767 }')"
		chaos_kill >>"$TMP/chaos/stalls" || { status="no take-over after kill $k"; break; }
	done
	sleep 2
	kill -USR1 $pid
	rc=0; wait $pid || rc=$?
	state_drop_pid "$pid"
	[ $rc -eq 0 ] || status="memtest chaos exited $rc"
	sleep 1
	fds1=$(ls /proc/$KEEPER_PID/fd | wc -l)
	kill -TERM "$(kept_daemon_pid)"
	wait "$KEEPER_PID" || status="zswapd stopped with $?"
	state_drop_pid "$KEEPER_PID"
	echo "keeper_fds $fds0 $fds1" >>"$TMP/chaos/figures"
	echo "status $status" >>"$TMP/chaos/figures"
	cmd=$(bench_command "$@")
	python3 - "$TMP/chaos" "$OUT" "$host" "$cmd" "$stamp" "$size" "$kills" <<'PY'
import json, os, re, statistics, sys
d, out, host, cmd, stamp, size, kills = sys.argv[1:]
f = {}
for l in open(os.path.join(d, "figures")):
    k, v = l.split(None, 1)
    f[k] = v.strip()
stalls = sorted(int(x) for x in open(os.path.join(d, "stalls")) if x.strip())
q = lambda p: stalls[min(len(stalls) - 1, int(round(p * (len(stalls) - 1))))]
def used_rise(name):
    rows = [tuple(map(int, l.split())) for l in open(os.path.join(d, name + ".used"))
            if len(l.split()) == 2]
    return int(max(r[1] for r in rows) - statistics.median(r[1] for r in rows[:200]))
rise = {n: used_rise(n) for n in ("kill", "restart")}
st = dict(l.split()[:2] for l in open(os.path.join(d, "restart.stats")) if len(l.split()) >= 2)
chaos = open(os.path.join(d, "chaos.out")).read()
m = re.search(r"chaos: (\d+) children: (\d+) read their pages, (\d+) ended loudly, (\d+) read a "
              r"wrong page; (\d+) reclaims; (\d+) of (\d+) pages wrong", chaos)
fds = f["keeper_fds"].split()
res = {"host": host, "command": cmd, "date": stamp, "size_mib": int(size), "kills": len(stalls),
       "kills_asked": int(kills), "stall_ms": {"p50": q(0.5), "p99": q(0.99), "max": stalls[-1]},
       "children": int(m.group(1)) if m else None, "children_ok": int(m.group(2)) if m else None,
       "ended_loudly": int(m.group(3)) if m else None, "wrong": int(m.group(4)) if m else None,
       "pages_wrong": int(m.group(6)) if m else None, "pages": int(m.group(7)) if m else None,
       "reclaims": int(m.group(5)) if m else None,
       "keeper_fds_before": int(fds[0]), "keeper_fds_after": int(fds[1]),
       "evicted_pages": int(st["stored_pages"]),
       "kill_used_rise_kb": rise["kill"], "kill_stall_ms": int(f.get("kill_stall_ms", -1)),
       "restart_used_rise_kb": rise["restart"],
       "restart_stall_ms": int(f.get("restart_stall_ms", -1)), "status": f["status"]}
json.dump(res, open(os.path.join(out, "chaos.json"), "w"), indent=1)
with open(os.path.join(out, "chaos.md"), "w") as o:
    o.write("# zswapd killed again and again\n\n%s; %s MiB process, pool %d MiB + swap file; "
            "command: `%s`\n\n" % (host, size, int(size) // 4, cmd))
    o.write("| | |\n|---|---|\n")
    o.write("| kills (SIGKILL, 0.1-1 s apart) | %d |\n" % res["kills"])
    o.write("| stall of each kill (kill to the new zswapd's first answer) | p50 %d ms, p99 %d ms, max %d ms |\n"
            % (q(0.5), q(0.99), stalls[-1]))
    if m:
        o.write("| children forked (one a second), each reading its pages | %s, %s right, %s ended, %s wrong |\n"
                % (m.group(1), m.group(2), m.group(3), m.group(4)))
        o.write("| pages of the process checked at the end | %s, %s wrong |\n" % (m.group(7), m.group(6)))
        o.write("| reclaims completed meanwhile | %s |\n" % m.group(5))
    o.write("| the keeper's descriptors, before the kills and after | %s, %s |\n" % (fds[0], fds[1]))
    for n, what in (("kill", "one kill (SIGKILL)"), ("restart", "one restart (the keeper's, as `systemctl restart`)")):
        o.write("| %s with %d pages evicted: the host's used memory, peak rise; stall | %d MiB (%.1f%% of the evicted); %d ms |\n"
                % (what, res["evicted_pages"], rise[n] // 1024, 100.0 * rise[n] / (res["evicted_pages"] * 4),
                   res[n + "_stall_ms"]))
    o.write("\nStatus: %s.\n" % res["status"])
print(open(os.path.join(out, "chaos.md")).read())
PY
	[ "$status" = ok ] || { echo "bench: FAILED: $status" >&2; tail -n 20 "$TMP/chaos/daemon.log" >&2; return 1; }
}

# ---------------------------------------------------------------- pyheap
# run_pyheap_case NAME MODE [CONF]: tests/bench/pyheap.py under MODE at the
# budget PBUDGET, raw figures left in $CASE for report.py --pyheap.
run_pyheap_case() {
	local name=$1 mode=$2 conf=${3:-} limit=0 stage=start-up
	STATUS=ok
	local -a prog=(/usr/bin/python3 "$ROOT/tests/bench/pyheap.py" "$PKEYS" "$PSECS" 5)
	NCASE=$((NCASE + 1))
	CASE=$TMP/pcases/$(printf %02d $NCASE)
	mkdir -p "$CASE"
	echo "bench: [$NCASE/$NCASES] pyheap: $name" >&2
	case $mode in
	ram) "${prog[@]}" >"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- & ;;
	swap | zswap)
		kernel_setup "$mode" "$PBUDGET"
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "${prog[@]}" \
			>"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- & ;;
	zswapd)
		limit=$PBUDGET
		start_daemon lzo "$conf"
		LD_PRELOAD=$B/libzswap.so "${prog[@]}" >"$CASE/workload.json" 2>"$CASE/workload.err" 9>&- & ;;
	esac
	WPID=$!
	state_add "pid $WPID /usr/bin/python3"
	# The limit before the heap grows, as the cgroup's is: as soon as the
	# shim has registered the interpreter.
	if [ "$mode" = zswapd ]; then
		for _ in $(seq 250); do
			"$B/zswapctl" limit "$WPID" "${limit}M" >"$CASE/limit.txt" 2>&1 && break
			sleep 0.02
		done
	fi
	if { [ "$mode" != zswapd ] || grep -qv "^zswapctl:" "$CASE/limit.txt"; } &&
		stage=build && wait_phase 1 600 && snapshot w && kill -USR1 "$WPID" &&
		stage="measured window" && wait_phase 2 $((PSECS + 300)) && snapshot m &&
		lift_limit "$mode" && kill -USR1 "$WPID"; then
		stage=verification
		for _ in $(seq 6000); do alive "$WPID" || break; sleep 0.1; done
	fi
	case_reap "$stage"
	# A kernel case that stops making progress is the kernel's result, not
	# the benchmark's failure: kernel zswap on cgroup v1 filled its cgroup
	# with swap cache (RSS 4 KiB) and did 23 swap-ins a second.
	case $mode:$STATUS in swap:stuck* | zswap:stuck*) STATUS="no progress, killed" ;; esac
	if [ $RC -eq 137 ] && [ -n "$CG" ] &&
		[ "$(sed -n 's/^oom_kill //p' "$CG/memory.oom_control")" -gt 0 ]; then
		STATUS=OOM-killed
	fi
	case_end "$mode" "pyheap $name" "$STATUS" "$CASE/workload.err"
	printf 'name=%s\nmode=%s\nbudget_mib=%s\nlimit_mib=%s\nstatus=%s\n' "$name" "$mode" \
		"$([ "$mode" = ram ] || echo "$PBUDGET")" "$limit" "$CASE_STATUS" >"$CASE/meta"
	echo "bench:   $CASE_STATUS" >&2
}

# pyheap: a Python program with a large heap (tests/bench/pyheap.py:
# 1.2 M records, about 520 MiB) and a budget of half of it (256 MiB; the
# cgroup's limit, `zswapctl limit`), random lookups and updates for 30 s
# with a full gc.collect() every 5 s, which walks the whole heap; every
# record checked at the end.  Cases: all in RAM, kernel swap, kernel zswap
# lzo, zswapd lzo with prefetch and without.  --quick: 300 k records,
# 64 MiB.  -> pyheap.{json,md}
run_pyheap() {
	local load cmd m modes="ram zswapd-prefetch zswapd-none"
	PKEYS=1200000 PBUDGET=256 PSECS=30
	[ $QUICK -eq 1 ] && PKEYS=300000 PBUDGET=64 PSECS=10
	if [ ! -x /usr/bin/python3 ]; then
		echo "bench: no /usr/bin/python3: pyheap skipped" >&2
		return 0
	fi
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	ZSWAP_POOL_PCT= HAVE_LIMIT=1 FAILED=0 NCASE=0
	SIZE=$((2 * PBUDGET + PBUDGET / 4))   # what the kernel's swap file and pool must hold
	if kernel_cases_possible; then modes="ram swap zswap zswapd-prefetch zswapd-none"; else echo "bench: $KERNEL_SKIP" >&2; fi
	NCASES=$(echo $modes | wc -w)
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	printf 'max_pool_bytes = %sM\n' $((4 * PBUDGET)) >"$TMP/pyheap-on.conf"
	printf 'max_pool_bytes = %sM\nprefetch_pages = 0\n' $((4 * PBUDGET)) >"$TMP/pyheap-off.conf"
	for m in $modes; do
		case $m in
		ram) run_pyheap_case "all in RAM" ram ;;
		swap) run_pyheap_case "kernel swap" swap ;;
		zswap) run_pyheap_case "kernel zswap lzo" zswap ;;
		zswapd-prefetch) run_pyheap_case "zswapd lzo" zswapd "$TMP/pyheap-on.conf" ;;
		zswapd-none) run_pyheap_case "zswapd lzo, prefetch_pages = 0" zswapd "$TMP/pyheap-off.conf" ;;
		esac
	done
	rm -f "$SWAPFILE"
	cmd=$(bench_command "$@")
	python3 "$ROOT/tests/bench/report.py" --pyheap --cases "$TMP/pcases" --out "$OUT" \
		--host "$host, $(/usr/bin/python3 --version)" --command "$cmd" --date "$stamp" \
		--load "$load" --size 0 --budget "$PBUDGET" --keys "$PKEYS" --seconds "$PSECS" --warmup 0
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a pyheap run lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# ---------------------------------------------------------------- unmap
run_unmap() {
	local res
	echo "== unmap: per-page cost of taking pages out, by kernel interface"
	res=$("$B/unmap" 16384 5) || { echo "bench: FAILED: unmap lost or left a page" >&2; return 1; }
	echo "$res" >"$OUT/unmap.json"
	python3 - "$res" >"$OUT/unmap.md" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
what = [("move1", "UFFDIO_MOVE, 1 page per ioctl (the agent, 1-page runs)"),
        ("move8", "UFFDIO_MOVE, 8 contiguous pages per ioctl"),
        ("wp1", "UFFDIO_WRITEPROTECT, 1 page (zswapd's lock before a copy)"),
        ("dontneed1", "madvise(MADV_DONTNEED), 1 page"),
        ("pmadvise", "process_madvise(MADV_DONTNEED), 512 pages per call"),
        ("pmadvise_uffd", "the same, registered with REMOVE events read at once")]
print("\n| µs per page | other thread idle | other thread busy on CPU 1 |")
print("|---|---|---|")
for k, text in what:
    print("| %s | %.2f | %.2f |" % (text, r[k + "_idle"], r[k + "_busy"]))
print("\n(tests/bench/run.sh unmap: %d pages, every 4th taken out, median of %d rounds)"
      % (r["pages"], r["rounds"]))
EOF
	cat "$OUT/unmap.md"
}

# ---------------------------------------------------------------- pairs

# zswapd's throughput against kernel zswap's (the target: at least 0.8x its
# accesses/s), measured so that one run cannot decide it: kernel zswap's
# accesses/s on the PVM guest moved up to 2.7x between runs of the same
# command, so one compare run compares two draws.  Here each round runs
# kernel zswap lzo and then zswapd lzo with the pool outside (compare's
# setup on the kernel's footing: limit = budget, store_incompressible = yes)
# back to back, at 50% and at 25% of S, BENCH_ROUNDS times (5), and the
# report gives each case's median and spread and the ratio per round.
run_pairs() {
	local r b rounds=${BENCH_ROUNDS:-5} load cmd
	SIZE=1024 SECS=20 WARMUP=10
	[ $QUICK -eq 1 ] && SIZE=256 SECS=8 WARMUP=3 rounds=${BENCH_ROUNDS:-2}
	SIZE=${BENCH_SIZE_MIB:-$SIZE} SECS=${BENCH_SECONDS:-$SECS} WARMUP=${BENCH_WARMUP:-$WARMUP}
	case $rounds in '' | *[!0-9]* | 0) echo "bench: BENCH_ROUNDS must be a number > 0" >&2; return 1 ;; esac
	kernel_cases_possible || { echo "bench: pairs: $KERNEL_SKIP: nothing to pair with" >&2; return 0; }
	MEMTOTAL_MIB=$(($(sed -n 's/^MemTotal:\s*\([0-9]*\).*/\1/p' /proc/meminfo) / 1024))
	ZSWAP_POOL_PCT= HAVE_LIMIT=1
	FAILED=0 NCASE=0 CASES=paircases NCASES=$((rounds * 4))
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	printf '%s\n' "max_pool_bytes = ${SIZE}M" "store_incompressible = yes" >"$TMP/zswapd-outside.conf"
	for r in $(seq "$rounds"); do
		for b in $((SIZE / 2)) $((SIZE / 4)); do
			run_case "zswap lzo" zswap "$b" lzo
			echo "round=$r" >>"$CASE/meta"
			CASE_LIMIT=$b CASE_CONF=$TMP/zswapd-outside.conf
			run_case "zswapd lzo, pool outside" zswapd "$b" lzo
			CASE_LIMIT= CASE_CONF=
			echo "round=$r" >>"$CASE/meta"
		done
	done
	rm -f "$SWAPFILE"
	cmd=$(bench_command "$@")
	python3 "$ROOT/tests/bench/report.py" --pairs --cases "$TMP/paircases" --out "$OUT" \
		--host "$host" --command "$cmd" --date "$stamp" --load "$load" --size "$SIZE" \
		--seconds "$SECS" --warmup "$WARMUP"
	if [ $FAILED -ne 0 ]; then
		echo "bench: FAILED: a run lost or corrupted data, or did not finish (see above)" >&2
		return 1
	fi
}

# Each part returns 1 (set -e: exit 1) on a run that lost data or hung.
if want micro; then run_micro "$@"; fi
if want compare; then run_compare "$@"; fi
if want writeback; then run_writeback "$@"; fi
if want workers; then run_workers "$@"; fi
if want redis; then run_redis "$@"; fi
if want memcached; then run_memcached "$@"; fi
if want unmap; then run_unmap; fi
if want pairs; then run_pairs "$@"; fi
if want squeeze; then run_squeeze "$@"; fi
if want proactive; then run_proactive "$@"; fi
if want scan; then run_scan "$@"; fi
if want pyheap; then run_pyheap "$@"; fi
if want upgrade; then run_upgrade "$@"; fi
if want chaos; then run_chaos "$@"; fi
exit 0
