"""Pruned against unpruned Lloyd iterations, side by side in one run (issue: exact pruning).

For each shape: the same initial centres (flashkm's seeded k-means++ and one Lloyd step), then Lloyd to
convergence at tol=1e-4 with prune off, on and auto, alternating, `--repeats` times; iteration time is
the sum of the iterations' own seconds (initialisation excluded). Prints medians, the ratio,
the fraction of distances computed per iteration, the bounds' memory, and the machine's sgemm
rate measured in the same run (numpy X @ C.T at the shape, 2 threads) as the brute-force floor.
Optionally scikit-learn's Lloyd and Elkan (--sklearn) and scikit-learn-intelex's Lloyd (--sklearnex)
from the same centres; their times are whole fits from explicit centres (no seeding), to convergence
at the same tol, with their own iteration counts. --faiss adds FAISS's Lloyd with subsampling off
(max_points_per_centroid huge, as ../shared/bench's `faiss` peer): FAISS has no tolerance, so it
runs flashkm's iteration count from the same centres. `make bench-deps` installs the peers.

    build/venv/bin/python bench/bench_prune.py [--shapes blobs:1000000x64x256,...] [--sklearn] [--sklearnex]
"""
import argparse
import gzip
import json
import os
import statistics
import struct
import time

import numpy as np

import flashkm

FMNIST = "/usr/share/datasets/fashion-mnist"


def blobs(n, d, k, seed=0, sep=3.0):
    # As the peer harness (../shared/bench/peers.py): overlapping Gaussian blobs.
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d), dtype=np.float32) * np.float32(sep / np.sqrt(2.0 * d))
    lab = rng.integers(0, k, n)
    X = rng.standard_normal((n, d), dtype=np.float32)
    X += centers[lab]
    return X


def fashion_mnist():
    parts = []
    for name in ("train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"):
        with gzip.open(os.path.join(FMNIST, name), "rb") as f:
            buf = f.read()
        _, n, r, c = struct.unpack(">IIII", buf[:16])
        parts.append(np.frombuffer(buf, dtype=np.uint8, offset=16).reshape(n, r * c))
    return (np.concatenate(parts).astype(np.float32) / np.float32(255)).copy()


def sgemm_rate(X, C, reps=3):
    n = min(len(X), 200000)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        X[:n] @ C.T
        best = min(best, time.perf_counter() - t)
    return 2.0 * n * X.shape[1] * C.shape[0] / best / 1e9


def run(X, k, centres, prune):
    km = flashkm.KMeans(k, init=centres, n_init=1, tol=1e-4, max_iter=300, prune=prune, n_threads=2)
    km.fit(X)
    secs = sum(h["seconds"] for h in km.history_)
    frac = [h["distances"] / (len(X) * k) for h in km.history_]
    return secs, km, frac


def sklearn_time(X, k, centres, algorithm):
    if algorithm == "sklearnex":
        from sklearnex.cluster import KMeans
        algorithm = "lloyd"
    else:
        from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits
    with threadpool_limits(2):
        t = time.perf_counter()
        km = KMeans(k, init=centres, n_init=1, tol=1e-4, max_iter=300, algorithm=algorithm).fit(X)
        return time.perf_counter() - t, km.n_iter_


def faiss_time(X, centres, n_iter):
    import faiss
    faiss.omp_set_num_threads(2)
    km = faiss.Kmeans(X.shape[1], centres.shape[0], niter=n_iter, verbose=False, seed=1234,
                      max_points_per_centroid=1 << 30)
    t = time.perf_counter()
    km.train(X, init_centroids=np.ascontiguousarray(centres, dtype=np.float32))
    return time.perf_counter() - t, n_iter


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="blobs:1000000x64x256,blobs:100000x128x1024,fmnist:256,fmnist:10")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sklearn", action="store_true")
    ap.add_argument("--sklearnex", action="store_true", help="scikit-learn-intelex (oneDAL) from the same centres")
    ap.add_argument("--faiss", action="store_true", help="FAISS, subsampling off, flashkm's iteration count")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    out = []
    for spec in a.shapes.split(","):
        kind, shape = spec.split(":")
        if kind == "fmnist":
            X, k = fashion_mnist(), int(shape)
        else:
            n, d, k = (int(v) for v in shape.split("x"))
            X = blobs(n, d, k)
        # Common initial centres: k-means++ (flashkm, seeded) followed by one Lloyd step.
        centres = flashkm.KMeans(k, n_init=1, max_iter=1, random_state=0, n_threads=2,
                                 prune=False).fit(X).cluster_centers_
        rate = sgemm_rate(X, centres)
        off_t, on_t, auto_t = [], [], []
        for _ in range(a.repeats):
            t, off, _ = run(X, k, centres, False)
            off_t.append(t)
            t, on, frac = run(X, k, centres, True)
            on_t.append(t)
            t, auto, _ = run(X, k, centres, "auto")
            auto_t.append(t)
        assert auto.cluster_centers_.tobytes() == on.cluster_centers_.tobytes()
        assert off.cluster_centers_.tobytes() == on.cluster_centers_.tobytes()
        assert np.array_equal(off.labels_, on.labels_) and off.n_iter_ == on.n_iter_
        n, d = X.shape
        floor = 2.0 * n * d * k * off.n_iter_ / (rate * 1e9)
        row = dict(data=spec, n=n, d=d, k=k, n_iter=off.n_iter_, off_s=statistics.median(off_t),
                   on_s=statistics.median(on_t), auto_s=statistics.median(auto_t), sgemm_gflops=rate, floor_s=floor,
                   mean_fraction=float(np.mean(frac)), fraction_after_5=float(np.mean(frac[5:] or [1.0])))
        row["speedup"] = row["off_s"] / row["on_s"]
        row["speedup_auto"] = row["off_s"] / row["auto_s"]
        if a.sklearn:
            for alg in ("lloyd", "elkan"):
                t, it = sklearn_time(X, k, centres, alg)
                row[f"sklearn_{alg}_s"] = t
                row[f"sklearn_{alg}_iter"] = it
        if a.sklearnex:
            t, it = sklearn_time(X, k, centres, "sklearnex")
            row["sklearnex_s"] = t
            row["sklearnex_iter"] = it
        if a.faiss:
            t, it = faiss_time(X, centres, off.n_iter_)
            row["faiss_s"] = t
            row["faiss_iter"] = it
        out.append(row)
        print(json.dumps(row), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
