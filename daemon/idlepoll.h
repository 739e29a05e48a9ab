/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * idlepoll.h - when idle CPUs should poll rather than sleep: while faults
 * come fast.
 *
 * A thread that faults on an evicted page sleeps until zswapd has put the
 * page in place, and its CPU goes idle meanwhile.  A CPU that sleeps in
 * idle (a halt, a C-state) needs an interrupt to run the thread again
 * when zswapd's UFFDIO_COPY wakes it; in a virtual machine that is an exit
 * to the hypervisor and back, most of a load's time (docs/benchmarks.md,
 * "Idle CPUs polling"; kernel zswap decompresses in the faulting thread,
 * which never sleeps).  A polling idle CPU sees the wake-up by itself,
 * with no interrupt.
 *
 * So while faults come at IDLEPOLL_BURST_FAULTS or more in a millisecond,
 * zswapd holds a CPU latency request of 0 (the kernel's PM QoS,
 * /dev/cpu_dma_latency): idle CPUs poll.  It lets go fault_idle_poll_ms
 * after the last millisecond that had that many.  Polling costs the CPU
 * time of idle CPUs, so a sparse fault (a few a millisecond: the waits
 * are then a small part of the process's time) never takes it.  The
 * request dies with zswapd's descriptor: a crash cannot leave it behind.
 * The cpuidle governor is what reads it: on a machine without a cpuidle
 * driver idle is always a halt, and the request changes nothing.
 *
 * Pure: the caller reads the clock and makes the request (idlepoll_qos.c).
 */
#ifndef ZSWAPD_IDLEPOLL_H
#define ZSWAPD_IDLEPOLL_H

#include <stdbool.h>
#include <stdint.h>

#define IDLEPOLL_SLOT_USEC 1000u
/* 8 a millisecond: threads waiting about 10-20 us each spend a tenth or
 * more of their time on faults, and save a third or more of it. */
#define IDLEPOLL_BURST_FAULTS 8u

struct idlepoll {
	uint64_t slot;	     /* now / IDLEPOLL_SLOT_USEC of the slot counted */
	uint32_t slot_faults; /* faults served in it */
	bool held;
	uint64_t since_usec; /* held since then */
	uint64_t until_usec; /* held until then */
};

/* A fault served at now; true when the request should be taken. */
bool idlepoll_fault(struct idlepoll *p, uint64_t now, uint64_t hold_usec);
/* Held, and due to be let go at now (then no longer held). */
bool idlepoll_expired(struct idlepoll *p, uint64_t now);
/* How long until the request is to go: UINT64_MAX when not held. */
uint64_t idlepoll_timeout(const struct idlepoll *p, uint64_t now);

#endif
