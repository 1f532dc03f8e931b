#!/usr/bin/env bash
# Per-iteration time of `flashkm fit` in one process and with --distributed over 2 ranks on this
# machine (same data, same initial centroids), for docs/DISTRIBUTED.md.
# Usage: bench/mpi_bench.sh [ROWS] [DIM] [K]   (defaults 1000000 128 1024)
set -euo pipefail
ROWS=${1:-1000000}
DIM=${2:-128}
K=${3:-1024}
BUILD=${BUILD:-build/release}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/flashkm_mpi.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
"$BUILD/tests/cli/make_data" "$DIR/x.npy" "$ROWS" "$DIM" "$K" 3
FIT=(fit "$DIR/x.npy" -k "$K" --init random --seed 1 --max-iter 7 --tol 0 --json -q -o "$DIR/c.npy")
MPI=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
"$BUILD/cli/flashkm" "${FIT[@]}" --threads 2 > "$DIR/p1t2.json"
"$BUILD/cli/flashkm" "${FIT[@]}" --threads 1 > "$DIR/p1t1.json"
"${MPI[@]}" -np 1 -x OMP_NUM_THREADS=2 "$BUILD/cli/flashkm" "${FIT[@]}" --threads 2 --distributed > "$DIR/r1t2.json"
"${MPI[@]}" -np 2 -x OMP_NUM_THREADS=1 "$BUILD/cli/flashkm" "${FIT[@]}" --threads 1 --distributed > "$DIR/r2t1.json"
python3 - "$DIR" "$K" "$DIM" <<'PY'
import json, statistics, sys
d, k, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [("one process, 2 threads", "p1t2"), ("one process, 1 thread", "p1t1"),
        ("--distributed, 1 rank x 2 threads", "r1t2"), ("--distributed, 2 ranks x 1 thread", "r2t1")]
print("| run | median s/iteration (iterations 2-7) | GFLOP/s (2NDK) |\n|---|---|---|")
for name, f in rows:
    j = json.load(open(f"{d}/{f}.json"))
    t = statistics.median(h["seconds"] for h in j["history"][1:])
    print(f"| {name} | {t:.3f} | {2*j['rows']*j['cols']*j['k']/t/1e9:.0f} |")
print(f"\nall-reduced per iteration: K*D*8 + K*8 + 16 = {k*dim*8 + k*8 + 16:,} bytes")
PY
