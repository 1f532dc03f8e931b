"""The fits of tests/wheel/check_wheel.sh, run both by the locally built package and by the wheel
in the clean root: `make DIR` writes the data, `fit DIR OUT` fits it, `compare DIR` checks that
the two fits and the command's labels are the same bits."""
import sys

import numpy as np


def make(d):
    # Blobs in 24 dimensions, away from the origin; the first K rows are the explicit init.
    rng = np.random.default_rng(7)
    k, n, dim = 12, 30_000, 24
    centres = rng.normal(0.0, 4.0, (k, dim)) + 50.0
    X = (centres[rng.integers(0, k, n)] + rng.normal(0.0, 1.0, (n, dim))).astype(np.float32)
    np.save(f"{d}/X.npy", X)
    np.save(f"{d}/init.npy", X[:k])


def fit(d, out):
    import flashkm

    X = np.load(f"{d}/X.npy")
    init = np.load(f"{d}/init.npy")
    a = flashkm.KMeans(n_clusters=len(init), init=init, n_init=1).fit(X)
    b = flashkm.KMeans(n_clusters=len(init), random_state=0).fit(X.astype(np.float64))
    np.savez(out, labels=a.labels_, centers=a.cluster_centers_, inertia=a.inertia_, n_iter=a.n_iter_,
             labels64=b.labels_, centers64=b.cluster_centers_, inertia64=b.inertia_)
    print(f"{flashkm.__file__}: inertia {a.inertia_:.9g} after {a.n_iter_} iterations; "
          f"k-means++ float64 inertia {b.inertia_:.9g}")


def compare(d):
    host, root = np.load(f"{d}/host.npz"), np.load(f"{d}/root.npz")
    for key in host.files:
        if not np.array_equal(host[key], root[key]):
            sys.exit(f"FAIL: {key} differs between the local package and the wheel in the clean root")
    if not np.array_equal(np.load(f"{d}/cmd_labels.npy"), host["labels"]):
        sys.exit("FAIL: the command's labels differ from KMeans's from the same init")
    print(f"same bits: {', '.join(host.files)}; the command's labels too")


if __name__ == "__main__":
    {"make": make, "fit": fit, "compare": compare}[sys.argv[1]](*sys.argv[2:])
