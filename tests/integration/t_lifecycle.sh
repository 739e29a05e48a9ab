# SPDX-License-Identifier: GPL-2.0-only
#
# Area lifecycle: the daemon as it is run and administered: zswapctl and
# config errors, bad clients, its capabilities, SIGHUP, a full pool,
# systemd units, sd_notify, socket activation, make install, and the
# drain when it stops.

t_cli_errors() {
	[ "$(rc "$CTL" reclaim abc 1M 2>"$TMP/e")" = 2 ]; grep -q "not a process id" "$TMP/e"
	[ "$(rc "$CTL" reclaim 1 12Q 2>"$TMP/e")" = 2 ]; grep -q "not a size" "$TMP/e"
	[ "$(rc "$CTL" reclaim 1 0 2>"$TMP/e")" = 2 ]
	[ "$(rc "$CTL" bogus 2>/dev/null)" = 2 ]
	[ "$(rc "$CTL" stats --jsn 2>/dev/null)" = 2 ]
	[ "$(rc "$CTL" 2>/dev/null)" = 2 ]
	[ "$(rc "$CTL" reclaim 1 1M 2>"$TMP/e")" = 1 ]; grep -q "not served by zswapd" "$TMP/e"
	[ "$(ZSWAP_SOCKET=$TMP/none rc "$CTL" stats 2>"$TMP/e")" = 1 ]; grep -q "cannot reach zswapd" "$TMP/e"
	[ "$(rc "$CTL" run -- /nonexistent/prog 2>/dev/null)" = 127 ]
	[ "$(rc "$CTL" limit 1 none 2>"$TMP/e")" = 1 ]; grep -q "not served" "$TMP/e"
	[ "$(rc "$CTL" limit 1 lots 2>"$TMP/e")" = 2 ]; grep -q "or 'none'" "$TMP/e"
	"$CTL" stats --prometheus | grep -q '^zswapd_stored_pages [0-9]'
	"$CTL" stats --prometheus | grep -q '^# TYPE zswapd_loads_total counter'
	"$CTL" stats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "stored_pages" in d'
	"$CTL" list --json | python3 -c 'import json,sys; json.load(sys.stdin)'
	# group budgets: a bad cgroup, size or caller changes nothing
	[ "$(rc "$CTL" limit --cgroup /no/such/cgroup 1G 2>"$TMP/e")" = 1 ]
	grep -q "no such memory cgroup" "$TMP/e"
	[ "$(rc "$CTL" limit --cgroup relative/path 1G 2>"$TMP/e")" = 2 ]
	grep -q "not a cgroup path" "$TMP/e"
	[ "$(rc "$CTL" limit --all 12Q 2>"$TMP/e")" = 2 ]; grep -q "not a size" "$TMP/e"
	[ "$(rc "$CTL" limit --all 512K 2>"$TMP/e")" = 1 ]; grep -q "below 1M" "$TMP/e"
	[ "$(rc "$CTL" limit --all 1G 2G 2>/dev/null)" = 2 ]
	[ "$(rc "$CTL" limit --cgroup 2>/dev/null)" = 2 ]
	if command -v setpriv >/dev/null; then
		[ "$(rc setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" limit --all 1G \
			2>"$TMP/e")" = 1 ]
		grep -q "only root" "$TMP/e"
	fi
	"$CTL" limit --all | grep -q "no budget"
	[ "$(stat_of groups)" -eq 0 ]
	# A process names itself: its comm must not break the JSON.
	cp "$MEMTEST" "$TMP/q\"x\\y"
	LD_PRELOAD=$SHIM "$TMP/q\"x\\y" wait-signal 4 >"$TMP/q.out" &
	local qpid=$!
	for _ in $(seq 100); do grep -q evicted "$TMP/q.out" && break; sleep 0.05; done
	"$CTL" list --json | python3 -c "import json,sys; assert any(t['comm'] == 'q\"x\\\\y' for t in json.load(sys.stdin))"
	kill -USR1 $qpid; wait $qpid
	# zswapctl run opts a program in: it shows up in the list while it runs.
	"$CTL" run -- "$MEMTEST" wait-signal 4 >"$TMP/run.out" &
	local pid=$!
	for _ in $(seq 100); do grep -q evicted "$TMP/run.out" && break; sleep 0.05; done
	"$CTL" list | grep -qw "$pid"
	kill -USR1 "$pid"; wait "$pid"
}

t_config_errors() {
	printf 'compressor = lzo\nmax_pool_percent = 101\n' >"$TMP/bad.conf"
	[ "$(rc "$B/zswapd" --check-config -c "$TMP/bad.conf" 2>"$TMP/e")" = 1 ]
	grep -q "bad.conf:2" "$TMP/e"
	printf 'no_such_key = 1\n' >"$TMP/bad.conf"
	[ "$(rc "$B/zswapd" --check-config -c "$TMP/bad.conf" 2>"$TMP/e")" = 1 ]
	grep -q "bad.conf:1" "$TMP/e"
	"$B/zswapd" --check-config -c "$ROOT/conf/zswapd.conf"
	[ "$(rc "$B/zswapd" --compressor lzma --check-config 2>/dev/null)" = 1 ]
	[ "$(rc "$B/zswapd" --bogus 2>/dev/null)" = 2 ]
	[ "$(rc "$B/zswapd" -c /nonexistent.conf --check-config 2>/dev/null)" = 1 ]
}

t_capabilities() {
	# After start-up zswapd keeps exactly CAP_DAC_READ_SEARCH (2), CAP_IPC_LOCK
	# (14) and CAP_SYS_PTRACE (19), in its effective and bounding sets.
	local want=0000000000084004
	grep -q "^CapEff:[[:space:]]*$want$" /proc/"$(dpid)"/status
	grep -q "^CapPrm:[[:space:]]*$want$" /proc/"$(dpid)"/status
	grep -q "^CapBnd:[[:space:]]*$want$" /proc/"$(dpid)"/status
	grep "^Cap" /proc/"$(dpid)"/status
	# Locked, so the pool is never swapped out under its clients.
	grep -q "^VmLck:" /proc/"$(dpid)"/status
	# At the nice it set itself (nice = -10 by default) while it could.
	[ "$(ps -o ni= -p "$(dpid)" | tr -d ' ')" = -10 ]
}

t_sighup() {
	[ "$(stat_of pool_limit_bytes)" -ne 104857600 ]
	reload_with "max_pool_bytes = 100M"
	[ "$(stat_of pool_limit_bytes)" -eq 104857600 ]
	# A bad file is refused and the running configuration stays.
	printf 'max_pool_percent = 500\n' >>"$TMP/zswapd.conf"
	kill -HUP "$(dpid)"
	for _ in $(seq 100); do grep -q "keeping the running configuration" "$TMP/daemon.log" && break; sleep 0.05; done
	# (the line named is the bad one: the file's last)
	grep -q "zswapd.conf:$(wc -l <"$TMP/zswapd.conf").*keeping the running configuration" \
		"$TMP/daemon.log"
	[ "$(stat_of pool_limit_bytes)" -eq 104857600 ]
	reload_with
}

t_pool_limit() {
	# A full pool refuses stores (pool_limit_hit) and the pages stay resident:
	# nothing is lost, the process just keeps more memory.
	stop_daemon
	cp "$TMP/zswapd.conf" "$TMP/zswapd.conf.pl"
	printf 'max_pool_bytes = 4M\n' >>"$TMP/zswapd.conf"
	start_daemon
	shimmed "$MEMTEST" basic 64 64 0
	[ "$(stat_of pool_limit_hit)" -gt 0 ]
	echo "result: pool limit 4M: pool_limit_hit=$(stat_of pool_limit_hit)"
	cp "$TMP/zswapd.conf.pl" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

t_systemd_units() {
	command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed"
	mkdir -p "$TMP/units"
	sed "s|@SBINDIR@|$B|g" "$ROOT/systemd/zswapd.service.in" >"$TMP/units/zswapd.service"
	cp "$ROOT/systemd/zswapd.socket" "$TMP/units/"
	# --man=no: the man pages are installed by make install, not here.
	systemd-analyze verify --man=no "$TMP/units/zswapd.socket" "$TMP/units/zswapd.service" 2>&1 |
		tee "$TMP/verify.out"
	if grep -v "^$" "$TMP/verify.out" |
		grep -qv "Cannot add dependency job\|Failed to load\|not running as"; then false; fi
	# Least privilege as shipped: who may connect, and the calls zswapd never makes.
	grep -q "^SocketMode=0660$" "$TMP/units/zswapd.socket"
	grep -q "^SocketGroup=zswapd$" "$TMP/units/zswapd.socket"
	grep -q "^SystemCallFilter=~.*@debug" "$TMP/units/zswapd.service"
	grep -q "^SystemCallFilter=~.*process_vm_writev.*open_by_handle_at" "$TMP/units/zswapd.service"
}

t_make_install() {
	make -C "$ROOT" -s install BUILD="${BUILD:-build}" DESTDIR="$TMP/root" PREFIX=/usr \
		UNITDIR=/lib/systemd/system >/dev/null
	for f in usr/sbin/zswapd usr/bin/zswapctl usr/lib/libzswap.so etc/zswapd/zswapd.conf \
		lib/systemd/system/zswapd.service lib/systemd/system/zswapd.socket; do
		[ -e "$TMP/root/$f" ] || { echo "missing $f"; return 1; }
	done
	grep -q "^ExecStart=/usr/sbin/zswapd" "$TMP/root/lib/systemd/system/zswapd.service"
	# zswapctl run finds the installed shim in ../lib
	[ "$("$TMP/root/usr/bin/zswapctl" run -- sh -c 'echo $LD_PRELOAD')" = "$TMP/root/usr/lib/libzswap.so" ]
}

t_sd_notify() {
	command -v python3 >/dev/null || skip "python3 not installed"
	# A stand-in for systemd's notification socket: READY=1 once set up,
	# STATUS= with live figures, WATCHDOG=1 from the loop, STOPPING=1 on TERM.
	python3 - "$TMP/notify.sock" >"$TMP/notify.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(15)
try:
    while True:
        print(s.recv(4096).decode(), flush=True)
except socket.timeout:
    pass
EOF
	local lpid=$! zpid rc=0
	for _ in $(seq 100); do [ -S "$TMP/notify.sock" ] && break; sleep 0.05; done
	NOTIFY_SOCKET=$TMP/notify.sock WATCHDOG_USEC=2000000 "$B/zswapd" -s "$TMP/notify-d.sock" \
		-c "$TMP/zswapd.conf" 2>"$TMP/notify-d.log" &
	zpid=$!
	for _ in $(seq 100); do grep -q "READY=1" "$TMP/notify.log" && break; sleep 0.05; done
	grep -q "READY=1" "$TMP/notify.log"
	sleep 2.5
	grep -q "WATCHDOG=1" "$TMP/notify.log"
	grep -q "STATUS=.*targets" "$TMP/notify.log"
	kill -TERM $zpid
	wait $zpid || rc=$?
	[ $rc -eq 0 ]
	sleep 0.2
	grep -q "STOPPING=1" "$TMP/notify.log"
	kill $lpid 2>/dev/null || true
	sort -u "$TMP/notify.log" | head -n 5
}

t_socket_activation() {
	command -v systemd-socket-activate >/dev/null || skip "systemd-socket-activate not installed"
	# As zswapd.socket does it: the listening socket is passed in (LISTEN_FDS).
	systemd-socket-activate --seqpacket -l "$TMP/act.sock" \
		"$B/zswapd" -f -c "$TMP/zswapd.conf" 2>"$TMP/act.log" &
	local apid=$! rc=0
	for _ in $(seq 100); do [ -S "$TMP/act.sock" ] && break; sleep 0.05; done
	# The socket exists once bound; it accepts once the activator listens.
	for _ in $(seq 50); do ZSWAP_SOCKET=$TMP/act.sock "$CTL" stats >/dev/null 2>&1 && break; sleep 0.1; done
	ZSWAP_SOCKET=$TMP/act.sock "$CTL" stats | grep -q stored_pages
	grep -q "the socket systemd passed" "$TMP/act.log"
	ZSWAP_SOCKET=$TMP/act.sock LD_PRELOAD=$SHIM "$MEMTEST" basic 8 8 0
	kill -TERM $apid
	wait $apid || rc=$?
	[ $rc -eq 0 ]
	[ -S "$TMP/act.sock" ] # the socket is the activator's: zswapd must not unlink it
}

t_bad_clients() {
	# Garbage, truncated and out-of-order messages, a HELLO naming someone
	# else's pid (taken as the sender's own), a pipe sent as a uffd
	# (denied), a silent client: each is dropped, the daemon serves on.
	"$B/tests/badclient" "$ZSWAP_SOCKET"
	[ "$(stat_of proto_errors)" -ge 3 ]
	[ "$(stat_of denied)" -ge 1 ]
	shimmed "$MEMTEST" basic 8 8 0
}

t_drain_on_stop() {
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 64 >"$TMP/drain.out" &
	local pid=$!
	for _ in $(seq 200); do grep -q evicted "$TMP/drain.out" && break; sleep 0.05; done
	local stored; stored=$(stat_of stored_pages)
	echo "result: $stored pages stored when zswapd got SIGTERM"
	[ "$stored" -gt 1000 ]
	stop_daemon # must exit 0 after faulting everything back
	grep -q "every page is back" "$TMP/daemon.log"
	kill -USR1 $pid
	wait $pid # verifies every byte with no daemon, and touches a hole in a once-registered chunk
	start_daemon
}

t_abort_scratch() {
	# zswapd stops (SIGTERM) while a move-first batch is in flight and its
	# agent is paused between a move and its copy (agentslow.so, 8 s): the
	# drain gives up on the batch after 5 s and puts its pages back, those
	# not copied yet read from the agent's scratch (a stale staging slot
	# would give the process another page's bytes).  The process goes on
	# touching its pages throughout, then verifies every byte.
	local pid
	AGENTSLOW_MOVE_FIRST=1 AGENTSLOW_USEC=8000000 LD_PRELOAD="$SHIM $B/tests/agentslow.so" \
		"$MEMTEST" hold 16 >"$TMP/as.out" &
	pid=$!
	for _ in $(seq 400); do grep -q ready "$TMP/as.out" && break; sleep 0.05; done
	"$CTL" reclaim "$pid" 256K >/dev/null # one batch, write-protected: it sets the scratch up
	"$CTL" reclaim "$pid" 8M >/dev/null 2>&1 &
	sleep 1
	stop_daemon
	grep -q "putting its batch back" "$TMP/daemon.log"
	grep -q "every page is back" "$TMP/daemon.log"
	kill -USR1 "$pid"
	wait "$pid"
	echo "result: abort_scratch: the batch put back, every byte verified"
	start_daemon
}

area_lifecycle() {
	run cli_errors t_cli_errors
	run config_errors t_config_errors
	run bad_clients t_bad_clients
	run capabilities t_capabilities
	run sighup t_sighup
	run pool_limit t_pool_limit
	run systemd_units t_systemd_units
	run sd_notify t_sd_notify
	run socket_activation t_socket_activation
	run make_install t_make_install
	run drain_on_stop t_drain_on_stop
	run abort_scratch t_abort_scratch
}
