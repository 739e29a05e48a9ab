#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.py - turns the raw figures run.sh left for each case of the
side-by-side benchmark into compare.json, compare.md and compare.png in the
--out directory (run.sh passes its output directory: build/bench unless
BENCH_OUT says otherwise; see docs/benchmarks.md).  With --writeback: of the
writeback benchmark, into writeback.json and writeback.md; with --workers: of
the N concurrent jobs, into workers.json, .md and .png; with --redis: of the
redis run, into redis.json and .md; with --memcached: of the memcached run,
into memcached.json and .md; with --pairs: of the rounds of kernel
zswap against zswapd, into pairs.json and .md.

Each case directory holds: meta (key=value, written by run.sh),
workload.json (the workload's own output), and two snapshots taken while the
workload waited at a handshake, w.* after warm-up and m.* after the measured
window: vmstat, meminfo, status (the workload's /proc/PID/status), and where
they apply dstat (/proc/ZSWAPD/stat), zswapd (`zswapctl stats`), debugfs
(/sys/kernel/debug/zswap, as path:value), cgroup (memory.* of the case's
cgroup).  Deltas m - w are exactly the measured window.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

PAGE = 4096
MIB = 1024 * 1024


def write_json(out, name, doc):
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def write_md(out, name, md):
    """NAME.md in out, and the same on stdout."""
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))


def read_kv(path, sep=None):
    """'name value' (or 'name<sep>value') lines -> {name: int or str}."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.strip().split(sep, 1) if sep else line.split(None, 1)
                if len(parts) != 2:
                    continue
                k, v = parts[0].strip(), parts[1].strip()
                try:
                    out[k] = int(v.split()[0])
                except (ValueError, IndexError):
                    out[k] = v
    except OSError:
        pass
    return out


def read_meta(path):
    return read_kv(path, "=")


def read_status(path):
    """RssAnon, VmSwap ... in kB."""
    return {k: v for k, v in read_kv(path, ":").items() if isinstance(v, int)}


def read_debugfs(path):
    """'/sys/kernel/debug/zswap/NAME:VALUE' lines -> {NAME: VALUE}."""
    return {os.path.basename(k): v for k, v in read_kv(path, ":").items()}


def read_cpu_ticks(path):
    """utime + stime of /proc/PID/stat, in clock ticks."""
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # fields 14 and 15 of stat(5)
    except (OSError, IndexError, ValueError):
        return None


def delta(m, w, key):
    if key in m and key in w and isinstance(m[key], int) and isinstance(w[key], int):
        return m[key] - w[key]
    return None


def case_figures(d, clk_tck):
    meta = read_meta(os.path.join(d, "meta"))
    try:
        with open(os.path.join(d, "workload.json")) as f:
            wl = json.loads(f.read().strip() or "null")
    except (OSError, ValueError):
        wl = None
    snap = {}
    for tag in ("w", "m"):
        p = lambda ext: os.path.join(d, f"{tag}.{ext}")
        snap[tag] = {
            "vmstat": read_kv(p("vmstat")),
            "meminfo": read_status(p("meminfo")),
            "status": read_status(p("status")),
            "zswapd": read_kv(p("zswapd")),
            "debugfs": read_debugfs(p("debugfs")),
            "cgroup": read_kv(p("cgroup")),
            "dcpu": read_cpu_ticks(p("dstat")),
        }
    w, m = snap["w"], snap["m"]
    mode = meta.get("mode", "?")
    budget = meta.get("budget_mib")
    c = {
        "name": meta.get("name", "?"),
        "mode": mode,
        "compressor": meta.get("compressor") or None,
        "budget_mib": budget if isinstance(budget, int) else None,
        "status": str(meta.get("status", "?")),
        "exit_code": meta.get("rc"),
        "wall_s": meta.get("wall_s"),
        "workload": wl,
    }
    if "round" in meta:  # run.sh pairs
        c["round"] = meta["round"]
    if mode == "zswapd":
        c["limit_mib"] = meta.get("limit_mib")
        c["pool_allowance_q"] = meta.get("pool_q")
    if not m["vmstat"]:  # never reached the end of the window
        return c

    vm = {k: delta(m["vmstat"], w["vmstat"], k)
          for k in ("pswpin", "pswpout", "zswpin", "zswpout", "zswpwb", "swpin_zero", "swpout_zero",
                    "swap_ra", "swap_ra_hit")
          if k in m["vmstat"]}
    c["vmstat_delta"] = vm
    c["swap_io_bytes"] = ((vm.get("pswpin") or 0) + (vm.get("pswpout") or 0)) * PAGE
    cpu_proc = (wl["cpu_user_s"] + wl["cpu_sys_s"]) if wl else None
    c["cpu_process_s"] = cpu_proc
    c["cpu_daemon_s"] = None
    c["resident_kb"] = (wl or {}).get("rss_anon_kb") or m["status"].get("RssAnon")
    c["vm_swap_kb"] = m["status"].get("VmSwap")
    pool = None
    if mode == "zswapd":
        zw, zm = w["zswapd"], m["zswapd"]
        # every counter's change over the window (for the level ones, such as
        # stored_pages, the change in level); the levels at its end below
        c["zswapd_delta"] = {k: delta(zm, zw, k) for k in zm if delta(zm, zw, k) is not None}
        c["zswapd_end"] = zm
        c["pages_in"] = c["zswapd_delta"]["loads"]
        c["pages_out"] = c["zswapd_delta"]["stores"]
        if w["dcpu"] is not None and m["dcpu"] is not None:
            c["cpu_daemon_s"] = (m["dcpu"] - w["dcpu"]) / clk_tck
        pool = zm.get("pool_total_size")
        stored = zm.get("stored_pages") or 0
        if stored:
            c["compressed_ratio"] = zm.get("compressed_bytes", 0) / (stored * PAGE)
            c["pool_ratio"] = pool / (stored * PAGE)
    elif mode in ("swap", "zswap"):
        c["pages_in"] = sum(vm.get(k) or 0 for k in ("pswpin", "zswpin", "swpin_zero"))
        c["pages_out"] = sum(vm.get(k) or 0 for k in ("pswpout", "zswpout", "swpout_zero"))
        c["cgroup_end"] = m["cgroup"]
        if mode == "zswap":
            dfs = m["debugfs"]
            c["zswap_debugfs_end"] = dfs
            if "pool_total_size" in dfs:
                pool = dfs["pool_total_size"]
                stored = dfs.get("stored_pages") or 0
                if stored:
                    c["pool_ratio"] = pool / (stored * PAGE)
            elif "Zswap" in m["meminfo"]:  # no debugfs: /proc/meminfo, in kB
                pool = m["meminfo"]["Zswap"] * 1024
                if m["meminfo"].get("Zswapped"):
                    c["pool_ratio"] = m["meminfo"]["Zswap"] / m["meminfo"]["Zswapped"]
        else:
            pool = 0
    else:
        c["pages_in"] = 0
        pool = 0
    c["pool_bytes"] = pool
    c["cpu_total_s"] = None if cpu_proc is None else cpu_proc + (c["cpu_daemon_s"] or 0)
    if c["resident_kb"] is not None and pool is not None:
        c["resident_plus_pool_mib"] = c["resident_kb"] / 1024 + pool / MIB
    return c


def fmt_rate(v):
    if v is None:
        return "—"
    if v >= 1e6:
        return f"{v / 1e6:.2f} M"
    if v >= 1e3:
        return f"{v / 1e3:.1f} k"
    return f"{v:.0f}"


def fmt(v, spec=".1f"):
    return "—" if v is None else format(v, spec)


def fmt_us(v):
    if v is None:
        return "—"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def md_table(cases, size):
    hdr = ["case", "budget", "accesses/s", "p50 µs", "p99 µs", "pages in", "faults/access", "swap I/O MiB",
           "CPU s proc + daemon", "pool/orig", "comp/orig", "resident MiB", "pool MiB", "resident+pool MiB",
           "status"]
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cases:
        wl = c.get("workload") or {}
        lat = wl.get("lat_us") or {}
        ok = c["status"] == "ok"
        b = c["budget_mib"]
        budget = "—" if b is None else f"{round(100 * b / size)}% ({b} MiB)"
        if c["mode"] == "zswapd":
            budget += f", limit {c.get('limit_mib')} MiB"
        cpu = "—"
        if c.get("cpu_process_s") is not None:
            cpu = f"{c['cpu_process_s']:.1f}"
            if c.get("cpu_daemon_s") is not None:
                cpu += f" + {c['cpu_daemon_s']:.1f}"
        status = c["status"]
        if ok and c.get("resident_plus_pool_mib") is not None and b is not None and \
                c["resident_plus_pool_mib"] > b * 1.02:
            status += " (resident+pool > budget)"
        rows.append("| " + " | ".join([
            c["name"], budget,
            fmt_rate(wl.get("accesses_per_s")) if ok else "—",
            fmt_us(lat.get("p50")) if ok else "—",
            fmt_us(lat.get("p99")) if ok else "—",
            fmt(c.get("pages_in"), "d") if ok else "—",
            fmt(c["pages_in"] / wl["accesses"], ".3f")
            if ok and c.get("pages_in") is not None and wl.get("accesses") else "—",
            fmt(c["swap_io_bytes"] / MIB if c.get("swap_io_bytes") is not None else None, ".0f"),
            cpu if ok else "—",
            fmt(c.get("pool_ratio"), ".3f"),
            fmt(c.get("compressed_ratio"), ".3f"),
            fmt(c["resident_kb"] / 1024 if c.get("resident_kb") is not None else None, ".0f"),
            fmt(c["pool_bytes"] / MIB if c.get("pool_bytes") is not None else None, ".0f"),
            fmt(c.get("resident_plus_pool_mib"), ".0f"),
            status,
        ]) + " |")
    return "\n".join(rows)


NOTES = """\
How to read it:
- Same workload, same budget: S MiB of zero, same-filled, text, struct and random pages;
  20% of the pages (scattered) take 80% of the accesses; half the accesses are writes;
  4 KiB pages (MADV_NOHUGEPAGE). Figures are over the measured window only; one run
  each, not a median: repeat runs on this VM vary by tens of percent.
- swap / zswap lzo: the process runs in a cgroup v1 memory cgroup with
  memory.limit_in_bytes = budget, swap file of 2×S. cgroup v1 does not charge the kernel
  zswap pool to the cgroup: kernel zswap uses the budget *plus* its pool (see the pool and
  resident+pool columns). Kernel zswap runs with shrinker_enabled=Y (writeback of its
  coldest entries under cgroup pressure): with the default N it is OOM-killed at both
  budgets here.
- zswapd: the process is in no cgroup and `zswapctl {limit_cmd}` keeps its RssAnon at or
  under limit = budget − pool allowance (the pool's size estimated from micro's pool
  bytes/page for that compressor in this run), so that resident + zswapd's pool
  (pool_total_size) ≈ budget. "(resident+pool > budget)" marks a run where that sum
  came out more than 2% above the budget. "zswapd lzo, pool outside" instead has
  limit = budget and its pool on top, kernel zswap's accounting: the same resident
  memory as the kernel cases, for comparing faults per access; and, as the kernel
  (which stores pages that do not compress as they are when it can write them back,
  and it can here: there is a swap file), store_incompressible = yes.
- pages in: kernel pswpin + zswpin + swpin_zero deltas from /proc/vmstat (pswpin includes
  readahead); zswapd: its `loads`. faults/access: pages in / accesses in the window
  (zswapd's target: at most 1.2x the kernel's). swap I/O: (pswpin + pswpout) × 4 KiB.
- CPU: the workload's user+sys over the window (the kernel's reclaim, compression and
  swap-in run there) + zswapd's utime+stime.
- pool/orig: pool_total_size / (stored_pages × 4 KiB) at the end of the window (kernel:
  /sys/kernel/debug/zswap; Linux 6.18 keeps zero-filled pages out of zswap altogether and
  stores incompressible pages raw, while zswapd counts same-filled pages, stored as one
  word, in stored_pages and leaves pages that compress badly resident, except in
  "pool outside", where it stores them as they are). comp/orig:
  zswapd's compressed_bytes / (stored_pages × 4 KiB) (the kernel does not report its
  compressed bytes). resident: the workload's RssAnon at the end of the window.
- After the window every page is read back and checked against what the workload wrote
  (the budget is lifted first, so that this takes seconds, not minutes); a lost write or
  a corrupted page fails the run (status CORRUPT, exit 1).
- OOM-killed: the kernel killed the workload (kernel zswap under small cgroup v1 budgets
  does, as seen on both machine kinds these benchmarks ran on); reported, not a failure
  of the benchmark."""


def plot(cases, size, out_png):
    """Clustered bars of accesses/s per case, one bar per budget, log scale;
    the all-in-RAM rate as a line across."""
    gp = shutil.which("gnuplot")
    if not gp:
        return "no gnuplot"
    budgets = sorted({c["budget_mib"] for c in cases if c["budget_mib"] is not None}, reverse=True)
    names = []
    for c in cases:
        if c["budget_mib"] is not None and c["name"] not in names:
            names.append(c["name"])
    ram = next((c for c in cases if c["mode"] == "ram" and c["status"] == "ok"), None)
    ram_rate = ram["workload"]["accesses_per_s"] if ram else None
    labels = []
    with tempfile.TemporaryDirectory() as td:
        dat = os.path.join(td, "compare.dat")
        with open(dat, "w") as f:
            for i, n in enumerate(names):
                row = [f'"{n}"']
                for j, b in enumerate(budgets):
                    c = next((c for c in cases if c["name"] == n and c["budget_mib"] == b), None)
                    # where gnuplot puts bar j of cluster i (gap 1)
                    x = i + (j - (len(budgets) - 1) / 2) / (len(budgets) + 1)
                    if c and c["status"] == "ok" and c.get("workload"):
                        v = c["workload"]["accesses_per_s"]
                        row.append(f"{v:.0f}")
                        labels.append(f"set label '{fmt_rate(v)}' at {x:.3f},{v * 1.3:.0f} center")
                    else:
                        row.append("?")
                        text = c["status"].split(";")[0] if c else "not run"
                        labels.append(f"set label '{text}' at {x:.3f},1300 left rotate by 90 tc rgb 'red'")
                f.write(" ".join(row) + "\n")
        cols = ", ".join(
            f"'{dat}' using {i + 2}{':xtic(1)' if i == 0 else ''} title '{round(100 * b / size)}% budget ({b} MiB)'"
            for i, b in enumerate(budgets))
        ram_line = f", {ram_rate:.0f} with lines dt 2 lw 2 lc rgb 'black' title 'all in RAM ({fmt_rate(ram_rate)})'" if ram_rate else ""
        nl = "\n"
        script = f"""
set terminal pngcairo size 1000,560 noenhanced font ',11'
set output '{out_png}'
set datafile missing '?'
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xrange [-0.6:{len(names) - 0.4}]
set logscale y
set yrange [1000:1e8]
set format y '%.0s%c'
set ylabel 'accesses/s (log scale)'
set grid ytics
set key top right
set title 'zswapd vs kernel swap / zswap: {size} MiB hot/cold workload, accesses/s at two memory budgets'
{nl.join(labels)}
plot {cols}{ram_line}
"""
        r = subprocess.run([gp], input=script, text=True, capture_output=True)
        if r.returncode != 0:
            return "gnuplot: " + r.stderr.strip()
    return None


# ---------------------------------------------------------------- writeback

WB_NOTES = """\
How to read it:
- One total memory budget B = 25% of S ({budget} MiB) for resident + pool; the pool is
  capped at P = B/4 ({pool} MiB); behind it a swap file (2×S) takes what does not fit.
  Same workload as compare (hot/cold 20/80, half writes, every page verified at the
  end). Figures are over the measured window only ({seconds:g} s after {warmup:g} s of
  warm-up); one run each, not a median. The machine is shared with other test runs:
  expect tens of percent of noise in the rates and latencies, less in the byte counts.
- swap only: cgroup v1 memory.limit_in_bytes = B, zswap off.
- zswap lzo + swap: cgroup limit = B − P, zswap max_pool_percent = {pct}% of MemTotal
  ({memtotal} MiB) = {kcap} MiB. cgroup v1 does not charge the zswap pool to the cgroup,
  so that global cap is the only thing bounding the pool, and it can be set only in whole
  percent of MemTotal (at least 1){capnote}.
- zswapd lzo + swap file: max_pool_bytes = P, swap_file (O_DIRECT, io_uring) of 2×S,
  `zswapctl limit` = B − P on the workload (no cgroup).
- faults served: kernel pswpin + zswpin deltas (/proc/vmstat; pswpin counts readahead
  pages too); zswapd: `loads`.
- swap read / written: kernel pswpin / pswpout × 4 KiB (pswpout counts zswap writebacks
  as well as direct swap-outs; whole 4 KiB pages either way); zswapd: swap_read_bytes /
  swap_write_bytes (written: 4 KiB blocks of packed compressed data, a block for each
  page that does not compress; read: the sectors (direct-I/O units) of the object a fault wants,
  whole blocks for readahead). swap I/O = read + written.
- written back: zswap debugfs written_back_pages (kernel zswpwb if no debugfs) / zswapd
  written_back_pages: pages moved from the pool to the swap file during the window.
- readahead hits: kernel swap_ra_hit (of swap_ra pages read ahead); zswapd readahead_hits
  (of readahead_pages).
- resident+pool: the workload's RssAnon at the end of the window + the pool
  (pool_total_size; kernel: debugfs, or meminfo Zswap) — compare it with B.
- I/O ratio: zswapd swap I/O bytes / kernel zswap swap I/O bytes (< 1: zswapd moved fewer
  bytes)."""


def wb_figures(c):
    """The writeback columns of one case, from case_figures' output."""
    vm = c.get("vmstat_delta") or {}
    f = {"runtime_s": None, "accesses_per_s": None, "p99_us": None, "faults": None,
         "swap_read_bytes": None, "swap_write_bytes": None, "swap_io_bytes": None,
         "written_back_pages": None, "readahead_hits": None, "readahead_pages": None,
         "resident_plus_pool_mib": c.get("resident_plus_pool_mib")}
    wl = c.get("workload") or {}
    if wl:
        f["runtime_s"] = wl.get("elapsed_s")
        f["accesses_per_s"] = wl.get("accesses_per_s")
        f["p99_us"] = (wl.get("lat_us") or {}).get("p99")
    if not vm and c["mode"] != "zswapd":
        return f
    if c["mode"] == "zswapd":
        d = c.get("zswapd_delta") or {}
        f["faults"] = d.get("loads")
        f["swap_read_bytes"] = d.get("swap_read_bytes")
        f["swap_write_bytes"] = d.get("swap_write_bytes")
        f["written_back_pages"] = d.get("written_back_pages")
        f["readahead_hits"] = d.get("readahead_hits")
        f["readahead_pages"] = d.get("readahead_pages")
    else:
        f["faults"] = (vm.get("pswpin") or 0) + (vm.get("zswpin") or 0)
        f["swap_read_bytes"] = (vm.get("pswpin") or 0) * PAGE
        f["swap_write_bytes"] = (vm.get("pswpout") or 0) * PAGE
        if c["mode"] == "zswap":
            wbp = None
            if c.get("_wb_debugfs_delta") is not None:
                wbp = c["_wb_debugfs_delta"]
            if wbp is None:
                wbp = vm.get("zswpwb")
            f["written_back_pages"] = wbp
        else:
            f["written_back_pages"] = 0
        f["readahead_hits"] = vm.get("swap_ra_hit")
        f["readahead_pages"] = vm.get("swap_ra")
    if f["swap_read_bytes"] is not None and f["swap_write_bytes"] is not None:
        f["swap_io_bytes"] = f["swap_read_bytes"] + f["swap_write_bytes"]
    return f


def wb_table(cases, budget):
    hdr = ["case", "limit MiB", "window s", "accesses/s", "p99 µs", "faults served",
           "swap read MiB", "swap written MiB", "swap I/O MiB", "written back pages",
           "readahead hits", "resident+pool MiB", "status"]
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cases:
        f = c["writeback"]
        ok = c["status"] == "ok"
        mib = lambda v: fmt(v / MIB if v is not None else None, ".1f")
        ra = fmt(f["readahead_hits"], "d")
        if f["readahead_hits"] is not None and f["readahead_pages"]:
            ra += f" / {f['readahead_pages']}"
        status = c["status"]
        if ok and f["resident_plus_pool_mib"] is not None and f["resident_plus_pool_mib"] > budget * 1.02:
            status += " (resident+pool > B)"
        rows.append("| " + " | ".join([
            c["name"], fmt(c.get("limit_mib"), "d"),
            fmt(f["runtime_s"], ".2f") if ok else "—",
            fmt_rate(f["accesses_per_s"]) if ok else "—",
            fmt_us(f["p99_us"]) if ok else "—",
            fmt(f["faults"], "d"),
            mib(f["swap_read_bytes"]), mib(f["swap_write_bytes"]), mib(f["swap_io_bytes"]),
            fmt(f["written_back_pages"], "d"), ra,
            fmt(f["resident_plus_pool_mib"], ".0f"),
            status,
        ]) + " |")
    return "\n".join(rows)


def ratio_text(io, ratio):
    if ratio is not None:
        return f"**{ratio:.3f}** ({io['zswapd'] / MIB:.1f} MiB / {io['zswap'] / MIB:.1f} MiB)"
    if io.get("zswapd") is not None and io.get("zswap") == 0:
        return (f"undefined: kernel zswap did no swap I/O in the window (0 bytes; its pool held "
                f"everything), zswapd moved {io['zswapd'] / MIB:.1f} MiB")
    return "— (the zswapd or the kernel zswap case did not finish)"


def writeback_main(a, cases):
    for c, d in zip(cases, sorted(os.listdir(a.cases))):
        meta = read_meta(os.path.join(a.cases, d, "meta"))
        c["limit_mib"] = meta.get("limit_mib")
        if c["mode"] == "zswap":
            w = read_debugfs(os.path.join(a.cases, d, "w.debugfs"))
            m = read_debugfs(os.path.join(a.cases, d, "m.debugfs"))
            c["_wb_debugfs_delta"] = delta(m, w, "written_back_pages")
        c["writeback"] = wb_figures(c)
        c.pop("_wb_debugfs_delta", None)
    io = {c["mode"]: c["writeback"]["swap_io_bytes"] for c in cases
          if c["status"] == "ok" and c["writeback"]["swap_io_bytes"] is not None}
    ratio = None
    if io.get("zswapd") is not None and io.get("zswap"):
        ratio = io["zswapd"] / io["zswap"]
    kcap = a.memtotal * a.zswap_pool_pct // 100
    capnote = (f": here {kcap} MiB, above P, so the kernel pool may grow past P"
               if kcap > a.pool_cap else "")
    notes = WB_NOTES.format(budget=a.budget, pool=a.pool_cap, seconds=a.seconds, warmup=a.warmup,
                            pct=a.zswap_pool_pct, memtotal=a.memtotal, kcap=kcap, capnote=capnote)
    doc = {
        "benchmark": "writeback",
        "host": a.host, "date": a.date, "command": a.command, "loadavg_at_start": a.load,
        "params": {"size_mib": a.size, "seconds": a.seconds, "warmup_s": a.warmup,
                   "pattern": "hotcold", "hot_pct": 20, "hot_access_pct": 80, "write_pct": 50,
                   "budget_mib": a.budget, "pool_cap_mib": a.pool_cap,
                   "zswap_max_pool_percent": a.zswap_pool_pct, "zswap_pool_cap_mib": kcap,
                   "memtotal_mib": a.memtotal, "compressor": "lzo"},
        "io_ratio_zswapd_over_zswap": ratio,
        "notes": notes,
        "cases": cases,
    }
    if a.kernel_skip:
        doc["kernel_cases_skipped"] = a.kernel_skip
    write_json(a.out, "writeback", doc)
    md = [f"## Writeback: {a.size} MiB, budget B = {a.budget} MiB (resident + pool), "
          f"pool cap P = {a.pool_cap} MiB, {a.warmup:g} s warm-up + {a.seconds:g} s measured", "",
          wb_table(cases, a.budget), "",
          "Swap I/O ratio, zswapd / kernel zswap: " + ratio_text(io, ratio), ""]
    if a.kernel_skip:
        md += [f"Kernel cases not run: {a.kernel_skip}.", ""]
    md += [notes, "", f"{a.host}; load average at start {a.load}; {a.date}.",
           f"Command: `{a.command}`", ""]
    write_md(a.out, "writeback", md)
    return 0


# ---------------------------------------------------------------- workers

W_NOTES = """\
How to read it:
- N jobs of {size} MiB each (tests/bench/workload.c --accesses {accesses}: fill the
  memory with the page mix, then {accesses} accesses, 20% of pages taking 80%, half
  writes, then check every page) start together under one budget B = {budget} MiB, like
  `make -jN` on a small machine. runtime: from the first start to the last exit.
  One run each, not a median; 2 vCPUs, so in RAM the runtime grows with N as well.
- swap / zswap lzo: the N jobs in one cgroup v1 memory cgroup, memory.limit_in_bytes =
  B, swap file; zswap's pool is not charged to the cgroup (cgroup v1), so kernel zswap
  holds B plus its pool (see peak resident+pool).
- zswapd lzo: default_limit_percent = L / (N×W), L = B − pool allowance (from micro's
  pool bytes/page), so each job keeps its share of the budget; no limit while N×W ≤ B.
  Per-process limits, where the cgroup has one limit for the group.
- zswapd lzo, one budget: `zswapctl limit --all L` instead, one budget for the N jobs
  as the cgroup has one: the coldest job (fewest pages faulted back a minute per
  resident page) gives first.
- pages in: kernel pswpin + zswpin (+ swpin_zero) deltas over the whole case; zswapd
  loads. swap I/O: kernel (pswpin + pswpout) × 4 KiB; zswapd swap_read_bytes +
  swap_write_bytes (0: no swap file in this experiment).
- mean resident+pool: the mean of those samples over the case (memory held
  on average, where the peak is the fill of N fresh jobs).
- peak resident+pool: the largest sample, 4 a second, of resident (cgroup
  usage_in_bytes for the kernel, the jobs' RssAnon summed otherwise) plus the pool
  (meminfo Zswap / zswapd pool_total_size); for the kernel at least the cgroup's
  max_usage_in_bytes plus the largest pool sample (a short case ends between samples).
- OOM-killed k of N: the kernel's OOM killer killed k jobs (cgroup v1 with kernel
  zswap does this under a tight budget); reported, not a benchmark failure."""


def workers_case(d, clk_tck):
    meta = read_meta(os.path.join(d, "meta"))
    n = meta.get("workers", 0)
    v0, v1 = read_kv(os.path.join(d, "0.vmstat")), read_kv(os.path.join(d, "1.vmstat"))
    z0, z1 = read_kv(os.path.join(d, "0.zswapd")), read_kv(os.path.join(d, "1.zswapd"))
    c0, c1 = read_cpu_ticks(os.path.join(d, "0.dstat")), read_cpu_ticks(os.path.join(d, "1.dstat"))
    jobs = []
    for i in range(1, n + 1):
        try:
            with open(os.path.join(d, f"w{i}.json")) as f:
                jobs.append(json.loads(f.read().strip() or "null"))
        except (OSError, ValueError):
            jobs.append(None)
    mode = meta.get("mode", "?")
    c = {"name": meta.get("name", "?"), "mode": mode, "workers": n,
         "runtime_s": meta.get("runtime_s"), "status": str(meta.get("status", "?")),
         "peak_resident_plus_pool_mib": (meta.get("peak_kb") or 0) / 1024,
         "mean_resident_plus_pool_mib": (meta.get("mean_kb") or 0) / 1024 or None,
         "limit_percent": meta.get("limit_percent") or None, "pool_q": meta.get("pool_q") or None,
         "group_budget_mib": meta.get("group_budget_mib") or None,
         "jobs_done": sum(1 for j in jobs if j and j.get("ok"))}
    try:
        c["runtime_s"] = float(c["runtime_s"])
    except (TypeError, ValueError):
        c["runtime_s"] = None
    vm = {k: delta(v1, v0, k) for k in ("pswpin", "pswpout", "zswpin", "zswpout", "swpin_zero")
          if k in v1}
    c["vmstat_delta"] = vm
    if mode == "zswapd":
        zd = {k: delta(z1, z0, k) for k in z1 if delta(z1, z0, k) is not None}
        c["zswapd_delta"] = zd
        c["pages_in"] = zd.get("loads")
        c["swap_io_bytes"] = (zd.get("swap_read_bytes") or 0) + (zd.get("swap_write_bytes") or 0)
        c["cpu_daemon_s"] = (c1 - c0) / clk_tck if c0 is not None and c1 is not None else None
    elif mode in ("swap", "zswap"):
        c["pages_in"] = sum(vm.get(k) or 0 for k in ("pswpin", "zswpin", "swpin_zero"))
        c["swap_io_bytes"] = ((vm.get("pswpin") or 0) + (vm.get("pswpout") or 0)) * PAGE
    else:
        c["pages_in"] = 0
        c["swap_io_bytes"] = 0
    return c


def workers_table(cases, size, budget):
    hdr = ["N", "N×W MiB", "case", "runtime s", "pages in", "swap I/O MiB", "zswapd CPU s",
           "mean resident+pool MiB", "peak resident+pool MiB", "status"]
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cases:
        ok = c["status"] == "ok"
        total = c["workers"] * size
        name = c["name"]
        if c.get("limit_percent"):
            name += f" (limit {c['limit_percent']}%)"
        if c.get("group_budget_mib"):
            name += f" (--all {c['group_budget_mib']}M)"
        rows.append("| " + " | ".join([
            str(c["workers"]), f"{total} ({total / budget:.1f}×B)", name,
            fmt(c["runtime_s"], ".1f") if ok else "—",
            fmt(c.get("pages_in"), "d"),
            fmt(c["swap_io_bytes"] / MIB if c.get("swap_io_bytes") is not None else None, ".0f"),
            fmt(c.get("cpu_daemon_s"), ".1f"),
            fmt(c.get("mean_resident_plus_pool_mib"), ".0f"),
            fmt(c.get("peak_resident_plus_pool_mib"), ".0f"),
            c["status"],
        ]) + " |")
    return "\n".join(rows)


def workers_plot(cases, size, budget, out_png):
    """Runtime against N, one line per contender, log y."""
    gp = shutil.which("gnuplot")
    if not gp:
        return "no gnuplot"
    names = []
    for c in cases:
        if c["name"] not in names:
            names.append(c["name"])
    with tempfile.TemporaryDirectory() as td:
        plots = []
        for i, n in enumerate(names):
            dat = os.path.join(td, f"{i}.dat")
            with open(dat, "w") as f:
                for c in cases:
                    if c["name"] == n and c["status"] == "ok" and c["runtime_s"]:
                        f.write(f"{c['workers']} {c['runtime_s']:.3f}\n")
            plots.append(f"'{dat}' using 1:2 with linespoints lw 2 pt 7 title '{n}'")
        ns = sorted({c["workers"] for c in cases})
        xt = ", ".join(f"'{n} ({n * size / budget:.1f}×)' {n}" for n in ns)
        script = f"""
set terminal pngcairo size 900,520 noenhanced font ',11'
set output '{out_png}'
set logscale y
set grid
set key top left
set xlabel 'N concurrent jobs of {size} MiB (memory demand / budget)'
set ylabel 'runtime, s (log scale)'
set xtics ({xt})
set xrange [{ns[0] - 1}:{ns[-1] + 2}]
set title 'N jobs under one {budget} MiB budget: time until the last one is done'
plot {", ".join(plots)}
"""
        r = subprocess.run([gp], input=script, text=True, capture_output=True)
        if r.returncode != 0:
            return "gnuplot: " + r.stderr.strip()
    return None


def workers_main(a):
    clk_tck = os.sysconf("SC_CLK_TCK")
    cases = [workers_case(os.path.join(a.cases, d), clk_tck) for d in sorted(os.listdir(a.cases))]
    notes = W_NOTES.format(size=a.size, budget=a.budget, accesses=a.accesses)
    doc = {"benchmark": "workers", "host": a.host, "date": a.date, "command": a.command,
           "loadavg_at_start": a.load,
           "params": {"job_mib": a.size, "budget_mib": a.budget, "accesses_per_job": a.accesses,
                      "pattern": "hotcold", "hot_pct": 20, "hot_access_pct": 80, "write_pct": 50},
           "notes": notes, "cases": cases}
    write_json(a.out, "workers", doc)
    err = workers_plot(cases, a.size, a.budget, os.path.join(a.out, "workers.png"))
    md = [f"## N concurrent jobs of {a.size} MiB under one {a.budget} MiB budget", "",
          workers_table(cases, a.size, a.budget), "", notes, "",
          f"{a.host}; load average at start {a.load}; {a.date}.", f"Command: `{a.command}`", ""]
    if err:
        md += [f"(no workers.png: {err})", ""]
    write_md(a.out, "workers", md)
    return 0


# ---------------------------------------------------------------- redis

R_NOTES = """\
How to read it:
- redis-server ({keys} keys of 1000-byte values from tests/bench/redis_data.py, about
  2×B of redis memory; lzo packs them to a little over half), then, over a unix
  socket, 8 clients: {gets} GETs and then {sets} SETs (-d 1000) of keys drawn uniformly
  from the whole dataset (redis-benchmark -r): with half the dataset out of memory,
  about every other request faults. Rates and latencies are redis-benchmark's
  (--csv); the counters are over the GET + SET window. One run each. At the end every
  key is read back and checked (status CORRUPT on any wrong or missing value).
- swap / zswap lzo: redis-server in a cgroup v1 memory cgroup, limit B = {budget} MiB,
  swap file; kernel zswap's pool is not charged to the cgroup (cgroup v1) and its cap
  is lifted above the dataset, so kernel zswap keeps B plus a pool that holds the rest.
- zswapd lzo: on the kernel zswap case's footing: `zswapctl limit` B on redis-server,
  the pool not capped below the dataset (resident B plus a pool that holds the rest).
- zswapd lzo + swap file: pool capped at P = B/4, swap file behind it, `zswapctl
  limit` B − P: resident + pool stay within B, the rest goes to disk.
- pages in: kernel pswpin + zswpin (+ swpin_zero); zswapd loads. swap I/O: kernel
  (pswpin + pswpout) × 4 KiB; zswapd swap_read_bytes + swap_write_bytes.
- resident: redis-server's RssAnon after the SETs; pool: kernel meminfo Zswap /
  zswapd pool_total_size."""


def read_csv_row(path, test):
    """redis-benchmark --csv: "GET","rps","avg","min","p50","p95","p99","max"."""
    try:
        with open(path) as f:
            for line in f:
                cols = [x.strip().strip('"') for x in line.strip().split(",")]
                if cols and cols[0] == test and len(cols) >= 8:
                    return {"rps": float(cols[1]), "avg_ms": float(cols[2]), "p50_ms": float(cols[4]),
                            "p95_ms": float(cols[5]), "p99_ms": float(cols[6]), "max_ms": float(cols[7])}
    except (OSError, ValueError):
        pass
    return None


def server_case(d, clk_tck):
    """What a server case (redis, memcached) has beyond case_figures, and its meta."""
    c = case_figures(d, clk_tck)
    meta = read_meta(os.path.join(d, "meta"))
    c["pool_cap_mib"] = meta.get("pool_cap_mib") or None
    if c["mode"] == "zswapd" and c.get("zswapd_delta"):
        zd = c["zswapd_delta"]
        c["swap_io_bytes"] = (zd.get("swap_read_bytes") or 0) + (zd.get("swap_write_bytes") or 0)
    c.pop("workload", None)
    return c, meta


def redis_case(d, clk_tck):
    c, meta = server_case(d, clk_tck)  # snapshots w (before GET) and m (after SET)
    c["populate_s"] = meta.get("populate_s")
    c["get"] = read_csv_row(os.path.join(d, "get.csv"), "GET")
    c["set"] = read_csv_row(os.path.join(d, "set.csv"), "SET")
    info = read_kv(os.path.join(d, "info.txt"), ":")
    c["used_memory"] = info.get("used_memory")
    return c


def server_limit(c):
    """A server case's budget as run.sh server_start set it (redis, memcached)."""
    if c["mode"] in ("swap", "zswap"):
        return f"cgroup {c['budget_mib']} MiB"
    if c["mode"] == "zswapd" and c.get("pool_cap_mib"):
        return f"{c.get('limit_mib')} MiB + pool ≤ {c.get('pool_cap_mib')} MiB"
    if c["mode"] == "zswapd":
        return f"{c.get('limit_mib')} MiB"
    return "—"


def server_tail(c):
    """The last cells of a server case's row: pages in, swap I/O MiB, CPU s zswapd,
    resident MiB, pool MiB, status."""
    return [
        fmt(c.get("pages_in"), "d"),
        fmt(c["swap_io_bytes"] / MIB if c.get("swap_io_bytes") is not None else None, ".0f"),
        fmt(c.get("cpu_daemon_s"), ".1f"),
        fmt(c["resident_kb"] / 1024 if c.get("resident_kb") is not None else None, ".0f"),
        fmt(c["pool_bytes"] / MIB if c.get("pool_bytes") is not None else None, ".0f"),
        c["status"],
    ]


def redis_table(cases):
    hdr = ["case", "limit", "populate s", "GET rps", "GET p50 ms", "GET p99 ms", "SET rps",
           "SET p99 ms", "pages in", "swap I/O MiB", "CPU s zswapd", "resident MiB", "pool MiB",
           "status"]
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cases:
        g, s = c.get("get") or {}, c.get("set") or {}
        ok = c["status"] == "ok"
        lim = server_limit(c)
        rows.append("| " + " | ".join([
            c["name"], lim, fmt(c.get("populate_s"), ".1f") if isinstance(c.get("populate_s"), (int, float)) else str(c.get("populate_s") or "—"),
            fmt_rate(g.get("rps")) if ok else "—", fmt(g.get("p50_ms"), ".3f") if ok else "—",
            fmt(g.get("p99_ms"), ".3f") if ok else "—",
            fmt_rate(s.get("rps")) if ok else "—", fmt(s.get("p99_ms"), ".3f") if ok else "—",
        ] + server_tail(c)) + " |")
    return "\n".join(rows)


def redis_main(a):
    clk_tck = os.sysconf("SC_CLK_TCK")
    cases = [redis_case(os.path.join(a.cases, d), clk_tck) for d in sorted(os.listdir(a.cases))]
    notes = R_NOTES.format(keys=a.keys, gets=a.gets, sets=a.sets, budget=a.budget)
    doc = {"benchmark": "redis", "host": a.host, "date": a.date, "command": a.command,
           "loadavg_at_start": a.load,
           "params": {"budget_mib": a.budget, "keys": a.keys, "value_bytes": 1000, "gets": a.gets,
                      "sets": a.sets, "clients": 8},
           "notes": notes, "cases": cases}
    write_json(a.out, "redis", doc)
    md = [f"## redis-server, dataset about twice a {a.budget} MiB budget", "",
          redis_table(cases), "", notes, "",
          f"{a.host}; load average at start {a.load}; {a.date}.", f"Command: `{a.command}`", ""]
    write_md(a.out, "redis", md)
    return 0


# ---------------------------------------------------------------- memcached

MC_NOTES = """\
How to read it:
- memcached 1.6 (-t 2, -m above the dataset: it evicts nothing) holding {keys} keys of
  1000-byte values from tests/bench/mcload.c (about 2×B of memcached memory; lzo packs
  them to a little over half), then {conns} connections over a unix socket, each one
  request at a time: GETs of keys drawn uniformly from the whole dataset, one request in
  ten a SET of a key to its own value; {warmup:g} s of warm-up, then {seconds:g} s
  measured. Every value a GET returns is checked, and every key at the end (status
  CORRUPT on any wrong or missing value). One run each.
- ops/s: GETs and SETs a second; GET latencies are the client's, request written to
  reply read.
- swap / zswap lzo, zswapd lzo, zswapd lzo + swap file: as in the redis table.
- pages in: kernel pswpin + zswpin (+ swpin_zero); zswapd loads. swap I/O: kernel
  (pswpin + pswpout) × 4 KiB; zswapd swap_read_bytes + swap_write_bytes.
- resident: memcached's RssAnon at the end of the window; pool: kernel meminfo Zswap /
  zswapd pool_total_size."""


def memcached_case(d, clk_tck):
    c, meta = server_case(d, clk_tck)  # snapshots w (after the warm-up) and m (after the window)
    c["fill_s"] = meta.get("fill_s")
    try:
        with open(os.path.join(d, "mc.json")) as f:
            c["client"] = json.loads(f.read().strip() or "null")
    except (OSError, ValueError):
        c["client"] = None
    return c


def memcached_table(cases):
    hdr = ["case", "limit", "fill s", "ops/s", "GET p50 µs", "GET p99 µs", "GET p99.9 µs",
           "pages in", "swap I/O MiB", "CPU s zswapd", "resident MiB", "pool MiB", "status"]
    rows = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for c in cases:
        m = c.get("client") or {}
        ok = c["status"] == "ok" and m
        lim = server_limit(c)
        fill = c.get("fill_s")
        rows.append("| " + " | ".join([
            c["name"], lim, fmt(fill, ".1f") if isinstance(fill, (int, float)) else str(fill or "—"),
            fmt_rate(m.get("ops_per_s")) if ok else "—",
            fmt(m.get("get_p50_us"), ".0f") if ok else "—",
            fmt(m.get("get_p99_us"), ".0f") if ok else "—",
            fmt(m.get("get_p999_us"), ".0f") if ok else "—",
        ] + server_tail(c)) + " |")
    return "\n".join(rows)


def memcached_main(a):
    clk_tck = os.sysconf("SC_CLK_TCK")
    cases = [memcached_case(os.path.join(a.cases, d), clk_tck) for d in sorted(os.listdir(a.cases))]
    conns = next((c["client"]["conns"] for c in cases if c.get("client")), 4)
    notes = MC_NOTES.format(keys=a.keys, conns=conns, warmup=a.warmup, seconds=a.seconds)
    doc = {"benchmark": "memcached", "host": a.host, "date": a.date, "command": a.command,
           "loadavg_at_start": a.load,
           "params": {"budget_mib": a.budget, "keys": a.keys, "value_bytes": 1000, "conns": conns,
                      "set_pct": 10, "warmup_s": a.warmup, "seconds": a.seconds},
           "notes": notes, "cases": cases}
    write_json(a.out, "memcached", doc)
    md = [f"## memcached, dataset about twice a {a.budget} MiB budget", "",
          memcached_table(cases), "", notes, "",
          f"{a.host}; load average at start {a.load}; {a.date}.", f"Command: `{a.command}`", ""]
    write_md(a.out, "memcached", md)
    return 0


P_NOTES = """\
How to read it:
- Each round runs kernel zswap lzo and then zswapd lzo with its pool outside the budget,
  back to back, at each budget: the two cases of a round met the same moment of this VM.
  The cases are compare's (see compare.md): kernel zswap in a cgroup v1 memory cgroup of
  the budget with a swap file and shrinker_enabled=Y; zswapd with `zswapctl limit` = the
  budget, its pool on top as the kernel's is, store_incompressible = yes.
- ratio: zswapd's accesses/s over the kernel's, per round; "medians" is the ratio of the
  two medians. faults/access as in compare (zswapd's target: at most 1.2x the kernel's).
- A run that did not finish ok has no figures and is left out of the medians."""


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def pair_figures(c):
    """accesses/s and faults/access of one case, or (None, None) if it did not finish."""
    wl = c.get("workload") or {}
    if c["status"] != "ok" or not wl.get("accesses"):
        return None, None
    fpa = c["pages_in"] / wl["accesses"] if c.get("pages_in") is not None else None
    return wl.get("accesses_per_s"), fpa


def pairs_main(a, cases):
    rounds = {}
    for c in cases:
        key = (c["budget_mib"], c.get("round"))
        rounds.setdefault(key, {})["kernel" if c["mode"] == "zswap" else "zswapd"] = c
    budgets = sorted({b for b, _ in rounds}, reverse=True)
    summary, md = [], [f"## Kernel zswap and zswapd, round by round: {a.size} MiB, "
                       f"{a.warmup:g} s warm-up + {a.seconds:g} s measured", ""]
    for b in budgets:
        pct = round(100 * b / a.size)
        md += [f"Budget {pct}% ({b} MiB):", "",
               "| round | kernel zswap accesses/s | zswapd accesses/s | ratio "
               "| kernel faults/access | zswapd faults/access | ratio |",
               "|---|---|---|---|---|---|---|"]
        col = {"kernel": ([], []), "zswapd": ([], [])}
        ratios, fratios = [], []
        for (bb, r) in sorted(k for k in rounds if k[0] == b):
            fig = {}
            for who in ("kernel", "zswapd"):
                c = rounds[(bb, r)].get(who)
                fig[who] = pair_figures(c) if c else (None, None)
                if fig[who][0] is not None:
                    col[who][0].append(fig[who][0])
                if fig[who][1] is not None:
                    col[who][1].append(fig[who][1])
            (ka, kf), (za, zf) = fig["kernel"], fig["zswapd"]
            ra = za / ka if ka and za else None
            rf = zf / kf if kf and zf else None
            if ra is not None:
                ratios.append(ra)
            if rf is not None:
                fratios.append(rf)
            status = "; ".join(f"{who} {rounds[(bb, r)][who]['status']}"
                               for who in ("kernel", "zswapd")
                               if who in rounds[(bb, r)] and rounds[(bb, r)][who]["status"] != "ok")
            md.append("| " + " | ".join([
                str(r) + (f" ({status})" if status else ""), fmt_rate(ka), fmt_rate(za),
                fmt(ra, ".2f") + "x" if ra else "—", fmt(kf, ".3f"), fmt(zf, ".3f"),
                fmt(rf, ".2f") + "x" if rf else "—"]) + " |")
        km, zm = median(col["kernel"][0]), median(col["zswapd"][0])
        kfm, zfm = median(col["kernel"][1]), median(col["zswapd"][1])
        rm = zm / km if km and zm else None
        md.append("| medians | " + " | ".join([
            fmt_rate(km), fmt_rate(zm), fmt(rm, ".2f") + "x" if rm else "—",
            fmt(kfm, ".3f"), fmt(zfm, ".3f"),
            fmt(zfm / kfm, ".2f") + "x" if kfm and zfm else "—"]) + " |")
        spread = lambda xs: f"{fmt_rate(min(xs))}-{fmt_rate(max(xs))}" if xs else "—"
        md += ["", f"Spread: kernel zswap {spread(col['kernel'][0])}, zswapd {spread(col['zswapd'][0])}"
               f" accesses/s; ratio per round {fmt(min(ratios), '.2f') if ratios else '—'}"
               f"-{fmt(max(ratios), '.2f') if ratios else '—'}x, median "
               f"{fmt(median(ratios), '.2f') if ratios else '—'}x.", ""]
        summary.append({"budget_mib": b, "kernel_median_accesses_per_s": km,
                        "zswapd_median_accesses_per_s": zm, "ratio_of_medians": rm,
                        "median_ratio_per_round": median(ratios), "ratios_per_round": ratios,
                        "kernel_median_faults_per_access": kfm,
                        "zswapd_median_faults_per_access": zfm,
                        "faults_ratio_per_round": fratios})
    doc = {"benchmark": "pairs", "host": a.host, "date": a.date, "command": a.command,
           "loadavg_at_start": a.load,
           "params": {"size_mib": a.size, "seconds": a.seconds, "warmup_s": a.warmup,
                      "pattern": "hotcold", "hot_pct": 20, "hot_access_pct": 80, "write_pct": 50},
           "notes": P_NOTES, "summary": summary, "cases": cases}
    write_json(a.out, "pairs", doc)
    md += [P_NOTES, "", f"{a.host}; load average at start {a.load}; {a.date}.",
           f"Command: `{a.command}`", ""]
    write_md(a.out, "pairs", md)
    return 0


SCAN_NOTES = """How to read it:
- tests/bench/workload.c --pattern sequential: {size} MiB of the page mix, every page
  pushed out (zswapd: `zswapctl reclaim` of all of it; kernel: the process's cgroup v1
  limit forced down to 16 MiB, then lifted), then one pass that reads one word of each
  page in address order, timed by the workload; every page checked at the end.
- MiB/s: the pass's pages a second / 256, the median of the rounds (each round's
  figure after it).
- pages in: zswapd loads (prefetched pages included); kernel pswpin + zswpin +
  swpin_zero, from /proc/vmstat. faults: zswapd: loads less prefetch_pages (faults it
  served); kernel: the process's major faults in the pass.
- Each case once per round, the cases one after the other; kernel cases with
  zswap's pool cap lifted above the data."""


def scan_main(a, cases):
    order, by = [], {}
    for c in cases:
        if c["name"] not in by:
            order.append(c["name"])
            by[c["name"]] = []
        wl = c.get("workload") or {}
        if c["status"] == "ok" and wl.get("accesses_per_s"):
            c["mib_per_s"] = wl["accesses_per_s"] / 256
            if c["mode"] == "zswapd":
                c["faults"] = c["pages_in"] - c["zswapd_delta"].get("prefetch_pages", 0)
            else:
                c["faults"] = wl.get("majflt")
        by[c["name"]].append(c)
    doc = {"benchmark": "scan", "host": a.host, "date": a.date, "command": a.command,
           "loadavg_at_start": a.load, "params": {"size_mib": a.size, "pattern": "sequential"},
           "notes": SCAN_NOTES.format(size=a.size), "cases": cases}
    write_json(a.out, "scan", doc)
    md = [f"## Evicted memory read back in address order: {a.size} MiB", "",
          "| case | MiB/s | rounds | pass s | pages in | faults | status |",
          "|---|---|---|---|---|---|---|"]
    for n in order:
        cs = by[n]
        ok = [c for c in cs if c.get("mib_per_s")]
        status = ", ".join(sorted(set(c["status"] for c in cs)))
        if not ok:
            md.append(f"| {n} | — | | | | | {status} |")
            continue
        each = " / ".join(f"{c['mib_per_s']:.0f}" for c in ok)
        secs = median([c["workload"]["elapsed_s"] for c in ok])
        pin = median([c["pages_in"] for c in ok if c.get("pages_in") is not None])
        flt = median([c["faults"] for c in ok if c.get("faults") is not None])
        md.append(f"| {n} | {median([c['mib_per_s'] for c in ok]):.0f} | {each} | {secs:.2f} | "
                  f"{fmt(pin, '.0f')} | {fmt(flt, '.0f')} | {status} |")
    md += ["", SCAN_NOTES.format(size=a.size), "",
           f"{a.host}; load average at start {a.load}; {a.date}.", f"Command: `{a.command}`", ""]
    write_md(a.out, "scan", md)
    return 0  # run.sh judges the cases (case_end)


PYHEAP_NOTES = """How to read it:
- tests/bench/pyheap.py ({python}): {keys} records, each a list [key, version,
  payload] in one dict, the payload about 230 bytes of text; built under the budget
  (kernel: a cgroup v1 memory cgroup of B = {budget} MiB, zswap's pool on top and not
  capped below the data; zswapd: `zswapctl limit` B, the pool not capped below the
  data either, the kernel zswap case's footing). Then {seconds:g} s of random lookups
  (uniform over every record) and updates (one in five: a new version, a new payload),
  with a full gc.collect() every 5 s: the collector visits every list and every object
  a list refers to, the whole heap in allocation order. Every record checked at the end.
- ops/s: lookups a second over the window, collections included; gc ms: the
  full collections' times, median and longest. pages in: kernel pswpin + zswpin +
  swpin_zero; zswapd loads (prefetched pages included). resident: the
  interpreter's RssAnon after the window; pool: kernel Zswap / zswapd
  pool_total_size. One run each."""


def pyheap_main(a):
    clk_tck = os.sysconf("SC_CLK_TCK")
    cases = [case_figures(os.path.join(a.cases, d), clk_tck) for d in sorted(os.listdir(a.cases))]
    wl0 = next((c["workload"] for c in cases if c.get("workload")), {}) or {}
    notes = PYHEAP_NOTES.format(python=wl0.get("python", "?"), keys=a.keys, budget=a.budget,
                                seconds=a.seconds)
    write_json(a.out, "pyheap", {"benchmark": "pyheap", "host": a.host, "date": a.date,
                                 "command": a.command, "loadavg_at_start": a.load,
                                 "params": {"keys": a.keys, "budget_mib": a.budget,
                                            "seconds": a.seconds},
                                 "notes": notes, "cases": cases})
    md = [f"## A Python heap of {a.keys} records under a {a.budget} MiB budget", "",
          "| case | build s | ops/s | gc ms median | gc ms max | pages in | resident MiB | pool MiB | status |",
          "|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        w = c.get("workload") or {}
        ok = c["status"] == "ok" and w.get("ops_per_s")
        res = c.get("resident_kb")
        md.append(f"| {c['name']} | {fmt(w.get('build_s'), '.2f') if ok else '—'} | "
                  f"{fmt_rate(w.get('ops_per_s')) if ok else '—'} | "
                  f"{fmt(w.get('gc_ms_median')) if ok else '—'} | {fmt(w.get('gc_ms_max')) if ok else '—'} | "
                  f"{fmt(c.get('pages_in'), '.0f')} | {fmt(res / 1024 if res else None, '.0f')} | "
                  f"{fmt((c.get('pool_bytes') or 0) / MIB, '.0f')} | {c['status']} |")
    md += ["", notes, "", f"{a.host}; load average at start {a.load}; {a.date}.",
           f"Command: `{a.command}`", ""]
    write_md(a.out, "pyheap", md)
    return 0  # run.sh judges the cases (case_end): an OOM kill of a kernel case is a result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--host", default="")
    ap.add_argument("--command", default="")
    ap.add_argument("--date", default="")
    ap.add_argument("--load", default="")
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--warmup", type=float, required=True)
    ap.add_argument("--limit-cmd", default="limit")
    ap.add_argument("--kernel-skip", default="")
    ap.add_argument("--writeback", action="store_true")
    ap.add_argument("--budget", type=int)
    ap.add_argument("--pool-cap", type=int)
    ap.add_argument("--zswap-pool-pct", type=int)
    ap.add_argument("--memtotal", type=int)
    ap.add_argument("--workers", action="store_true")
    ap.add_argument("--accesses", type=int)
    ap.add_argument("--redis", action="store_true")
    ap.add_argument("--memcached", action="store_true")
    ap.add_argument("--keys", type=int)
    ap.add_argument("--gets", type=int)
    ap.add_argument("--sets", type=int)
    ap.add_argument("--pairs", action="store_true")
    ap.add_argument("--scan", action="store_true")
    ap.add_argument("--pyheap", action="store_true")
    a = ap.parse_args()
    if a.workers:
        return workers_main(a)
    if a.redis:
        return redis_main(a)
    if a.memcached:
        return memcached_main(a)
    if a.pyheap:
        return pyheap_main(a)

    clk_tck = os.sysconf("SC_CLK_TCK")
    cases = [case_figures(os.path.join(a.cases, d), clk_tck) for d in sorted(os.listdir(a.cases))]
    if a.writeback:
        return writeback_main(a, cases)
    if a.pairs:
        return pairs_main(a, cases)
    if a.scan:
        return scan_main(a, cases)
    doc = {
        "benchmark": "compare",
        "host": a.host,
        "date": a.date,
        "command": a.command,
        "loadavg_at_start": a.load,
        "params": {"size_mib": a.size, "seconds": a.seconds, "warmup_s": a.warmup,
                   "pattern": "hotcold", "hot_pct": 20, "hot_access_pct": 80, "write_pct": 50,
                   "zswapd_limit_by": a.limit_cmd},
        "notes": NOTES.format(limit_cmd=a.limit_cmd),
        "cases": cases,
    }
    if a.kernel_skip:
        doc["kernel_cases_skipped"] = a.kernel_skip
    write_json(a.out, "compare", doc)

    err = plot(cases, a.size, os.path.join(a.out, "compare.png"))
    md = [f"## Side by side: {a.size} MiB, {a.warmup:g} s warm-up + {a.seconds:g} s measured", "",
          md_table(cases, a.size), ""]
    if a.kernel_skip:
        md += [f"Kernel cases not run: {a.kernel_skip}.", ""]
    md += [NOTES.format(limit_cmd=a.limit_cmd), "",
           f"{a.host}; load average at start {a.load}; {a.date}.", f"Command: `{a.command}`", ""]
    if err:
        md += [f"(no compare.png: {err})", ""]
    write_md(a.out, "compare", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
