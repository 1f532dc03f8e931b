"""Seeds on their own: scikit-learn's ``kmeans_plusplus`` on the flashkm engine."""

import numbers

import numpy as np
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, validate_params
from sklearn.utils.validation import _check_sample_weight

from . import _sparse


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "sample_weight": ["array-like", None],
        "x_squared_norms": ["array-like", None],
        "random_state": ["random_state"],
        "n_local_trials": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def kmeans_plusplus(X, n_clusters, *, sample_weight=None, x_squared_norms=None, random_state=None,
                    n_local_trials=None, n_threads=None):
    """Initial centers by greedy k-means++, as ``sklearn.cluster.kmeans_plusplus``.

    The seeding ``KMeans(init='k-means++')`` runs: 2 + log(n_clusters) candidates per step
    (``n_local_trials``), the one that lowers the potential most kept; weighted by
    ``sample_weight``. The engine keeps each row's closest distance and skips the rows that
    triangle-inequality and norm bounds prove a candidate cannot bring closer; the rows chosen
    are those of the plain computation, for any ``n_threads``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features), float32 or float64
        A sparse matrix is seeded as CSR, without densifying it.
    n_clusters : int
    sample_weight : array-like of shape (n_samples,), default=None
    x_squared_norms : array-like of shape (n_samples,), default=None
        Accepted for compatibility (its length is checked); flashkm computes what it needs.
    random_state : int, RandomState instance or None, default=None
    n_local_trials : int, default=None
        Candidates per step; None is 2 + int(log(n_clusters)).
    n_threads : int, default=None
        Threads for the engine; None uses all cores. The result does not depend on it.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features), X's dtype
        Copies of the chosen rows (dense).
    indices : ndarray of shape (n_clusters,), int64
        The chosen rows, in the order they were chosen.
    """
    X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32], order="C")
    sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if X.shape[0] < n_clusters:
        raise ValueError(f"n_samples={X.shape[0]} should be >= n_clusters={n_clusters}.")
    if x_squared_norms is not None:
        x_squared_norms = check_array(x_squared_norms, dtype=X.dtype, ensure_2d=False)
        if x_squared_norms.shape[0] != X.shape[0]:
            raise ValueError(
                f"The length of x_squared_norms {x_squared_norms.shape[0]} should "
                f"be equal to the length of n_samples {X.shape[0]}.")
    random_state = check_random_state(random_state)
    seed = int(random_state.randint(np.iinfo(np.int32).max))
    return _sparse.kmeans_plusplus(X, int(n_clusters), np.ascontiguousarray(sample_weight), seed,
                                 0 if n_local_trials is None else int(n_local_trials),
                                 0 if n_threads is None else int(n_threads))
