#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pyheap - a Python program with a large heap and a collector that walks it.

    pyheap.py KEYS SECONDS [GC_EVERY_S]

Builds KEYS records, each a list [key, version, payload] in one dict, the
payload a string of words that depends on (key, version) (about 230 bytes:
text, as a cache or a session store holds), prints "pyheap: built, waiting
for SIGUSR1" on stderr and waits.  Then, for SECONDS: looks up records at
random (uniform over all keys), checking each it reads, and bumps the
version of one in five (a new payload); every GC_EVERY_S seconds (2) a full
gc.collect(), which visits every list and every object a list refers to:
the heap walked in allocation order.  Prints "pyheap: measured, waiting for
SIGUSR1" and waits again (the benchmark reads its counters and lifts the
limit), then checks every record and prints one JSON line on stdout:
operations per second, collection times, and the records that were wrong
(exit 1 if any).  The same seed each run: every case does the same work.
"""
import gc
import json
import os
import random
import signal
import sys
import time

WORDS = ("the memory of a process that went cold comes back when touched page swap "
         "zswap pool entry index fault limit budget cgroup kernel daemon").split()


# 4096 sentences of 36 words each, the same every run.
SENTENCES = [" ".join(random.Random(i).choice(WORDS) for _ in range(36)) for i in range(4096)]


def payload(key, version):
    """About 230 bytes of text, a function of (key, version) only."""
    h = (key * 2654435761 + version * 40503) & 0xffffffff
    return SENTENCES[h % 4096] + f" #{key}.{version}"


def wait_usr1(what):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print(f"pyheap: {what}, waiting for SIGUSR1", file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGUSR1})


def main():
    keys, seconds = int(sys.argv[1]), float(sys.argv[2])
    gc_every = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    t0 = time.monotonic()
    heap = {k: [k, 0, payload(k, 0)] for k in range(keys)}
    build_s = time.monotonic() - t0
    wait_usr1("built")

    rng = random.Random(42)
    ops = writes = bad_reads = 0
    gc_ms = []
    start = time.monotonic()
    next_gc = start + gc_every
    now = start
    while now - start < seconds:
        for _ in range(256):
            k = rng.randrange(keys)
            rec = heap[k]
            if rec[0] != k or not rec[2].endswith(f" #{k}.{rec[1]}"):
                bad_reads += 1
            if rng.random() < 0.2:
                rec[1] += 1
                rec[2] = payload(k, rec[1])
                writes += 1
            ops += 1
        now = time.monotonic()
        if now >= next_gc:
            g0 = time.monotonic()
            gc.collect()
            now = time.monotonic()
            gc_ms.append((now - g0) * 1000)
            next_gc = now + gc_every
    elapsed = time.monotonic() - start
    wait_usr1("measured")

    t1 = time.monotonic()
    bad = sum(1 for k in range(keys)
              if heap[k][0] != k or heap[k][2] != payload(k, heap[k][1]))
    verify_s = time.monotonic() - t1
    gc_sorted = sorted(gc_ms)
    res = {
        "keys": keys, "seconds": seconds, "build_s": round(build_s, 2),
        "ops": ops, "writes": writes, "elapsed_s": round(elapsed, 3),
        "ops_per_s": round(ops / elapsed), "collections": len(gc_ms),
        "gc_ms_median": round(gc_sorted[len(gc_sorted) // 2], 1) if gc_ms else None,
        "gc_ms_max": round(gc_sorted[-1], 1) if gc_ms else None,
        "gc_ms_total": round(sum(gc_ms), 1),
        "verify_s": round(verify_s, 2), "bad_reads": bad_reads, "bad_records": bad,
        "cpu_user_s": os.times().user, "cpu_sys_s": os.times().system,
        "python": sys.version.split()[0], "pid": os.getpid(),
    }
    print(json.dumps(res), flush=True)
    return 1 if bad or bad_reads else 0


if __name__ == "__main__":
    sys.exit(main())
