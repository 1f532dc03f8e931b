#!/usr/bin/env python3
"""Turns bench_kernels' JSON (medians of repetitions) into the kernel table of docs/PERFORMANCE.md:
each kernel as a fraction of the ceiling measured in the same run."""
import json
import sys


def main(path):
    data = json.load(open(path))
    med = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        name = b["run_name"].replace("/real_time", "")
        med[name] = b
    sgemm = med["ceiling/sgemm/4096"]["GFLOPs"] if "ceiling/sgemm/4096" in med else None
    bw = med["ceiling/read_bw/1000000/128/16"]["GBps"]
    ctx = data["context"]
    reps = max(b.get("repetitions", 1) for b in data["benchmarks"])
    print(f"Machine: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz; "
          f"run {ctx.get('date')}; medians of {reps} repetitions.\n")
    print("| measurement | median | ceiling (same run) | fraction / ratio |")
    print("|---|---|---|---|")
    if sgemm:
        print(f"| OpenBLAS sgemm 4096³, 2 threads | {sgemm:.1f} GFLOP/s | — | ceiling |")
    print(f"| streaming read of 512 MB, 2 threads | {bw:.1f} GB/s | — | ceiling |")
    for name, b in sorted(med.items()):
        kind, *shape = name.split("/")
        if kind == "ceiling":
            continue
        n, d, k = (int(v) for v in shape)
        ms = b["real_time"] if b["time_unit"] == "ms" else b["real_time"] / 1e6
        if kind == "assign":
            g = b["GFLOPs"]
            print(f"| FlashAssign f32 N={n} D={d} K={k} | {g:.1f} GFLOP/s ({ms:.1f} ms) | sgemm {sgemm:.1f} | {g / sgemm:.0%} of sgemm |")
        elif kind == "update":
            g = b["GBps"]
            print(f"| Sort-Inverse Update N={n} D={d} K={k} | {g:.1f} GB/s ({ms:.1f} ms) | read {bw:.1f} GB/s | {g / bw:.0%} of read bandwidth |")
        elif kind == "iteration":
            # The floor is the larger of the arithmetic (2NDK at the sgemm rate) and one read of X.
            arith_ms = 2.0 * n * d * k / (sgemm * 1e9) * 1e3
            mem_ms = 4.0 * n * d / (bw * 1e9) * 1e3
            floor_ms = max(arith_ms, mem_ms)
            which = "2NDK/sgemm" if arith_ms >= mem_ms else "read of X"
            print(f"| whole Lloyd iteration N={n} D={d} K={k} | {ms:.1f} ms | floor ({which}) = {floor_ms:.1f} ms | {ms / floor_ms:.2f}× the floor |")
        elif kind == "panel":
            # One thread: against half the 2-thread sgemm rate.
            what = ("one-vector panel, assign_rows", "one-vector panel, group_min (bounded)", "wide panel, assign_rows")[k]
            g = b["GFLOPs"]
            ceil = f"sgemm / 2 = {sgemm / 2:.1f}" if sgemm else "—"
            frac = f"{g / (sgemm / 2):.0%} of a thread's sgemm" if sgemm else "—"
            print(f"| {what}, one thread, {n} rows, D={d} | {g:.1f} GFLOP/s | {ceil} | {frac} |")


if __name__ == "__main__":
    main(sys.argv[1])
