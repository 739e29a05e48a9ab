# SPDX-License-Identifier: GPL-2.0-only
#
# What the integration tests share, sourced by run.sh before the areas
# (t_*.sh): where the build is, the suite's temporary directory and its
# cleanup, the daemon every test shares (started, stopped, restarted and
# reloaded here), run() and what a test says with (skip, refute, rc), and
# every helper that tests of more than one area use.  A helper that one
# area alone uses is in that area's file.

# (ROOT from this file's place: run.sh sources it from its own directory)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=$ROOT/${BUILD:-build}
TMP=$(mktemp -d /tmp/zswapd-test.XXXXXX)
chmod 0755 "$TMP" # the unprivileged test connects from uid 65534
export ZSWAP_SOCKET=$TMP/zswapd.sock
SHIM=$B/libzswap.so
MEMTEST=$B/tests/memtest
CTL=$B/zswapctl
PASS=0 FAIL=0 SKIP=0
# The area whose tests run() is given now (run.sh sets it), and every test
# name run() was given, chosen or not.
AREA=
NAMES=()

# Under ASan, LeakSanitizer checks the daemon and the processes it serves.
# Its check at a served process's exit stops every thread, the agent too,
# then reads every page of the heap and writes chunk tags: a write to a page
# of the batch the stopped agent holds is let through once the batch is
# stuck (evict.c, evict_note_writer; before that it hung poor_remembered).
# An agent on MADV_DONTNEED cannot allow it: t_agent_dontneed turns the
# check off.
zswapd_bin() { "$B/zswapd" "$@"; }

# Only the suite's own shell cleans up.  A subshell that bash has forked
# but not yet started (run()'s watchdog, killed by SIGTERM the moment a test
# that skips at once returns) still holds this EXIT trap, and bash runs it
# when the signal ends it: 1 in 6 such kills removed $TMP under every later
# test.  $BASHPID is not to be trusted there either (it can still read as
# the parent's); /proc/self/stat, opened by the shell itself, is.
cleanup() {
	local me k
	read -r me _ </proc/self/stat
	[ "$me" = "$$" ] || return 0
	# A keeper a test left as it failed, with the zswapd it runs (which dpid
	# may not name): the keeper first, or it starts another.
	k=$(cat "$TMP/kpid" 2>/dev/null)
	if [ -n "$k" ] && [ "$(cat /proc/"$k"/comm 2>/dev/null)" = zswapd-keeper ]; then
		kill -KILL "$k" $(pgrep -P "$k" -x zswapd) 2>/dev/null
	fi
	[ -s "$TMP/dpid" ] && kill -KILL "$(cat "$TMP/dpid")" 2>/dev/null
	mountpoint -q "$TMP/tiny" 2>/dev/null && umount "$TMP/tiny"
	# The private directories of NOTIFY_SOCKET of keepers killed here
	# (SIGKILL leaves no time to remove them): those no keeper listens on.
	for k in /run/zswapd-keeper.* /tmp/zswapd-keeper.*; do
		[ -S "$k/notify" ] && python3 -c 'import socket, sys
try:
	socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).connect(sys.argv[1])
except ConnectionRefusedError:
	sys.exit(0)
sys.exit(1)' "$k/notify" 2>/dev/null && rm -rf "$k"
	done
	# KEEP_TMP=1: the logs stay, for a look after a failure.
	if [ -n "${KEEP_TMP:-}" ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

log() { printf '%s\n' "$*" >&2; }

# The daemon is started from a subshell that records its exit code, so any
# test (each runs in a subshell of its own) can stop, kill or restart it.
dpid() { cat "$TMP/dpid" 2>/dev/null; }

# start_daemon [zswapd args...]: a fresh daemon in the foreground, on $ZSWAP_SOCKET.
start_daemon() {
	local wrapper p
	: >"$TMP/daemon.log"
	rm -f "$TMP/daemon.rc" "$TMP/dpid"
	( set +e; zswapd_bin -f -c "$TMP/zswapd.conf" "$@" 2>>"$TMP/daemon.log"; echo $? >"$TMP/daemon.rc" ) &
	wrapper=$!
	# 30 s: well over a start (tens of ms), for a machine that stalls.
	for _ in $(seq 600); do
		p=$(pgrep -P "$wrapper" -x zswapd)
		if [ -n "$p" ] && [ -S "$ZSWAP_SOCKET" ] && "$CTL" stats >/dev/null 2>&1; then
			echo "$p" >"$TMP/dpid"
			return 0
		fi
		[ -e "$TMP/daemon.rc" ] && break
		sleep 0.05
	done
	log "zswapd did not start:"; cat "$TMP/daemon.log" >&2
	ps -o pid,ppid,stat,wchan:24,etime,args -C zswapd >&2
	# Not left to listen unrecorded: every later start would find it there.
	p=$(pgrep -P "$wrapper" -x zswapd) && kill -KILL $p 2>/dev/null
	return 1
}

# wait_daemon_exit: its exit code, once it has exited (60 s at most).
wait_daemon_exit() {
	for _ in $(seq 1200); do
		[ -s "$TMP/daemon.rc" ] && { rm -f "$TMP/dpid"; cat "$TMP/daemon.rc"; return 0; }
		sleep 0.05
	done
	echo timeout
}

# stop_daemon: SIGTERM, and it must drain and exit 0.
stop_daemon() {
	local rc
	[ -n "$(dpid)" ] || return 0
	kill -TERM "$(dpid)"
	rc=$(wait_daemon_exit)
	[ "$rc" = 0 ] || { log "zswapd exited $rc"; return 1; }
}

stat_of() { "$CTL" stats | awk -v k="$1" '$1 == k { print $2 }'; }
stat_in() { awk -v k="$2" '$1 == k { print $2 }' "$1"; } # FILE NAME: from a saved `stats`

shimmed() { LD_PRELOAD=$SHIM "$@"; }

# selected NAME: whether run.sh was asked for NAME (a test or an area), or for nothing
# in particular (then every test runs).
selected() { [ ${#ONLY[@]} -eq 0 ] || [[ " ${ONLY[*]} " == *" $1 "* ]]; }

# run NAME FUNCTION: one test, in a subshell; output kept on failure.
# It runs if run.sh was asked for NAME, or for the area that holds it (see
# run.sh's usage: no test may be named as an area, or it could not be asked
# for alone).
# A test that hangs fails instead of holding make check until CI's limit:
# after TEST_TIMEOUT seconds (600; 1800 under a sanitizer) its programs and
# its subshell are killed.
TEST_TIMEOUT=${TEST_TIMEOUT:-$([ -n "${SANITIZE:-}" ] && echo 1800 || echo 600)}

run() {
	local name=$1 fn=$2 rc pid dog
	NAMES+=("$name")
	if [[ " ${AREAS[*]} " == *" $name "* ]]; then
		FAIL=$((FAIL + 1)); printf '%-28s FAIL (a test named as an area)\n' "$name"
		return 0
	fi
	selected "$name" || selected "$AREA" || return 0
	printf '%-28s ' "$name"
	( set -e -x; "$fn" ) >"$TMP/$name.out" 2>&1 &
	pid=$!
	# (its own stdio: a sleep left holding make's pipe would hold make too)
	( trap 'kill "$s" 2>/dev/null; exit 0' TERM
	  sleep "$TEST_TIMEOUT" & s=$!; wait "$s"
	  echo "+ timed out after $TEST_TIMEOUT s" >>"$TMP/$name.out"
	  pkill -KILL -f "^$B/tests/"; kill -KILL "$pid" ) </dev/null >/dev/null 2>&1 &
	dog=$!
	wait "$pid"; rc=$?
	kill -TERM "$dog" 2>/dev/null; wait "$dog" 2>/dev/null
	if [ $rc -eq 0 ]; then
		PASS=$((PASS + 1)); echo "PASS"
		grep -h '^\(basic\|threads\|fork\|result\):' "$TMP/$name.out" | sed 's/^/    /'
	elif [ $rc -eq 77 ]; then
		# (the reason: the last line that is not set -x's trace of skip's exit)
		SKIP=$((SKIP + 1)); echo "SKIP ($(grep -v '^+' "$TMP/$name.out" | tail -n1))"
	else
		FAIL=$((FAIL + 1)); echo "FAIL"
		pkill -KILL -f "^$B/tests/" 2>/dev/null # what the failed test left running
		sed "s/^/    | /" "$TMP/$name.out" | tail -n "${TAIL_LINES:-40}"
		echo "    | --- daemon log:"; tail -n 20 "$TMP/daemon.log" | sed 's/^/    | /'
	fi
}

skip() { echo "$*"; exit 77; }

# refute CMD...: CMD must fail.  A bare "! CMD" never fails a test: bash exempts a
# negated command from set -e.  (A pipeline that must fail: if ...; then false; fi.)
refute() { if "$@"; then return 1; fi; }

# ThreadSanitizer maps shadow memory several times the size of what the
# program touches, and it counts in RssAnon: RSS figures mean nothing then.
no_rss_under_tsan() {
	case "${SANITIZE:-}" in
	*thread*) skip "RSS figures are meaningless under ThreadSanitizer (shadow memory)" ;;
	esac
}

# rc CMD...: run CMD, print its exit code (set -e must not stop at a failure we expect).
rc() { "$@" && echo 0 || echo $?; }

# hold_start OUT MIB [hot]: memtest's hold scenario under the shim, in the
# background, waited for until it has filled its memory; its pid in HOLD_PID.
hold_start() {
	local out=$1
	shift
	LD_PRELOAD=$SHIM "$MEMTEST" hold "$@" >"$out" &
	HOLD_PID=$!
	for _ in $(seq 400); do grep -q ready "$out" && break; sleep 0.05; done
}

# restart_using START LINES...: the daemon stopped, and started again by
# START (start_daemon, start_kept) with these config lines added.
restart_using() {
	local start=$1
	shift
	stop_daemon
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	printf '%s\n' "$@" >>"$TMP/zswapd.conf"
	"$start"
}

# restart_with LINES...: the daemon again, with these config lines added.
restart_with() { restart_using start_daemon "$@"; }

# reload_with LINES...: the running daemon's config with these lines added
# (none: as at start), re-read at SIGHUP before it returns.
reload_with() {
	local reloads
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	[ $# -eq 0 ] || printf '%s\n' "$@" >>"$TMP/zswapd.conf"
	reloads=$(grep -c "configuration re-read" "$TMP/daemon.log" || true)
	kill -HUP "$(dpid)"
	for _ in $(seq 100); do
		[ "$(grep -c "configuration re-read" "$TMP/daemon.log")" -gt "$reloads" ] && return 0
		sleep 0.05
	done
	echo "reload_with: zswapd did not re-read its configuration" >&2
	return 1
}

# fork_held_start AT: memtest fork-unclaimed, its child's shim held at AT
# (childhold.so: connect or beacon); returns once the fork is done and the
# child waits there.  Sets HELD_PID; fd 3 is its stdin.
fork_held_start() {
	rm -f "$TMP/held.in" "$TMP/held.go" "$TMP/held.out" "$TMP/held.err"
	mkfifo "$TMP/held.in" "$TMP/held.go"
	CHILDHOLD_AT=$1 CHILDHOLD_FIFO=$TMP/held.go LD_PRELOAD="$SHIM $B/tests/childhold.so" \
		"$MEMTEST" fork-unclaimed 16 <"$TMP/held.in" >"$TMP/held.out" 2>"$TMP/held.err" &
	HELD_PID=$!
	exec 3>"$TMP/held.in"
	for _ in $(seq 200); do grep -q evicted "$TMP/held.out" && break; sleep 0.05; done
	echo fork >&3
	for _ in $(seq 200); do
		grep -q "^forked" "$TMP/held.out" && grep -q "childhold: waiting" "$TMP/held.err" && break
		sleep 0.05
	done
	grep -q "childhold: waiting" "$TMP/held.err"
	"$CTL" restore "$HELD_PID" >/dev/null # the parent's own pages: it reports after zswapd is gone
}

# child_ended OUT PARENT: waits (10 s) for memtest fork-unclaimed's word of how its
# child ended ("child: exit N" or "child: signal N") in OUT; a child that hangs is
# said, with where it waits, and killed.
child_ended() {
	local child
	for _ in $(seq 200); do grep -q "^child: [es]" "$1" && break; sleep 0.05; done
	grep -q "^child: [es]" "$1" && return 0
	child=$(pgrep -P "$2" | head -n1)
	log "the child ($child) hangs"
	[ -z "$child" ] || grep -H . /proc/"$child"/task/*/wchan >&2 || true
	pkill -KILL -P "$2" || true
}

# fork_held_finish: lets the held child go on, lets it read its pages if it ran on,
# and waits for memtest; a child that does neither within 10 s is killed.  Sets HELD_RC.
fork_held_finish() {
	timeout 10 sh -c 'echo go >"$1"' _ "$TMP/held.go"
	for _ in $(seq 200); do grep -q "^child: " "$TMP/held.out" && break; sleep 0.05; done
	if grep -q "^child: [0-9]" "$TMP/held.out"; then echo read >&3; fi
	exec 3>&-
	child_ended "$TMP/held.out" "$HELD_PID"
	HELD_RC=0
	wait "$HELD_PID" || HELD_RC=$?
	cat "$TMP/held.out" "$TMP/held.err"
}

# redis_under_gets: redis-server under the shim, 200,000 keys, 80% of its memory
# evicted, redis-benchmark GETting from it; sets rpid, digest (DEBUG DIGEST) and bpid.
redis_under_gets() {
	LD_PRELOAD=$SHIM redis-server --port 0 --unixsocket "$TMP/redis.sock" --save "" \
		--appendonly no --enable-debug-command yes --daemonize no >"$TMP/redis.log" 2>&1 &
	rpid=$!
	for _ in $(seq 100); do redis-cli -s "$TMP/redis.sock" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
	redis-cli -s "$TMP/redis.sock" debug populate 200000 key 400 >/dev/null
	digest=$(redis-cli -s "$TMP/redis.sock" debug digest)
	local rss_kb
	rss_kb=$(awk '/^RssAnon/ { print $2 }' "/proc/$rpid/status")
	"$CTL" reclaim "$rpid" "$((rss_kb * 8 / 10))K"
	redis-benchmark -s "$TMP/redis.sock" -t get -r 200000 -n 3000000 -c 8 -q >"$TMP/rb.out" 2>&1 &
	bpid=$!
	sleep 1
}

# redis_checked: the GETs stopped; no client saw an error, the data is unchanged.
redis_checked() {
	kill -INT "$bpid" 2>/dev/null || true
	wait "$bpid" || true
	cat "$TMP/rb.out" | tr '\r' '\n' | tail -n 3
	refute grep -qi "error" "$TMP/rb.out"
	[ "$(redis-cli -s "$TMP/redis.sock" debug digest)" = "$digest" ]
}

redis_stop() {
	redis-cli -s "$TMP/redis.sock" shutdown nosave >/dev/null 2>&1 || kill "$rpid"
	wait "$rpid" || true
}

# wait_gone PID SECONDS: whether PID ended within SECONDS (it is not our child).
wait_gone() {
	for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	return 1
}
