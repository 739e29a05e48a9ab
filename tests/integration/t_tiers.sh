# SPDX-License-Identifier: GPL-2.0-only
#
# Area tiers: where evicted pages live: the pool (its honest size,
# compaction, recompression), the swap file behind it (writeback, a full
# disk, read errors), restore, and a process killed mid-commit.

# The daemon's own memory: RssAnon + RssShmem (its pool's arena), in bytes.
daemon_rss() {
	awk '/^Rss(Anon|Shmem):/ { kb += $2 } END { print kb * 1024 }' /proc/"$(dpid)"/status
}

t_compaction() {
	no_rss_under_tsan
	# Half of every slab freed (every other evicted page discarded): the loop
	# finds the pool fragmented and compacts it, giving memory back
	# (compacted_bytes, pool_total_size down), and the pages kept are intact.
	local pid c0 p0 p1
	LD_PRELOAD=$SHIM "$MEMTEST" fragment 64 >"$TMP/frag.out" 2>&1 &
	pid=$!
	for _ in $(seq 600); do grep -q evicted "$TMP/frag.out" && break; sleep 0.05; done
	grep -q evicted "$TMP/frag.out"
	p0=$(stat_of pool_total_size)
	c0=$(stat_of compacted_bytes)
	kill -USR1 $pid
	for _ in $(seq 600); do grep -q fragmented "$TMP/frag.out" && break; sleep 0.05; done
	grep -q fragmented "$TMP/frag.out"
	for _ in $(seq 100); do
		[ "$(stat_of compacted_bytes)" -gt "$c0" ] &&
			[ "$(stat_of pool_fragmented_bytes)" -lt $((1 << 20)) ] && break
		sleep 0.1
	done
	p1=$(stat_of pool_total_size)
	kill -USR1 $pid
	wait $pid || { cat "$TMP/frag.out"; return 1; }
	echo "result: compaction: gave back $((($(stat_of compacted_bytes) - c0) >> 10)) KiB, pool $((p0 >> 10)) -> $((p1 >> 10)) KiB"
	[ "$(stat_of compacted_bytes)" -gt "$c0" ]
	[ "$p1" -lt "$p0" ]
}

t_pool_honest() {
	no_rss_under_tsan
	# pool_total_size is memory the daemon really holds: its resident memory
	# grows by that much (plus the index and entries), give or take its
	# buffers. The pool's slabs are in a memfd: RssShmem, the rest RssAnon.
	local before after pool meta grown
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 64 >"$TMP/honest.out" &
	local pid=$!
	before=$(daemon_rss)
	for _ in $(seq 200); do grep -q evicted "$TMP/honest.out" && break; sleep 0.05; done
	after=$(daemon_rss)
	pool=$(stat_of pool_total_size); meta=$(stat_of metadata_bytes)
	grown=$((after - before))
	echo "result: pool_total_size $((pool >> 10)) KiB + metadata $((meta >> 10)) KiB; daemon RssAnon + RssShmem grew $((grown >> 10)) KiB; packing $(stat_of pool_packing_percent)%"
	[ "$pool" -gt $((8 << 20)) ]
	# within 15% + 8 MiB (staging memfd, malloc arenas, read buffers)
	[ "$grown" -lt $(( (pool + meta) * 115 / 100 + (8 << 20) )) ]
	[ "$grown" -gt $(( (pool + meta) * 85 / 100 - (8 << 20) )) ]
	[ "$(stat_of pool_packing_percent)" -ge 85 ]
	kill -USR1 $pid
	wait $pid
}

t_recompress() {
	# What stays in the pool recompress_seconds without being loaded is
	# compressed again with the recompressor (zstd by default), smaller,
	# and comes back byte-identical, from the pool and, written back, from
	# the swap file.  The counters add up: compressed_bytes shrank by what
	# recompress_saved_bytes says.
	restart_with "recompress_seconds = 1" "swap_file = $TMP/swap" "swap_file_size = 64M"
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 16 >"$TMP/rc.out" &
	local pid=$! before comp n saved
	for _ in $(seq 200); do grep -q evicted "$TMP/rc.out" && break; sleep 0.05; done
	# (one snapshot each: recompression goes on between two `stats`)
	"$CTL" stats >"$TMP/rc.st"
	before=$(($(stat_in "$TMP/rc.st" compressed_bytes) + $(stat_in "$TMP/rc.st" recompress_saved_bytes)))
	comp=$(($(stat_in "$TMP/rc.st" stored_pages) - $(stat_in "$TMP/rc.st" same_filled_pages) -
		$(stat_in "$TMP/rc.st" stored_incompressible_pages)))
	# Two walks a second apart, then about 1000 pages a second.
	for _ in $(seq 200); do
		n=$(stat_of recompressed_pages)
		[ "$n" -gt $((comp / 2)) ] && break
		sleep 0.1
	done
	"$CTL" stats >"$TMP/rc.st"
	n=$(stat_in "$TMP/rc.st" recompressed_pages); saved=$(stat_in "$TMP/rc.st" recompress_saved_bytes)
	echo "result: recompress: $n of $comp compressed pages recompressed, $before -> $(stat_in "$TMP/rc.st" compressed_bytes) bytes"
	[ "$n" -gt $((comp / 2)) ]
	[ "$saved" -gt 0 ]
	[ "$(stat_in "$TMP/rc.st" compressed_bytes)" -eq $((before - saved)) ]
	# A pool limit of 1M sends the recompressed entries to the swap file.
	printf 'max_pool_bytes = 1M\n' >>"$TMP/zswapd.conf"
	kill -HUP "$(dpid)"
	for _ in $(seq 200); do [ "$(stat_of written_back_pages)" -gt $((comp / 2)) ] && break; sleep 0.05; done
	[ "$(stat_of written_back_pages)" -gt $((comp / 2)) ]
	kill -USR1 $pid
	wait $pid
	[ "$(stat_of swap_reads)" -gt 0 ]
	[ "$(stat_of swap_read_errors)" -eq 0 ]
	# recompressor = none: nothing is recompressed.
	restart_with "recompress_seconds = 1" "recompressor = none"
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 8 >"$TMP/rc2.out" &
	pid=$!
	for _ in $(seq 200); do grep -q evicted "$TMP/rc2.out" && break; sleep 0.05; done
	sleep 3
	[ "$(stat_of recompressed_pages)" -eq 0 ]
	kill -USR1 $pid
	wait $pid
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

t_writeback() {
	command -v fincore >/dev/null || skip "fincore (util-linux) not installed"
	# A pool of 4 MiB in front of a 256 MiB swap file: most pages end up on
	# disk, packed, and every byte must come back, in parents and children.
	restart_with "max_pool_bytes = 4M" "swap_file = $TMP/swap" "swap_file_size = 256M"
	[ "$(stat -c %a "$TMP/swap")" = 600 ]
	shimmed "$MEMTEST" basic 64 64 16
	shimmed "$MEMTEST" fork
	local wb reads wbytes
	wb=$(stat_of written_back_pages); reads=$(stat_of swap_reads); wbytes=$(stat_of swap_write_bytes)
	echo "result: writeback: $wb pages written back in $wbytes bytes ($((wbytes / (wb > 0 ? wb : 1))) B/page), $reads read back"
	# How many depends on how fast the disk keeps up (stores are refused
	# while it catches up), so only that it happened, in both directions.
	[ "$wb" -gt 1000 ]
	[ "$reads" -gt 500 ]
	[ "$wbytes" -lt $((wb * 4096)) ] # packed: less than a page per page
	[ "$(stat_of writeback_errors)" -eq 0 ]
	# store_incompressible = auto with a swap file: the random pages were
	# stored as they are (and written back) rather than refused.
	[ "$(stat_of reject_compress_poor)" -eq 0 ]
	# memtest verifies in address order: sequential swap-ins, so readahead pays.
	echo "result: readahead: $(stat_of readahead_pages) pages read ahead, $(stat_of readahead_hits) hits"
	[ "$(stat_of readahead_hits)" -gt 100 ]
	# O_DIRECT: what was written is not also sitting in the page cache.
	local cached; cached=$(fincore --bytes --noheadings --output RES "$TMP/swap")
	echo "result: swap file bytes in page cache: $cached"
	[ "$cached" -lt $((1024 * 1024)) ]
	# Stop with pages on disk: they come back too.
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 32 >"$TMP/wbdrain.out" &
	local pid=$!
	for _ in $(seq 200); do grep -q evicted "$TMP/wbdrain.out" && break; sleep 0.05; done
	sleep 0.5
	[ "$(stat_of written_back_pages)" -gt "$wb" ]
	stop_daemon
	kill -USR1 $pid
	wait $pid
	# Without readahead every read is a fault's, and reads only the
	# sectors its object lies in, where the file system allows O_DIRECT
	# reads of less than a block (the daemon says in what units).
	restart_with "max_pool_bytes = 4M" "swap_file = $TMP/swap" "swap_file_size = 256M" \
		"readahead_pages = 0"
	shimmed "$MEMTEST" basic 64 64 16
	local unit rbytes
	unit=$(sed -n 's/.*faults read \([0-9]*\)-byte units.*/\1/p' "$TMP/daemon.log" | tail -1)
	reads=$(stat_of swap_reads); rbytes=$(stat_of swap_read_bytes)
	echo "result: no readahead: $reads reads of $rbytes bytes in $unit-byte units"
	[ "$reads" -gt 500 ]
	[ "$(stat_of readahead_pages)" -eq 0 ]
	[ "$rbytes" -le $((reads * 4096)) ]
	[ "$rbytes" -ge $((reads * unit)) ]
	if [ "$unit" -lt 4096 ]; then
		[ "$rbytes" -lt $((reads * 4096 * 3 / 4)) ]
	fi
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

t_swap_read_error() {
	# The swap file loses its data under the daemon (truncated: every read
	# comes back short, as from a failing disk): a page that cannot be read
	# back is poisoned, so its access is a SIGBUS, never zeros or garbage,
	# and the process stays served.  Once through a restore, which must not
	# read a poisoned page twice (that killed the target), then through the
	# app's own faults.
	local pid out kind
	# LeakSanitizer's exit check reads memory too, and poisoned pages
	# stop it (a fatal error): not for this process.
	[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
	for kind in restore faults; do
		restart_with "max_pool_bytes = 4M" "swap_file = $TMP/swap" "swap_file_size = 256M"
		LD_PRELOAD=$SHIM "$MEMTEST" sigbus 32 >"$TMP/sigbus_$kind.txt" &
		pid=$!
		for _ in $(seq 200); do grep -q evicted "$TMP/sigbus_$kind.txt" && break; sleep 0.05; done
		for _ in $(seq 100); do [ "$(stat_of written_back_pages)" -gt 2000 ] && break; sleep 0.05; done
		truncate -s 0 "$TMP/swap"
		if [ "$kind" = restore ]; then
			out=$("$CTL" restore "$pid") || { kill -USR1 "$pid"; wait "$pid"; return 1; }
			echo "result: swap read error, restore: $out"
			"$CTL" list | grep -qw "$pid"
		fi
		kill -USR1 "$pid"
		wait "$pid"
		echo "result: swap read error, $kind: $(grep sigbus: "$TMP/sigbus_$kind.txt"), swap_read_errors $(stat_of swap_read_errors)"
		grep -q "sigbus: [1-9][0-9]* pages poisoned" "$TMP/sigbus_$kind.txt"
		[ "$(stat_of swap_read_errors)" -gt 0 ]
	done
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
}

# restore_one_process MIB OUT: a memtest that evicts MIB MiB of itself, a
# 16M limit, then `zswapctl restore`: every page back, no limit, the
# process then verifies every byte.
restore_one_process() {
	local pid out
	LD_PRELOAD=$SHIM "$MEMTEST" wait-signal "$1" >"$2" &
	pid=$!
	for _ in $(seq 200); do grep -q evicted "$2" && break; sleep 0.05; done
	"$CTL" limit "$pid" 16M >/dev/null
	out=$("$CTL" restore "$pid") || { kill -USR1 $pid; wait $pid; return 1; }
	echo "result: restore: $out"
	"$CTL" list --json | python3 -c "
import json, sys
t = next(t for t in json.load(sys.stdin) if t['pid'] == $pid)
assert t['evicted_pages'] == 0 and t['limit_bytes'] == 0, t
assert t['resident_pages'] * 4096 >= $1 * 1024 * 1024, t"
	# Served still: it can be evicted again.
	"$CTL" reclaim "$pid" 8M | grep -q "evicted"
	kill -USR1 $pid
	wait $pid
}

t_restore() {
	# swapoff for one process: from the pool, then from a swap file (most
	# pages on disk); and what it refuses.
	restore_one_process 64 "$TMP/restore_pool.txt"
	restart_with "max_pool_bytes = 4M" "swap_file = $TMP/swap" "swap_file_size = 256M"
	local wb=$(stat_of written_back_pages) reads=$(stat_of swap_reads)
	restore_one_process 32 "$TMP/restore_disk.txt"
	echo "result: restore with a swap file: $(($(stat_of written_back_pages) - wb)) pages written back, $(($(stat_of swap_reads) - reads)) reads"
	[ "$(stat_of written_back_pages)" -gt "$wb" ]
	[ "$(stat_of swap_reads)" -gt "$reads" ]
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	stop_daemon
	start_daemon
	[ "$(rc "$CTL" restore 1 2>"$TMP/e")" = 1 ]; grep -q "not served" "$TMP/e"
	[ "$(rc "$CTL" restore abc 2>"$TMP/e")" = 2 ]; grep -q "not a process id" "$TMP/e"
	[ "$(rc "$CTL" restore 2>/dev/null)" = 2 ]
	# The process dies mid-restore: the daemon lives on (a first version
	# freed the restore under its own walk of the index).
	local pid rpid delay
	for delay in 0.01 0.03 0.1; do
		LD_PRELOAD=$SHIM "$MEMTEST" wait-signal 128 >"$TMP/restore_kill.txt" &
		pid=$!
		for _ in $(seq 200); do grep -q evicted "$TMP/restore_kill.txt" && break; sleep 0.05; done
		"$CTL" restore "$pid" >/dev/null 2>&1 &
		rpid=$!
		sleep "$delay"
		kill -KILL "$pid"
		wait "$pid" || true
		wait "$rpid" || true
		"$CTL" stats >/dev/null
	done
	[ -n "$(stat_of loads)" ]
}

t_writeback_enospc() {
	grep -q tmpfs /proc/filesystems || skip "no tmpfs"
	# The swap file's disk is full: writes fail with ENOSPC, are counted and
	# logged once, entries stay in the pool, and nothing is lost.
	mkdir -p "$TMP/tiny"
	mount -t tmpfs -o size=512k tmpfs "$TMP/tiny" || skip "cannot mount tmpfs"
	restart_with "max_pool_bytes = 4M" "swap_file = $TMP/tiny/swap" "swap_file_size = 64M"
	grep -q "continuing with a sparse file" "$TMP/daemon.log"
	shimmed "$MEMTEST" basic 64 64 0
	local errs; errs=$(stat_of writeback_errors)
	echo "result: tiny disk: $(stat_of written_back_pages) pages written back, $errs write errors, $(stat_of pool_limit_hit) stores refused"
	[ "$errs" -gt 0 ]
	[ "$(grep -c 'writeback to the swap file failed' "$TMP/daemon.log")" -le 3 ] # once per streak, not per page
	stop_daemon
	umount "$TMP/tiny"
	cp "$TMP/zswapd.conf.base" "$TMP/zswapd.conf"
	start_daemon
}

t_exit_mid_commit() {
	# A process killed while zswapd commits its batch: the put-back of a
	# page refused at the commit (1/8 of hold's pages are random, refused
	# without a swap file) finds the mm gone (ESRCH) before the pidfd says
	# the process exited.  zswapd once freed the reclaim request right
	# there and then counted the refusal into it: a write to freed memory,
	# seen only by make asan (the daemon aborted; the normal build went on
	# as if nothing happened).  20 kills at different moments of a
	# reclaim; then zswapd must still serve, and nothing may stay stored.
	local i pid stored0 refused0
	stored0=$(stat_of stored_pages)
	refused0=$(stat_of reject_compress_poor)
	for i in $(seq 20); do
		hold_start "$TMP/emc.out" 32
		pid=$HOLD_PID
		"$CTL" reclaim "$pid" 32M >/dev/null 2>&1 &
		sleep "0.0$((i % 10))$((RANDOM % 10))"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null || true
		wait
	done
	echo "result: exit_mid_commit: 20 processes killed mid-reclaim, $(($(stat_of reject_compress_poor) - refused0)) pages refused meanwhile"
	kill -0 "$(dpid)"
	for _ in $(seq 100); do [ "$(stat_of stored_pages)" -eq "$stored0" ] && break; sleep 0.1; done
	[ "$(stat_of stored_pages)" -eq "$stored0" ]
	shimmed "$MEMTEST" basic 16 16 0
}

area_tiers() {
	run pool_honest t_pool_honest
	run compaction t_compaction
	run writeback t_writeback
	run recompress t_recompress
	run writeback_enospc t_writeback_enospc
	run restore t_restore
	run swap_read_error t_swap_read_error
	run exit_mid_commit t_exit_mid_commit
}
