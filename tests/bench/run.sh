#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Benchmarks: rerunnable, written to tests/bench/results/, never pass/fail
# on timings (a run that corrupts data fails loudly, though).
#
#   tests/bench/run.sh [--quick]     (make bench / make bench-quick)
#
# micro: per-page store and load cost of zswapd for lzo, lz4 and zstd
#        (tests/bench/micro.c), printed next to the kernel zswap figures
#        measured on this machine kind (ANCHORS.md: 7.6 us store, 7.9 us
#        mean / 15.7 us p99 swap-in).
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/${BUILD:-build}
OUT=$ROOT/tests/bench/results
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1
mkdir -p "$OUT"

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (zswapd uses /dev/userfaultfd)"; exit 1; }
cc -O2 -std=c11 -D_GNU_SOURCE -I"$ROOT/include" -o "$B/micro" "$ROOT/tests/bench/micro.c"

TMP=$(mktemp -d /tmp/zswapd-bench.XXXXXX)
export ZSWAP_SOCKET=$TMP/zswapd.sock
DPID=
cleanup() { [ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

start_daemon() {
	"$B/zswapd" -f -s "$ZSWAP_SOCKET" --compressor "$1" 2>"$TMP/daemon.log" &
	DPID=$!
	for _ in $(seq 100); do "$B/zswapctl" stats >/dev/null 2>&1 && return 0; sleep 0.05; done
	cat "$TMP/daemon.log"; return 1
}
stop_daemon() { kill -TERM "$DPID"; wait "$DPID"; DPID=; }

MIB=256 ROUNDS=3
[ $QUICK -eq 1 ] && MIB=64 ROUNDS=2
host="$(nproc) vCPU $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1), $(uname -r)"
stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
json=$OUT/micro.json
echo "[" >"$json"
printf '\n| compressor | store µs/page | load µs mean | p50 | p90 | p99 | pool bytes/page |\n' >"$OUT/micro.md"
printf '|---|---|---|---|---|---|---|\n' >>"$OUT/micro.md"
first=1
for c in lzo lz4 zstd; do
	start_daemon "$c"
	res=$(LD_PRELOAD=$B/libzswap.so "$B/micro" $MIB $ROUNDS)
	stop_daemon
	echo "$c: $res"
	[ $first -eq 1 ] || echo "," >>"$json"
	first=0
	printf '{"compressor":"%s","host":"%s","date":"%s","result":%s}' "$c" "$host" "$stamp" "$res" >>"$json"
	python3 - "$c" "$res" >>"$OUT/micro.md" <<'EOF'
import json, sys
c, r = sys.argv[1], json.loads(sys.argv[2])
print(f"| zswapd {c} | {r['store_us_per_page']:.2f} | {r['load_us_mean']:.2f} | {r['load_us_p50']:.2f} | {r['load_us_p90']:.2f} | {r['load_us_p99']:.2f} | {r['pool_bytes_per_stored_page']:.0f} |")
EOF
done
echo "]" >>"$json"
printf '| kernel zswap lzo (ANCHORS.md) | 7.6 | 7.9 | | | 15.7 | ≈2500 |\n' >>"$OUT/micro.md"
printf '\n%s, %s MiB x %s rounds, `make bench%s`\n' "$host" "$MIB" "$ROUNDS" \
	"$([ $QUICK -eq 1 ] && echo -quick)" >>"$OUT/micro.md"
cat "$OUT/micro.md"
