/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zswap_stats.h - every counter of `zswapctl stats`, declared once.
 *
 * ZS_STATS(X) calls X(name, kind, source, help) for each counter, in the
 * order of the reply.  Names are kernel zswap's (debugfs zswap/ and
 * Documentation/admin-guide/mm/zswap.rst) where one exists, so that
 * dashboards built for one read the other.
 *   kind    GAUGE: a level, up and down; COUNTER: only grows (Prometheus
 *           "_total").
 *   source  FIELD: a uint64_t of the daemon's struct stats of that name,
 *           kept by whoever counts it; DERIVED: computed when asked
 *           (daemon/stats.c).
 * The daemon builds struct stats and the reply from it; zswapctl takes the
 * kind and the help text for --prometheus.  A new counter is one line here.
 */
#ifndef ZSWAP_STATS_H
#define ZSWAP_STATS_H

#define ZS_STATS(X)                                                                                \
	X(stored_pages, GAUGE, FIELD, "pages stored: entries alive, one shared by a fork counts once") \
	X(pool_total_size, GAUGE, DERIVED, "bytes of memory the pool holds, cached empty slabs included") \
	X(compressed_bytes, GAUGE, FIELD, "bytes of compressed data in the pool")                  \
	X(pool_packing_percent, GAUGE, DERIVED, "compressed_bytes / pool_total_size, in percent")  \
	X(same_filled_pages, GAUGE, FIELD, "stored pages kept as one repeated word (zero pages)")   \
	X(stored_incompressible_pages, GAUGE, FIELD, "stored pages kept as they are (store_incompressible)") \
	X(pool_limit_bytes, GAUGE, DERIVED, "the pool's limit in bytes (max_pool_percent/bytes)")  \
	X(pool_limit_hit, COUNTER, FIELD, "stores refused because the pool was at its limit")      \
	X(written_back_pages, COUNTER, FIELD, "entries moved to the swap file")                    \
	X(swap_used_bytes, GAUGE, DERIVED, "bytes of the swap file in use, in whole blocks")       \
	X(swap_writes, COUNTER, FIELD, "blocks written to the swap file")                          \
	X(swap_write_bytes, COUNTER, FIELD, "bytes written to the swap file")                      \
	X(swap_reads, COUNTER, FIELD, "reads from the swap file (faults and readahead)")           \
	X(swap_read_bytes, COUNTER, FIELD, "bytes read from the swap file")                        \
	X(writeback_errors, COUNTER, FIELD, "writebacks that failed or found the file full")       \
	X(swap_read_errors, COUNTER, FIELD, "pages lost to a failed read: poisoned (SIGBUS on access)") \
	X(readahead_pages, COUNTER, FIELD, "pages read back from the swap file ahead of a fault")   \
	X(readahead_hits, COUNTER, FIELD, "of those, faulted on while in the pool")                \
	X(prefetch_pages, COUNTER, FIELD, "pages brought back from the pool ahead of a fault (prefetch_pages)") \
	X(prefetch_hits, COUNTER, FIELD, "of those, in windows the process read through to their end") \
	X(prefetch_misses, COUNTER, FIELD, "of those, in windows the process left before their end") \
	X(reject_compress_poor, COUNTER, FIELD, "pages left resident: compressed worse than max_compressed_percent") \
	X(reject_alloc_fail, COUNTER, FIELD, "pages left resident: no memory for them")            \
	X(stores, COUNTER, FIELD, "pages evicted into the pool")                                   \
	X(loads, COUNTER, FIELD, "evicted pages faulted back")                                     \
	X(invalidates, COUNTER, FIELD, "entries dropped because the process discarded the memory") \
	X(targets, GAUGE, DERIVED, "processes served")                                             \
	X(targets_moving, GAUGE, DERIVED, "of those, with an agent that moves pages out (UFFDIO_MOVE)") \
	X(zero_fills, COUNTER, FIELD, "faults on never-evicted pages of registered chunks, served zeros") \
	X(unclaimed_children, COUNTER, FIELD, "forked children no shim claimed: their evicted pages brought back") \
	X(faults_deferred, COUNTER, FIELD, "faults that waited for an eviction batch")             \
	X(faults_throttled, COUNTER, FIELD, "of those, waiting because the process was over its limit") \
	X(stalled_writes, COUNTER, FIELD, "writes let through a batch whose agent stalled")        \
	X(hot_skips, COUNTER, FIELD, "resident pages left alone because they came back lately")    \
	X(poor_skips, COUNTER, FIELD, "pages not tried again because they compressed poorly lately") \
	X(raw_pages, GAUGE, FIELD, "refused pages that could not be put back at once, kept on the heap (the pool had no room)") \
	X(compacted_bytes, COUNTER, FIELD, "pool memory given back by compaction")                 \
	X(recompressed_pages, COUNTER, FIELD, "entries compressed again by the recompressor")     \
	X(recompress_saved_bytes, COUNTER, FIELD, "bytes those recompressions took off compressed_bytes") \
	X(pool_fragmented_bytes, GAUGE, DERIVED, "pool memory compaction could give back")         \
	X(evict_batches, COUNTER, FIELD, "eviction batches sent to agents")                        \
	X(evict_moved_batches, COUNTER, FIELD, "of those, the agent moved pages out (UFFDIO_MOVE)") \
	X(evict_local_batches, COUNTER, FIELD, "of those, the agent ran on the app thread's CPU")  \
	X(evict_move_first_batches, COUNTER, FIELD, "of those, moved then copied, not write-protected") \
	X(evict_scratch_reads, COUNTER, FIELD, "pages read from an agent's scratch before it copied them") \
	X(agent_move_misreports, COUNTER, FIELD, "moves reported failed that had moved the page")  \
	X(evict_errors, COUNTER, FIELD, "batches or runs an agent could not do")                   \
	X(uffd_errors, COUNTER, FIELD, "userfaultfd ioctls that failed unexpectedly")              \
	X(proto_errors, COUNTER, FIELD, "malformed messages: connections dropped")                 \
	X(denied, COUNTER, FIELD, "requests refused by access control")                           \
	X(metadata_bytes, GAUGE, DERIVED, "bytes of the index and entries: what the bookkeeping costs") \
	X(fault_stall_usec, COUNTER, FIELD, "microseconds served processes' threads waited on faults, from read to wake") \
	X(load_decompress_nsec, COUNTER, FIELD, "nanoseconds loads from the pool spent decompressing") \
	X(load_map_nsec, COUNTER, FIELD, "nanoseconds loads from the pool spent mapping the page (UFFDIO_COPY, ZEROPAGE)") \
	X(idle_poll_holds, COUNTER, FIELD, "bursts of faults through which idle CPUs were held polling (fault_idle_poll_ms)") \
	X(idle_poll_usec, COUNTER, FIELD, "microseconds idle CPUs were held polling, counted when each hold ends") \
	X(proactive_sweeps, COUNTER, FIELD, "sweeps that evicted cold pages unasked (idle_evict_seconds)") \
	X(proactive_backed_off, GAUGE, DERIVED, "processes whose proactive sweeps back off (refaults or stall over target)") \
	X(groups, GAUGE, DERIVED, "groups held under one budget: zswapctl limit --all/--cgroup, followed cgroup limits") \
	X(group_reclaims, COUNTER, FIELD, "reclaims a group budget or cgroup limit started on one of its processes") \
	X(pressure_events, COUNTER, FIELD, "memory pressure events: the host's PSI trigger and cgroups'") \
	X(upgrades, COUNTER, FIELD, "in-place upgrades (SIGUSR2): a new binary took over every page without faulting one back") \
	X(crash_recoveries, COUNTER, FIELD, "starts that took over from a zswapd that died, every page kept") \
	X(restarts, COUNTER, FIELD, "starts that took over from a zswapd stopped for a restart, every page kept") \
	X(journal_bytes, GAUGE, DERIVED, "bytes of the journal a zswapd started after a crash would read") \
	X(journal_rewrites, COUNTER, FIELD, "times the journal was written anew from what zswapd holds")

#endif
