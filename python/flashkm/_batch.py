"""flashkm.batch_kmeans: B independent k-means problems of the same shape in one call."""

import numbers

import numpy as np
from sklearn.utils import check_random_state

from . import _core
from ._arrays import as_numpy


def batch_kmeans(X, n_clusters, *, metric="euclidean", init="k-means++", max_iter=100,
                 tol=1e-4, random_state=None, n_threads=None):
    """Exact Lloyd k-means on every member ``X[b]`` of a (B, N, D) array, independently.

    Member ``b``'s result is bitwise what ``flashkm.KMeans(n_clusters, init=init, n_init=1,
    max_iter=max_iter, tol=tol, random_state=random_state).fit(X[b])`` gives (with
    ``init[b]`` for an array init): one seed, drawn from ``random_state`` as ``KMeans`` draws
    it, serves every member.

    Parameters
    ----------
    X : array-like of shape (B, N, D)
        float32 and float64 are kept (a C-contiguous array is used in place, anything else is
        converted once); float16 and bfloat16 become float32 (one widened copy), other dtypes
        float64. Any CPU array that speaks DLPack (a torch tensor, a JAX array) is read in
        place, and labels and centroids come back as arrays of its library.
    n_clusters : int
        K, with 1 <= K <= N.
    metric : {'euclidean', 'cosine', 'dot'}, default='euclidean'
        As ``KMeans(metric=...)``: Lloyd, spherical k-means, or inner-product assignment.
    init : {'k-means++', 'random'} or array-like of shape (B, K, D), default='k-means++'
    max_iter : int, default=100
    tol : float, default=1e-4
        Relative to the mean per-feature variance of each member, as in ``KMeans``.
    random_state : int, RandomState instance or None, default=None
    n_threads : int or None, default=None
        None uses all cores. With at least as many members as threads, members run in
        parallel one thread each; otherwise one after another on all threads. Results do not
        depend on it.

    Returns
    -------
    labels : ndarray of shape (B, N), int32 (X's kind of array)
    centroids : ndarray of shape (B, K, D), X's float dtype (float32 for 16-bit X), X's kind
        of array
    info : dict of per-member numpy arrays: 'inertia' (B,) float64, 'n_iter' (B,) int32,
        'converged' (B,) bool
    """
    if not isinstance(metric, str):
        raise ValueError(f"metric must be a string, got {metric!r}")
    if metric not in ("euclidean", "cosine", "dot"):
        raise ValueError(f"metric must be 'euclidean', 'cosine' or 'dot', got {metric!r}")
    X, back = as_numpy(X)
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        half = X.dtype == np.float16 or X.dtype.name == "bfloat16"  # the engine's type for them
        X = X.astype(np.float32 if half else np.float64)
    X = np.ascontiguousarray(X)
    if X.ndim != 3:
        raise ValueError(f"X must be a 3-D array (batch, n_samples, n_features), got shape {X.shape}")
    if not isinstance(n_clusters, numbers.Integral) or isinstance(n_clusters, bool) or n_clusters < 1:
        raise ValueError(f"n_clusters must be an integer >= 1, got {n_clusters!r}")
    if X.shape[1] < n_clusters:
        raise ValueError(f"n_samples={X.shape[1]} should be >= n_clusters={n_clusters}.")
    if not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if not isinstance(tol, numbers.Real) or not tol >= 0:
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    if n_threads is not None and (not isinstance(n_threads, numbers.Integral) or n_threads < 1):
        raise ValueError(f"n_threads must be None or an integer >= 1, got {n_threads!r}")

    centers = None
    if isinstance(init, str):
        if init not in ("k-means++", "random"):
            raise ValueError(f"init must be 'k-means++', 'random' or an array, got {init!r}")
        kind = init
    else:
        kind = "explicit"
        centers = np.ascontiguousarray(np.asarray(as_numpy(init, "init")[0], dtype=X.dtype))
        expected = (X.shape[0], n_clusters, X.shape[2])
        if centers.shape != expected:
            raise ValueError(f"The shape of the initial centers {centers.shape} does not match "
                             f"(batch, n_clusters, n_features) = {expected}.")
    # The seed KMeans would derive from the same random_state, so solo fits can be reproduced.
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    res = _core.batch_fit(X, int(n_clusters), kind, centers, max_iter=int(max_iter),
                          tol=float(tol), seed=seed,
                          n_threads=0 if n_threads is None else int(n_threads), metric=metric)
    info = {
        "inertia": res["inertia"],
        "n_iter": res["n_iter"],
        "converged": np.array(res["converged"], dtype=bool),
    }
    labels, centroids = res["labels"], res["centroids"]
    if back is not None:
        labels, centroids = back(labels), back(centroids)
    return labels, centroids, info
