# SPDX-License-Identifier: GPL-2.0-only
#
# Area faults: how faults are served ahead and fast: prefetch, and idle
# CPUs held polling during a burst of faults.

# scan_run TAG: memtest scan 32, with zswapd's counters saved after each phase as $TMP/TAG.N
# (1 sequential, 2 written, 3 random).
scan_run() {
	local fifo=$TMP/scan.in pid n=0 phase
	rm -f "$fifo" "$TMP/scan.out"
	mkfifo "$fifo"
	LD_PRELOAD=$SHIM "$MEMTEST" scan 32 <"$fifo" >"$TMP/scan.out" 2>&1 &
	pid=$!
	exec 3>"$fifo"
	"$CTL" stats >"$TMP/$1.0"
	for phase in sequential written random; do
		n=$((n + 1))
		for _ in $(seq 600); do grep -q "scan: $phase done" "$TMP/scan.out" && break; sleep 0.05; done
		"$CTL" stats >"$TMP/$1.$n"
		echo >&3
	done
	exec 3>&-
	wait $pid || { cat "$TMP/scan.out"; return 1; }
}

# grew TAG N NAME: how much counter NAME grew in phase N of scan_run TAG.
grew() { echo $(($(stat_in "$TMP/$1.$2" "$3") - $(stat_in "$TMP/$1.$(($2 - 1))" "$3"))); }

t_prefetch() {
	# Evicted memory read in address order comes back mostly ahead of its faults
	# (prefetch_hits); written in order, as read; read in random order, next to none.  Every
	# byte is checked by memtest, and prefetch_pages = 0 turns it off.
	local seq_l seq_h rnd_l rnd_p wr_l wr_h
	scan_run on
	seq_l=$(grew on 1 loads) seq_h=$(grew on 1 prefetch_hits)
	wr_l=$(grew on 2 loads) wr_h=$(grew on 2 prefetch_hits)
	rnd_l=$(grew on 3 loads) rnd_p=$(grew on 3 prefetch_pages)
	[ "$seq_h" -gt $((seq_l / 2)) ]
	[ "$rnd_p" -lt $((rnd_l / 20)) ]
	[ "$wr_h" -gt $((wr_l / 2)) ]
	reload_with "prefetch_pages = 0"
	scan_run off
	reload_with
	[ "$(grew off 1 prefetch_pages)" -eq 0 ]
	echo "result: prefetch: in order $seq_h of $seq_l pages came back ahead of their fault," \
		"written in order $wr_h of $wr_l, in random order $rnd_p of $rnd_l; off: none"
}

# The aggregate CPU latency request of the machine's PM QoS, in microseconds.
cpu_latency() { od -An -t d4 /dev/cpu_dma_latency | tr -d ' '; }

t_idle_poll() {
	# A burst of faults holds idle CPUs polling: zswapd's CPU latency request of
	# 0 on /dev/cpu_dma_latency, withdrawn fault_idle_poll_ms after the burst (the
	# device then reads what it read before).  0 turns it off.
	[ -c /dev/cpu_dma_latency ] || skip "no /dev/cpu_dma_latency"
	local before during holds
	# A burst of the test before may still hold it, for fault_idle_poll_ms.
	for _ in $(seq 50); do before=$(cpu_latency) && [ "$before" -gt 0 ] && break; sleep 0.1; done
	[ "$before" -gt 0 ] || skip "someone else holds CPUs polling ($before us)"
	ls -l "/proc/$(dpid)/fd" | grep -q cpu_dma_latency
	reload_with "fault_idle_poll_ms = 1000" # long enough to be seen
	scan_run poll
	during=$(cpu_latency)
	holds=$(($(stat_in "$TMP/poll.3" idle_poll_holds) - $(stat_in "$TMP/poll.0" idle_poll_holds)))
	case "${SANITIZE:-}" in
	*thread*) ;; # a fault under TSan may take longer than a burst allows
	*)
		[ "$holds" -ge 1 ]
		[ "$during" -eq 0 ]
		;;
	esac
	for _ in $(seq 50); do [ "$(cpu_latency)" = "$before" ] && break; sleep 0.1; done
	[ "$(cpu_latency)" = "$before" ]
	[ "$holds" -eq 0 ] || [ "$(stat_of idle_poll_usec)" -gt 0 ]
	reload_with "fault_idle_poll_ms = 0"
	scan_run off
	reload_with
	[ "$(stat_in "$TMP/off.3" idle_poll_holds)" -eq "$(stat_in "$TMP/off.0" idle_poll_holds)" ]
	echo "result: idle_poll: $holds hold(s) in a scan, the request $during us during it," \
		"$before us after; none with 0"
}

area_faults() {
	run prefetch t_prefetch
	run idle_poll t_idle_poll
}
