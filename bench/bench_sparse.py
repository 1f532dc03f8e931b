"""Sparse k-means per Lloyd iteration: flashkm against scikit-learn on the same CSR matrix, in one run.

A TF-IDF-like matrix (documents on 50 topics: rows of exponential weights, 60% on their topic's
terms, scaled to unit norm), the same initial centres (K random rows) for both, a fixed number of Lloyd iterations
(tol=0, so neither stops early), 2 threads each (OMP_NUM_THREADS for scikit-learn, n_threads for
flashkm), `--repeats` alternating runs; prints the medians of the time per iteration and the
ratio, and checks the two agree (labels, inertia).

    OMP_NUM_THREADS=2 build/venv-b/bin/python bench/bench_sparse.py [--n 20000 --d 50000 --density 0.005 --k 100]
"""
import argparse
import json
import statistics
import time

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans as SkKMeans

import flashkm


def tfidf_like(n, d, density, seed=0, dtype=np.float32, topics=50):
    """Documents on `topics` topics: each row draws about density * d distinct terms, 60% from
    its topic's own vocabulary (2% of the terms) and 40% from all terms, with exponential
    weights, and is scaled to unit norm. Clusters to find, so Lloyd runs several iterations."""
    rng = np.random.default_rng(seed)
    vocab = [rng.choice(d, max(1, d // 50), replace=False) for _ in range(topics)]
    topic = rng.integers(0, topics, n)
    indptr = [0]
    indices = []
    for i in range(n):
        m = max(1, rng.poisson(density * d))
        own = rng.choice(vocab[topic[i]], min(len(vocab[topic[i]]), int(0.6 * m)), replace=False)
        cols = np.unique(np.concatenate([own, rng.integers(0, d, m - len(own))]))
        indices.append(cols)
        indptr.append(indptr[-1] + len(cols))
    indices = np.concatenate(indices).astype(np.int32)
    data = rng.exponential(1.0, len(indices)) + 0.1
    X = sp.csr_matrix((data, indices, np.array(indptr)), shape=(n, d))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / norms) @ X, dtype=dtype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=50000)
    ap.add_argument("--density", type=float, default=0.005)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    X = tfidf_like(args.n, args.d, args.density, dtype=np.dtype(args.dtype))
    rng = np.random.default_rng(1)
    C0 = X[rng.choice(args.n, args.k, replace=False)].toarray()
    times = {"flashkm": [], "sklearn": []}
    for _ in range(args.repeats):
        t = time.perf_counter()
        ours = flashkm.KMeans(args.k, init=C0, n_init=1, max_iter=args.iters, tol=0, n_threads=2).fit(X)
        times["flashkm"].append((time.perf_counter() - t) / ours.n_iter_)
        t = time.perf_counter()
        ref = SkKMeans(args.k, init=C0, n_init=1, max_iter=args.iters, tol=0, algorithm="lloyd").fit(X)
        times["sklearn"].append((time.perf_counter() - t) / ref.n_iter_)
    med = {name: statistics.median(v) for name, v in times.items()}
    out = {
        "shape": [args.n, args.d], "nnz": int(X.nnz), "k": args.k, "dtype": args.dtype, "threads": 2,
        "iterations": [ours.n_iter_, ref.n_iter_],
        "seconds_per_iteration": med,
        "speedup": med["sklearn"] / med["flashkm"],
        "target": flashkm.default_target(),
        "same_labels": bool(np.array_equal(ours.labels_, ref.labels_)),
        "inertia": [ours.inertia_, ref.inertia_],
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
