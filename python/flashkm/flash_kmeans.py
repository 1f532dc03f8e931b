"""Flash-KMeans's batched functions on the CPU: ``from flashkm.flash_kmeans import
batch_kmeans_Euclid`` in place of ``from flash_kmeans import batch_kmeans_Euclid``.

The three functions take Flash-KMeans's arguments, ``(x, n_clusters, max_iters=100, tol=0.0,
init_centroids=None, verbose=False)`` on a (B, N, D) array, and return its tuple
``(cluster_ids, centroids, n_iters)``: int64 labels (B, N), centroids (B, K, D) in x's dtype
and the iterations run, as arrays of x's library (a torch tensor in, torch tensors out; any CPU
array that speaks DLPack, or numpy). Each member of the batch is clustered on its own by
flashkm's engine. Where the results differ from Flash-KMeans's, and why (docs/PYTHON.md):

- Exact float32 (float64 for float64 x): Flash-KMeans's GPU kernels compute distances in TF32
  or 16-bit tensor-core arithmetic and sum centroids with float32 atomics; flashkm gives a
  float64 textbook Lloyd's labels. 16-bit x is read as float32 (one widened copy per call).
- Initialisation: ``init='random'`` (the default) draws K distinct rows of each member
  (Flash-KMeans draws K rows with replacement, so two centroids can start equal);
  ``init='k-means++'`` is available; ``init_centroids`` is used as given.
- Empty clusters (Euclid) are moved to the points farthest from their centroid, as
  scikit-learn does; Flash-KMeans keeps an empty cluster's old centroid.
- Stopping: a member stops when its labels no longer change (Flash-KMeans with tol=0 runs
  max_iters iterations: the same centroids, more iterations) or when the sum over its centroids
  of the squared shifts is at most tol**2 (which implies Flash-KMeans's test, largest shift
  < tol); ``n_iters`` is the most iterations any member ran.
- ``cluster_ids`` are always the labels of the returned centroids (Flash-KMeans, stopping at
  max_iters, returns the labels of its last assignment beside the centroids updated from them).
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state

from . import _core
from ._arrays import as_numpy

__all__ = ["batch_kmeans_Euclid", "batch_kmeans_Cosine", "batch_kmeans_Dot"]

_CHUNK_ROWS = 1 << 13  # rows per chunk of the float64 passes over x (bounded temporary memory)


def _inputs(x, n_clusters, max_iters, tol, init, init_centroids, random_state, n_threads):
    """x and init_centroids as C-contiguous float32/float64 (B, N, D) and (B, K, D) numpy arrays
    read in place where they already are; the checked options; the seed (drawn as KMeans and
    batch_kmeans draw it)."""
    X, back = as_numpy(x, "x")
    X = np.asarray(X)
    if X.ndim != 3:
        raise ValueError(f"x must be a 3-D array (B, N, D), got shape {X.shape}")
    dtype = X.dtype
    work = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    X = np.ascontiguousarray(X, dtype=work)
    B, N, D = X.shape
    integral = isinstance(n_clusters, numbers.Integral) and not isinstance(n_clusters, bool)
    if not integral or not 1 <= n_clusters <= N:
        raise ValueError(f"n_clusters must be an integer in [1, N = {N}], got {n_clusters!r}")
    if not isinstance(max_iters, numbers.Integral) or max_iters < 1:
        raise ValueError(f"max_iters must be an integer >= 1, got {max_iters!r}")
    if not isinstance(tol, numbers.Real) or not tol >= 0:
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    if n_threads is not None and (not isinstance(n_threads, numbers.Integral) or n_threads < 1):
        raise ValueError(f"n_threads must be None or an integer >= 1, got {n_threads!r}")
    if init not in ("random", "k-means++"):
        raise ValueError(f"init must be 'random' or 'k-means++', got {init!r}")
    C0 = None
    if init_centroids is not None:
        C0 = np.asarray(as_numpy(init_centroids, "init_centroids")[0])
        if C0.size != B * n_clusters * D:
            raise ValueError(f"init_centroids of shape {C0.shape} cannot be viewed as "
                             f"(B, n_clusters, D) = {(B, n_clusters, D)}")
        C0 = np.ascontiguousarray(C0.reshape(B, n_clusters, D), dtype=work)
    seed = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    return X, C0, back, dtype, seed, 0 if n_threads is None else int(n_threads)


def _outputs(x, dtype, back, labels, centroids, n_iter, verbose, converged):
    """Flash-KMeans's tuple in x's kind of array: int64 labels, centroids in x's dtype."""
    if verbose:
        for b, (n, c) in enumerate(zip(n_iter, converged)):
            print(f"member {b}: {n} iterations, {'converged' if c else 'stopped at max_iters'}")
    labels = labels.astype(np.int64)
    n_iters = int(np.max(n_iter))
    narrow = centroids.dtype != dtype  # 16-bit x, clustered in float32
    if back is not None:
        labels, centroids = back(labels), back(centroids)
    if narrow and isinstance(centroids, np.ndarray):
        centroids = centroids.astype(dtype)
    elif narrow:
        # Cast by x's library: numpy cannot hand bfloat16 over through DLPack.
        centroids = centroids.to(x.dtype) if hasattr(centroids, "to") else centroids.astype(x.dtype)
    return labels, centroids, n_iters


def _mean_variance(M):
    """The mean over features of the variance over rows of M (N, D): the scale flashkm's tol is
    relative to, in float64, a chunk of rows at a time."""
    mean = M.mean(axis=0, dtype=np.float64)
    total = 0.0
    for i in range(0, M.shape[0], _CHUNK_ROWS):
        total += float(np.sum((M[i:i + _CHUNK_ROWS] - mean) ** 2))
    return total / M.size


def _row_norms(M):
    """The Euclidean norm of every row of M (N, D), in float64, a chunk of rows at a time."""
    norms = np.empty(M.shape[0], dtype=np.float64)
    for i in range(0, M.shape[0], _CHUNK_ROWS):
        chunk = M[i:i + _CHUNK_ROWS].astype(np.float64)
        norms[i:i + _CHUNK_ROWS] = np.sqrt(np.einsum("ij,ij->i", chunk, chunk))
    return norms


def _batch(X, n_clusters, kind, C0, max_iters, tol, seed, threads, metric):
    res = _core.batch_fit(X, n_clusters, kind, C0, max_iter=max_iters, tol=tol, seed=seed,
                          n_threads=threads, metric=metric)
    return res["labels"], res["centroids"], res["n_iter"], res["converged"]


def batch_kmeans_Euclid(x, n_clusters, max_iters=100, tol=0.0, init_centroids=None, verbose=False, *,
                        use_heuristic=True, init="random", random_state=None, n_threads=None):
    """Lloyd k-means on every member x[b] of a (B, N, D) array (Flash-KMeans's signature).

    Parameters
    ----------
    x : array of shape (B, N, D)
        float32, float64, float16 or bfloat16; a torch tensor, JAX array, numpy array or any
        CPU array that speaks DLPack.
    n_clusters : int
    max_iters : int, default=100
    tol : float, default=0.0
        A member stops when the sum of its centroids' squared shifts is at most tol**2.
    init_centroids : array of B * n_clusters * D values, default=None
        Viewed as (B, n_clusters, D); None draws them by ``init``.
    verbose : bool, default=False
        Print each member's iteration count and whether it converged.
    use_heuristic : bool, default=True
        Flash-KMeans's Triton tuning switch; accepted and ignored.
    init : {'random', 'k-means++'}, default='random'
    random_state : int, RandomState instance or None, default=None
    n_threads : int or None, default=None
        None uses all cores. The result does not depend on it.

    Returns
    -------
    cluster_ids : (B, N) int64, centroids : (B, n_clusters, D) in x's dtype, n_iters : int
    """
    X, C0, back, dtype, seed, threads = _inputs(x, n_clusters, max_iters, tol, init, init_centroids,
                                                random_state, n_threads)
    kind = "explicit" if C0 is not None else init
    if tol == 0:
        labels, centroids, n_iter, converged = _batch(X, n_clusters, kind, C0, max_iters, 0.0, seed,
                                                      threads, "euclidean")
    else:
        # flashkm's tol is relative to each member's mean feature variance: one call a member.
        parts = []
        for b in range(X.shape[0]):
            scale = _mean_variance(X[b])
            rel = tol * tol / scale if scale > 0 else 0.0
            parts.append(_batch(X[b:b + 1], n_clusters, kind, None if C0 is None else C0[b:b + 1],
                                max_iters, rel, seed, threads, "euclidean"))
        labels, centroids, n_iter, converged = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return _outputs(x, dtype, back, labels, centroids, n_iter, verbose, converged)


def batch_kmeans_Cosine(x, n_clusters, max_iters=100, tol=0.0, init_centroids=None, verbose=False, *,
                        init="random", random_state=None, n_threads=None):
    """Spherical k-means on every member of a (B, N, D) array (Flash-KMeans's signature): rows
    and centroids normalised to unit length, a row goes to the centroid of largest cosine, a
    centroid is the unit direction of its rows' normalised sum; an empty cluster keeps its
    centroid. Arguments and result as ``batch_kmeans_Euclid``; the centroids have unit norm.
    """
    X, C0, back, dtype, seed, threads = _inputs(x, n_clusters, max_iters, tol, init, init_centroids,
                                                random_state, n_threads)
    kind = "explicit" if C0 is not None else init
    # On unit centroids flashkm's cosine tol is absolute: one call for every member.
    labels, centroids, n_iter, converged = _batch(X, n_clusters, kind, C0, max_iters, float(tol) ** 2,
                                                  seed, threads, "cosine")
    return _outputs(x, dtype, back, labels, centroids, n_iter, verbose, converged)


def batch_kmeans_Dot(x, n_clusters, max_iters=100, tol=0.0, init_centroids=None, verbose=False, *,
                     init="random", random_state=None, n_threads=None):
    """Flash-KMeans's inner-product k-means on every member of a (B, N, D) array: a row goes to
    the centroid of largest inner product x.c, a centroid is the unit direction of the sum of
    its (raw) rows; an empty cluster keeps its centroid. Arguments and result as
    ``batch_kmeans_Euclid``.

    The first assignment uses the initial centroids as given; after it every centroid has unit
    norm, so the largest x.c is the largest cosine and the update is spherical k-means with
    each row weighted by its norm: flashkm's cosine engine runs the remaining iterations.
    """
    X, C0, back, dtype, seed, threads = _inputs(x, n_clusters, max_iters, tol, init, init_centroids,
                                                random_state, n_threads)
    rs = check_random_state(seed)
    B, N, D = X.shape
    labels = np.empty((B, N), dtype=np.int32)
    centroids = np.empty((B, n_clusters, D), dtype=X.dtype)
    n_iter = np.ones(B, dtype=np.int32)
    converged = np.zeros(B, dtype=bool)
    for b in range(B):
        Xb = X[b]
        if C0 is not None:
            C = C0[b]
        elif init == "k-means++":
            member_seed = int(rs.randint(np.iinfo(np.int32).max))
            C = _core.kmeans_plusplus(Xb, n_clusters, None, member_seed, 0, threads)[0]
        else:
            C = Xb[np.sort(rs.choice(N, n_clusters, replace=False))]
        # One engine iteration by inner products from C as given: the means of its clusters
        # (an empty one keeps its centroid), then scaled to unit length.
        means = _core.fit(Xb, n_clusters, "explicit", np.ascontiguousarray(C), n_init=1, max_iter=1, tol=0.0,
                          seed=0, n_threads=threads, sample_weight=None, callback=None, target="",
                          metric="dot")["centroids"]
        C1 = _unit_rows(means)
        norms = _row_norms(Xb)
        if max_iters == 1 or not norms.any():
            labels[b] = _core.predict(Xb, C1, threads, "", "dot")
            centroids[b] = C1
            continue
        r = _core.fit(Xb, n_clusters, "explicit", C1, n_init=1, max_iter=max_iters - 1, tol=float(tol) ** 2,
                      seed=0, n_threads=threads, sample_weight=norms, callback=None, target="",
                      metric="cosine")
        labels[b], centroids[b] = r["labels"], r["centroids"]
        n_iter[b] += r["n_iter"]
        converged[b] = r["converged"]
    return _outputs(x, dtype, back, labels, centroids, n_iter, verbose, converged)


def _unit_rows(C):
    """The rows of C scaled to unit length in float64, back in C's dtype (zero rows stay zero)."""
    C64 = C.astype(np.float64)
    norms = np.linalg.norm(C64, axis=1, keepdims=True)
    return np.ascontiguousarray(C64 / np.where(norms > 0, norms, 1.0), dtype=C.dtype)
