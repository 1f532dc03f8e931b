"""Adapters that give peers without scikit-learn's interface the contender interface of
../shared/bench/peers.py: ``cls(n_clusters=K, init=C0, n_init=1, max_iter=n, tol=0).fit(X)``
then ``cluster_centers_``, ``n_iter_``, ``inertia_``.

Use with ``PYTHONPATH=bench peers.py --contender peer_adapters:SuperKMeansExact``.
"""

import os

import numpy as np


class SuperKMeansExact:
    """SuperKMeans (VLDB'26) at its most exact settings: flat (not hierarchical), no sampling
    (sampling_fraction=1, no per-cluster cap), GEMM-only distances (no probabilistic pruning),
    no early termination. It cannot start from given centroids, so it uses its own
    initialisation: compare its final inertia, not only its time."""

    def __init__(self, n_clusters, init=None, n_init=1, max_iter=10, tol=0.0):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X):
        from superkmeans import SuperKMeans

        X = np.ascontiguousarray(X, dtype=np.float32)
        threads = int(os.environ.get("OMP_NUM_THREADS", "0"))
        km = SuperKMeans(
            self.n_clusters, X.shape[1], hierarchical=False, iters=self.max_iter,
            sampling_fraction=1.0, max_points_per_cluster=1 << 30, n_threads=threads,
            use_blas_only=True, tol=0.0, early_termination=False, seed=42,
        )
        self.cluster_centers_ = np.asarray(km.train(X), dtype=np.float32)
        self.n_iter_ = self.max_iter
        return self
