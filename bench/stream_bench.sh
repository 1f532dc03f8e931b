#!/usr/bin/env bash
# Streaming vs in-memory throughput of `flashkm fit`, next to the disk's own read bandwidth.
# Usage: bench/stream_bench.sh [ROWS] [DIM] [LIMIT]   (defaults 4194304 128 512M: a 2 GiB file,
# four times the limit). Needs root to drop the page cache for the cold runs. Writes
# build/stream_bench.json and prints a table for docs/PERFORMANCE.md.
set -euo pipefail
ROWS=${1:-4194304}
DIM=${2:-128}
LIMIT=${3:-512M}
BUILD=${BUILD:-build/release}
K=64
ITERS=10
DIR=$(mktemp -d "${TMPDIR:-/tmp}/flashkm_stream.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
FILE="$DIR/x.npy"
FKM="$BUILD/cli/flashkm"

"$BUILD/tests/cli/make_data" "$FILE" "$ROWS" "$DIM" "$K" 5
SIZE=$(stat -c %s "$FILE")
drop() { sync; echo 1 > /proc/sys/vm/drop_caches; }

# The disk: a sequential read bypassing the page cache, and one through a cold page cache.
drop
DIRECT=$(dd if="$FILE" of=/dev/null bs=16M iflag=direct 2>&1 | sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p')
drop
COLD=$(dd if="$FILE" of=/dev/null bs=16M 2>&1 | sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p')
WARM=$(dd if="$FILE" of=/dev/null bs=16M 2>&1 | sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p')

FIT=(fit "$FILE" -k "$K" --init random --max-iter "$ITERS" --tol 0 --seed 1 --json -q)
"$FKM" "${FIT[@]}" -o "$DIR/cm.npy" > "$DIR/mem.json"
"$FKM" "${FIT[@]}" -o "$DIR/cs.npy" --memory-limit "$LIMIT" > "$DIR/stream_warm.json"
cmp "$DIR/cm.npy" "$DIR/cs.npy"
# One cold pass: predict streams the file once from a dropped page cache.
drop
"$FKM" predict "$FILE" --centroids "$DIR/cm.npy" -o "$DIR/p.npy" --memory-limit "$LIMIT" --json -q > "$DIR/predict_cold.json"

python3 - "$DIR" "$SIZE" "$DIRECT" "$COLD" "$WARM" "$LIMIT" <<'PY'
import json, statistics, sys
d, size, direct, cold, warm, limit = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:6]), sys.argv[6]
mem = json.load(open(d + "/mem.json"))
st = json.load(open(d + "/stream_warm.json"))
pc = json.load(open(d + "/predict_cold.json"))
gb = size / 1e9
def per_iter(j):
    return statistics.median(h["seconds"] for h in j["history"])
m, s = per_iter(mem), per_iter(st)
out = {
    "file_bytes": size, "rows": mem["rows"], "cols": mem["cols"], "k": mem["k"], "memory_limit": limit,
    "disk_direct_GBps": gb / direct, "disk_cold_pagecache_GBps": gb / cold, "pagecache_warm_GBps": gb / warm,
    "in_memory_s_per_iter": m, "streamed_s_per_iter": s,
    "in_memory_GBps": gb / m, "streamed_GBps": gb / s,
    "streamed_peak_rss": st["peak_rss"], "in_memory_peak_rss": mem["peak_rss"],
    "stream": st["stream"], "predict_cold_s": pc["seconds"], "predict_cold_GBps": gb / pc["seconds"],
}
json.dump(out, open("build/stream_bench.json", "w"), indent=2)
print("| measurement | value |\n|---|---|")
print(f"| file | {size/2**30:.2f} GiB ({mem['rows']:,} x {mem['cols']} float32), K = {mem['k']}, limit {limit} |")
print(f"| disk, O_DIRECT sequential read (dd) | {gb/direct:.2f} GB/s |")
print(f"| disk through a cold page cache (dd) | {gb/cold:.2f} GB/s |")
print(f"| page cache, warm (dd) | {gb/warm:.2f} GB/s |")
print(f"| fit in memory, median s/iteration | {m:.3f} s ({gb/m:.2f} GB/s of X) |")
print(f"| fit streamed (warm cache), median s/iteration | {s:.3f} s ({gb/s:.2f} GB/s of X), {s/m:.2f}x in-memory |")
print(f"| streamed: compute waited for I/O / reader busy | {st['stream']['wait_seconds']:.2f} s / {st['stream']['read_seconds']:.2f} s over {st['stream']['passes']} passes |")
print(f"| predict streamed, cold cache, one pass | {pc['seconds']:.2f} s ({gb/pc['seconds']:.2f} GB/s) |")
print(f"| peak RSS: streamed / in memory | {st['peak_rss']/2**20:.0f} MiB / {mem['peak_rss']/2**20:.0f} MiB |")
PY
