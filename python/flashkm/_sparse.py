"""SciPy sparse input: CSR matrices handed to the engine's sparse kernels, and the engine calls
that take dense or sparse X alike (the estimators call these instead of ``_core`` directly).

A sparse X is validated by scikit-learn (``accept_sparse='csr'``: other formats are converted
once), then used in place: float32 / float64 data, int32 column indices (int64 ones are
narrowed, a copy) and an int64 copy of indptr (n + 1 values). A matrix that is not in
canonical form (unsorted or repeated column indices in a row) is copied once with its
duplicates summed, as SciPy's own arithmetic would treat them.
"""

import numpy as np
import scipy.sparse as sp

from . import _core

issparse = sp.issparse


def canonical(X):
    """X as a CSR matrix without repeated column indices in a row (a copy only if needed)."""
    if X.format != "csr":
        X = X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def astype(X, dtype):
    """X (dense or sparse) in the float type `dtype`, converted once if needed."""
    if issparse(X):
        X = canonical(X)
        return X if X.dtype == dtype else X.astype(dtype)
    return np.ascontiguousarray(X, dtype=dtype)


def _parts(X):
    """(data, indices, indptr, n_cols) of a CSR matrix as the engine takes them."""
    X = canonical(X)
    if X.shape[1] >= 2**31:
        raise ValueError(f"sparse X has {X.shape[1]} columns; at most 2**31 - 1 are supported")
    data = np.ascontiguousarray(X.data)
    indices = np.ascontiguousarray(X.indices, dtype=np.int32)
    indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
    return data, indices, indptr, X.shape[1]


def fit(X, n_clusters, init, centers, *, prune, **kwargs):
    """_core.fit, or its sparse twin for sparse X."""
    if issparse(X):
        return _core.fit_sparse(*_parts(X), n_clusters, init, centers, prune=prune, **kwargs)
    return _core.fit(X, n_clusters, init, centers, prune=prune, **kwargs)


def kmeans_plusplus(X, n_clusters, sample_weight, seed, n_local_trials, n_threads):
    if issparse(X):
        return _core.kmeans_plusplus_sparse(*_parts(X), n_clusters, sample_weight, seed, n_local_trials, n_threads)
    return _core.kmeans_plusplus(X, n_clusters, sample_weight, seed, n_local_trials, n_threads)


def predict(X, centers, n_threads, target, metric):
    if issparse(X):
        return _core.predict_sparse(*_parts(X), centers, n_threads, target, metric)
    return _core.predict(X, centers, n_threads, target, metric)


def transform(X, centers, n_threads, target, metric):
    if issparse(X):
        return _core.transform_sparse(*_parts(X), centers, n_threads, target, metric)
    return _core.transform(X, centers, n_threads, target, metric)


def score(X, centers, sample_weight, n_threads, target, metric):
    if issparse(X):
        return _core.score_sparse(*_parts(X), centers, sample_weight, n_threads, target, metric)
    return _core.score(X, centers, sample_weight, n_threads, target, metric)


def rows_dense(X):
    """Rows of X (dense or sparse) as a dense ndarray (for a few rows: new centers)."""
    return X.toarray() if issparse(X) else X


def mean_variance(X):
    """Mean over features of the variance of each column, in float64."""
    if issparse(X):
        from sklearn.utils.sparsefuncs import mean_variance_axis

        return float(np.mean(mean_variance_axis(canonical(X).astype(np.float64), axis=0)[1]))
    return float(np.mean(np.var(X, axis=0, dtype=np.float64)))


def unit_rows(X):
    """Rows scaled to unit L2 norm (all-zero rows stay zero) and which rows were non-zero."""
    if issparse(X):
        X = canonical(X)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel())
        nz = norms > 0
        scale = np.where(nz, 1.0 / np.where(nz, norms, 1.0), 0.0)
        return sp.csr_matrix(sp.diags(scale) @ X, dtype=X.dtype), nz
    norms = np.linalg.norm(X, axis=1)
    nz = norms > 0
    return X / np.where(nz, norms, 1.0)[:, None], nz


def segment_sums(rows, order, starts, ws):
    """Per segment s of the sorted order, the float64 sum of ws[t] * rows[order[t]] over
    positions t in [starts[s], starts[s + 1]) (in that order: deterministic)."""
    if issparse(rows):
        n_seg = len(starts)
        seg = np.repeat(np.arange(n_seg), np.diff(np.r_[starts, len(order)]))
        M = sp.csr_matrix((ws, (seg, order)), shape=(n_seg, rows.shape[0]), dtype=np.float64)
        return np.asarray((M @ canonical(rows).astype(np.float64)).toarray())
    return np.add.reduceat(rows[order] * ws[:, None], starts, axis=0, dtype=np.float64)
