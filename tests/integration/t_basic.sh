# SPDX-License-Identifier: GPL-2.0-only
#
# Area basic: the memtest scenarios under the daemon the suite started:
# a process without a daemon, 256 MiB reclaimed and verified, and the
# hazards (threads, churn, forks, discards, mremaps).

t_no_daemon() {
	ZSWAP_SOCKET=$TMP/nobody-here.sock shimmed "$MEMTEST" plain 16
}

t_core_256m() {
	# The bar: 256 MiB, reclaim 192M, RssAnon drops by >= 150 MiB,
	# every byte verified (twice), then the counters must add up.
	shimmed "$MEMTEST" basic 256 192 150
	local stores loads
	stores=$(stat_of stores); loads=$(stat_of loads)
	echo "result: stores=$stores loads=$loads same_filled=$(stat_of same_filled_pages) poor=$(stat_of reject_compress_poor)"
	[ "$stores" -gt 40000 ]
	[ "$loads" -gt 0 ]
	# Every page the test verified came back: nothing of it is left stored,
	# and the pool's memory goes back (its empty slabs wait a second, at
	# most, in case they are wanted again).
	[ "$(stat_of stored_pages)" -eq 0 ]
	for _ in $(seq 100); do [ "$(stat_of pool_total_size)" -eq 0 ] && break; sleep 0.1; done
	[ "$(stat_of pool_total_size)" -eq 0 ]
}

t_threads() { shimmed "$MEMTEST" threads; }
t_churn() { shimmed "$MEMTEST" churn; }
t_fork() { shimmed "$MEMTEST" fork; }
t_fork_reclaim() { shimmed "$MEMTEST" fork_reclaim; }
t_fork_exclusive() {
	local mf
	mf=$(stat_of evict_move_first_batches)
	shimmed "$MEMTEST" fork_exclusive
	[ "$(stat_of evict_move_first_batches)" != "$mf" ] ||
		skip "no move-first batch (a kernel without UFFDIO_MOVE?): nothing to unshare"
}
t_discard() {
	local inv0; inv0=$(stat_of invalidates)
	shimmed "$MEMTEST" discard
	# DONTNEED/munmap of evicted pages were seen (under TSan the reclaims mostly
	# evict its shadow memory, so the test's own pages may not be evicted)
	case "${SANITIZE:-}" in *thread*) ;; *) [ "$(stat_of invalidates)" -gt "$inv0" ] ;; esac
}
t_mremap() { shimmed "$MEMTEST" mremap; }
t_mremap_race() { shimmed "$MEMTEST" mremap_race; }

area_basic() {
	run no_daemon t_no_daemon
	run core_256m t_core_256m
	run threads t_threads
	run churn t_churn
	run fork t_fork
	run fork_reclaim t_fork_reclaim
	run fork_exclusive t_fork_exclusive
	run discard t_discard
	run mremap t_mremap
	run mremap_race t_mremap_race
}
