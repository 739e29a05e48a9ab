# SPDX-License-Identifier: GPL-2.0-only
#
# Area clients: processes served in other ways: the kernel reading
# evicted memory, exec, each compressor, an unprivileged user and one
# who may not touch another's process, a third-party program.

t_kernel_access() { shimmed "$MEMTEST" kernel; }
t_exec() { shimmed "$MEMTEST" exec; }

t_compressors() {
	local c
	for c in lz4 zstd; do
		stop_daemon
		start_daemon --compressor "$c"
		grep -q "compressor $c" "$TMP/daemon.log"
		shimmed "$MEMTEST" basic 32 32 0
	done
	stop_daemon
	start_daemon
}

t_unprivileged() {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to uid 65534"
	# uid 65534 can't create a full uffd itself (vm.unprivileged_userfaultfd=0):
	# it gets one through zswapd's /dev/userfaultfd descriptor.
	setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$SHIM" \
		ZSWAP_SOCKET="$ZSWAP_SOCKET" "$MEMTEST" basic 32 32 16
}

t_access_control() {
	command -v setpriv >/dev/null || skip "setpriv not installed"
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 8 >"$TMP/ac.out" &
	local pid=$! out
	for _ in $(seq 100); do grep -q evicted "$TMP/ac.out" && break; sleep 0.05; done
	# Another user may not evict root's process...
	if out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env ZSWAP_SOCKET="$ZSWAP_SOCKET" \
		"$CTL" reclaim "$pid" 1M 2>&1); then
		echo "nobody reclaimed root's process: $out"; kill -USR1 $pid; return 1
	fi
	echo "$out" | grep -q "only root or the process's owner"
	# ...nor see it listed.
	if setpriv --reuid=65534 --regid=65534 --clear-groups env ZSWAP_SOCKET="$ZSWAP_SOCKET" \
		"$CTL" list | grep -qw "$pid"; then false; fi
	"$CTL" list | grep -qw "$pid"
	[ "$(stat_of denied)" -ge 1 ]
	kill -USR1 $pid
	wait $pid
}

t_stress_ng() {
	command -v stress-ng >/dev/null || skip "stress-ng not installed"
	# A third-party program that checks its own memory (--verify), in forked
	# workers, evicted over and over while it runs.
	LD_PRELOAD=$SHIM stress-ng --vm 2 --vm-bytes 64M --vm-keep --vm-method all --verify \
		--timeout 20s --metrics-brief >"$TMP/stress.out" 2>&1 &
	local spid=$! evicted=0 p
	sleep 1
	while kill -0 $spid 2>/dev/null; do
		# The workers are grandchildren of stress-ng, forked and registered by the shim.
		for p in $(pgrep -x stress-ng-vm); do
			if out=$("$CTL" reclaim "$p" 32M 2>/dev/null); then
				evicted=$((evicted + $(echo "$out" | sed -n 's/.*(\([0-9]*\) pages).*/\1/p')))
			fi
		done
		sleep 0.2
	done
	local rc=0; wait $spid || rc=$?
	cat "$TMP/stress.out"
	echo "result: stress-ng rc=$rc, $evicted pages evicted from its workers while it verified"
	[ $rc -eq 0 ]
	refute grep -qi "fail\|corrupt" "$TMP/stress.out"
	[ "$evicted" -gt 1000 ]
}

area_clients() {
	run kernel_access t_kernel_access
	run exec t_exec
	run compressors t_compressors
	run unprivileged t_unprivileged
	run access_control t_access_control
	run stress_ng t_stress_ng
}
