"""The whole default fit, KMeans(n_clusters=K, n_init=1).fit(X), flashkm beside scikit-learn-intelex
(oneDAL), side by side in one run (issue: seeding at the cost of a few Lloyd iterations).

For each shape, `--repeats` rounds alternate: flashkm with init='k-means++' (the default),
flashkm with init='k-means||', and sklearnex's KMeans (its default init, 'k-means++'), each on
2 threads with random_state=0. Prints medians of the whole fit, flashkm's seeding time
(init_seconds_), iterations and inertia, and the ratios.

    build/venv/bin/pip install scikit-learn-intelex   # the peer
    build/venv/bin/python bench/bench_fit.py [--shapes blobs:1000000x64x256,fmnist:256] [--repeats 3]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_prune import blobs, fashion_mnist  # noqa: E402

import flashkm  # noqa: E402


def data(shape):
    kind, rest = shape.split(":")
    if kind == "blobs":
        n, d, k = (int(v) for v in rest.split("x"))
        return blobs(n, d, k), k
    return fashion_mnist(), int(rest)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="blobs:1000000x64x256,blobs:100000x128x1024,fmnist:256")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    from threadpoolctl import threadpool_limits
    from sklearnex.cluster import KMeans as DalKMeans

    out = []
    for shape in a.shapes.split(","):
        X, k = data(shape)
        t = {"k-means++": [], "k-means||": [], "sklearnex": []}
        init_s = {"k-means++": [], "k-means||": []}
        info = {}
        for _ in range(a.repeats):
            for init in ("k-means++", "k-means||"):
                s = time.perf_counter()
                km = flashkm.KMeans(k, init=init, n_init=1, random_state=0, n_threads=2).fit(X)
                t[init].append(time.perf_counter() - s)
                init_s[init].append(km.init_seconds_)
                info[init] = (km.n_iter_, km.inertia_)
            with threadpool_limits(2):
                s = time.perf_counter()
                dal = DalKMeans(k, n_init=1, random_state=0).fit(X)
                t["sklearnex"].append(time.perf_counter() - s)
                info["sklearnex"] = (dal.n_iter_, dal.inertia_)
        med = {key: statistics.median(v) for key, v in t.items()}
        row = {"shape": shape, "seconds": med, "init_seconds": {k2: statistics.median(v) for k2, v in init_s.items()},
               "n_iter_inertia": info}
        out.append(row)
        print(f"{shape:24s} flashkm k-means++ {med['k-means++']:7.2f} s (seeding {row['init_seconds']['k-means++']:.2f} s, "
              f"{info['k-means++'][0]} iter, inertia {info['k-means++'][1]:.6g})  "
              f"k-means|| {med['k-means||']:7.2f} s (seeding {row['init_seconds']['k-means||']:.2f} s, "
              f"{info['k-means||'][0]} iter, inertia {info['k-means||'][1]:.6g})  "
              f"sklearnex {med['sklearnex']:7.2f} s ({info['sklearnex'][0]} iter, inertia {info['sklearnex'][1]:.6g})  "
              f"speed-up vs sklearnex: {med['sklearnex'] / med['k-means++']:.2f}x / {med['sklearnex'] / med['k-means||']:.2f}x",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
