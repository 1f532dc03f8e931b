"""flashkm.KMeans: scikit-learn's KMeans interface over the flashkm C++ engine."""

import numbers
import warnings

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core, _sparse
from ._arrays import accepts_dlpack, as_numpy
from ._centers import _CentersMixin


def _half_kind(X):
    """'float16' or 'bfloat16' (ml_dtypes) for a 2-D ndarray of 16-bit floats, else None."""
    if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.itemsize == 2:
        if X.dtype == np.float16:
            return "float16"
        if X.dtype.name == "bfloat16":
            return "bfloat16"
    return None


class KMeans(_CentersMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, BaseEstimator):
    """Exact Lloyd k-means (scikit-learn compatible).

    Parameters are scikit-learn's ``KMeans`` parameters with the same defaults and meaning,
    plus ``n_threads``.

    Parameters
    ----------
    n_clusters : int, default=8
        Number of clusters.
    init : {'k-means++', 'k-means||', 'random'}, callable or array-like of shape \
            (n_clusters, n_features), default='k-means++'
        'k-means++' is scikit-learn's greedy k-means++ (2 + log(k) trials per step);
        'k-means||' is Bahmani et al.'s k-means|| (``init_rounds`` rounds each drawing about
        ``init_oversampling * n_clusters`` rows, then weighted greedy k-means++ on the drawn rows):
        much faster for large n_clusters, the same for any number of threads;
        'random' draws n_clusters distinct rows (weighted by sample_weight); a callable is
        called as ``init(X, n_clusters, random_state)`` and must return the centroids.
    n_init : 'auto' or int, default='auto'
        Runs from different initialisations; the lowest inertia wins. 'auto' is 1 for
        'k-means++', 'k-means||' and array-like init, 10 for 'random' and callables.
    max_iter : int, default=300
    tol : float, default=1e-4
        Relative tolerance: stop when the sum of squared centroid shifts is at most
        ``tol`` times the mean per-feature variance of X.
    init_rounds : int, default=5
        k-means||: rounds of drawing (at least 1). Not used by 'k-means++' and 'random' here
        (flashkm.mpi.KMeans seeds k-means++ with k-means|| for n_clusters > 1024).
    init_oversampling : float, default=2.0
        k-means||: rows drawn per round, as a multiple of n_clusters (more than 0); as
        ``init_rounds``, for k-means|| only.
    verbose : int, default=0
        Print seeding progress (steps done, seconds so far and left) and per-iteration
        progress.
    random_state : int, RandomState instance or None, default=None
    copy_x : bool, default=True
        Accepted for compatibility; flashkm never modifies X (it centres inside its kernels).
    algorithm : {'lloyd', 'elkan'}, default='lloyd'
        'elkan' is accepted for scikit-learn compatibility and means ``prune=True``.
    n_threads : int or None, default=None
        Threads for the engine; None uses all cores. Results do not depend on it.
    prune : {'auto', True, False}, default='auto'
        Skip the point-centroid distances that triangle-inequality bounds prove useless
        (one lower bound per centroid, Elkan's, where they fit in a row of X; else one per group
        of centroids, Yinyang's; survivors scored at GEMM speed). Changes the speed, never the result:
        labels, centers, inertia, n_iter and history are bitwise those of ``prune=False``
        (only ``history_[i]['distances']`` and ``'seconds'`` differ). 'auto' prunes dense X
        where the bounds fit in X's own memory and n_clusters * n_features >= 2048 (below
        that a row's bound upkeep costs about as much as its distances), from the iteration
        after the first that changed at most 5% of the labels (``True`` bounds from the
        first; bounds set while the centers still move far loosen), and leaves sparse X
        unpruned (the bounds did not
        pay on the sparse data measured; ``True`` prunes it); ``True`` is refused with
        metric='dot' (inner products have no triangle inequality), which 'auto' runs unpruned.
    metric : {'euclidean', 'cosine', 'dot'}, default='euclidean'
        'euclidean' is Lloyd's k-means. 'cosine' is spherical k-means: the largest cosine
        similarity wins, centers are the unit-norm mean directions of the normalised rows,
        all-zero rows go to cluster 0 without moving it, inertia_ is sum w (1 - cos) and tol
        is absolute on the unit centers. 'dot' assigns by the largest inner product x.c with
        mean centers (not normalised) and inertia_ = -sum w x.c. Under 'cosine' and 'dot' an
        empty cluster keeps its center.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features), X's float dtype
    labels_ : ndarray of shape (n_samples,), int32
    inertia_ : float
    n_iter_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has feature names
    history_ : list of dict
        Per iteration of the kept run: inertia, center_shift, labels_changed,
        empty_relocated, seconds, distances (point-centroid distances computed: n_samples *
        n_clusters without pruning).
    init_seconds_ : float
        Wall time of the seeding (k-means++, k-means|| or random), all n_init runs together.
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "k-means||", "random"}), callable, "array-like"],
        "n_init": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "copy_x": ["boolean"],
        "algorithm": [StrOptions({"lloyd", "elkan"})],
        "prune": [StrOptions({"auto"}), "boolean"],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "metric": [StrOptions({"euclidean", "cosine", "dot"})],
        "init_rounds": [Interval(numbers.Integral, 1, None, closed="left")],
        "init_oversampling": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        verbose=0,
        random_state=None,
        copy_x=True,
        algorithm="lloyd",
        n_threads=None,
        metric="euclidean",
        prune="auto",
        init_rounds=5,
        init_oversampling=2.0,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.copy_x = copy_x
        self.algorithm = algorithm
        self.metric = metric
        self.n_threads = n_threads
        self.prune = prune
        self.init_rounds = init_rounds
        self.init_oversampling = init_oversampling

    # -- helpers ---------------------------------------------------------------------------
    def _prune(self):
        if self.algorithm == "elkan":
            if self.prune is False:
                raise ValueError("algorithm='elkan' means prune=True; it contradicts prune=False")
            return "on"
        if isinstance(self.prune, str):
            return self.prune
        return "on" if self.prune else "off"

    def _n_init(self):
        if self.n_init != "auto":
            return int(self.n_init)
        if isinstance(self.init, str) and self.init == "random" or callable(self.init):
            return 10
        return 1

    def _check_centroids(self, centers, X):
        dtype = np.float32 if _half_kind(X) else X.dtype
        centers = np.ascontiguousarray(np.asarray(as_numpy(centers, "init")[0], dtype=dtype))
        if centers.shape != (self.n_clusters, X.shape[1]):
            raise ValueError(
                f"The shape of the initial centers {centers.shape} does not match "
                f"the number of clusters {self.n_clusters} and features {X.shape[1]}."
            )
        if not np.all(np.isfinite(centers)):
            raise ValueError("The initial centers contain NaN or infinity.")
        return centers

    def _seed_callback(self):
        if not self.verbose:
            return None

        def report(stats):
            # About ten lines per phase: steps done, time so far and left.
            step = max(1, stats["total"] // 10)
            if stats["done"] % step == 0 or stats["done"] == stats["total"]:
                print(f"Seeding ({stats['phase']}): {stats['done']}/{stats['total']}, "
                      f"{stats['seconds']:.2f} s, about {stats['seconds_left']:.2f} s left.")

        return report

    def _callback(self):
        if not self.verbose:
            return None

        def report(stats):
            if stats["iteration"] == 1:
                print("Initialization complete")
            print(f"Iteration {stats['iteration'] - 1}, inertia {stats['inertia']}.")

        return report

    # -- scikit-learn API ----------------------------------------------------------------
    @accepts_dlpack
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Compute k-means clustering of X (n_samples, n_features).

        float16 and bfloat16 (ml_dtypes) arrays are clustered without a widened copy: rows are
        converted to float32 a chunk at a time inside the engine; cluster_centers_ is float32.
        SciPy sparse matrices are clustered as CSR without densifying them (sparse FlashAssign;
        rows are not centred and prune does not apply).
        """
        half = _half_kind(X)
        X16 = None
        if half:
            # Validate the feature count on one widened row; the engine checks the values.
            X16 = np.ascontiguousarray(X)
            validate_data(self, X16[:1].astype(np.float32), reset=True)
            X = X16
        else:
            X = self._validate_data(X, reset=True)
        n_samples = X.shape[0]
        if n_samples < self.n_clusters:
            raise ValueError(f"n_samples={n_samples} should be >= n_clusters={self.n_clusters}.")
        sw = None if sample_weight is None else self._weights(sample_weight, X)
        rs = check_random_state(self.random_state)
        n_init = self._n_init()
        common = dict(max_iter=self.max_iter, tol=float(self.tol), n_threads=self._threads(),
                      sample_weight=sw, callback=self._callback(), target="", metric=self.metric,
                      prune=self._prune(), seed_callback=self._seed_callback(),
                      init_rounds=int(self.init_rounds), init_oversampling=float(self.init_oversampling))
        def engine_fit(init, centers, n_init, seed):
            if half:
                return _core.fit_half(X16.view(np.uint16), half, self.n_clusters, init, centers,
                                      n_init=n_init, seed=seed, **common)
            return _sparse.fit(X, self.n_clusters, init, centers, n_init=n_init, seed=seed, **common)

        if isinstance(self.init, str):
            seed = int(rs.randint(np.iinfo(np.int32).max))
            res = engine_fit(self.init, None, n_init, seed)
        else:
            # Explicit or callable init: one engine run per initialisation, the best kept.
            runs = 1 if not callable(self.init) else n_init
            if not callable(self.init) and n_init != 1:
                warnings.warn(
                    "Explicit initial center position passed: performing only one init in "
                    f"KMeans instead of n_init={n_init}.", RuntimeWarning, stacklevel=2)
            res = None
            for _ in range(runs):
                centers = self.init(X, self.n_clusters, rs) if callable(self.init) else self.init
                centers = self._check_centroids(centers, X)
                r = engine_fit("explicit", centers, 1, 0)
                if res is None or r["inertia"] < res["inertia"]:
                    res = r
        if self.verbose:
            reason = {"strict": "strict convergence",
                      "tolerance": "center shift within tolerance"}.get(res["stop_reason"])
            if reason:
                print(f"Converged at iteration {res['n_iter'] - 1}: {reason}.")
        self.cluster_centers_ = res["centroids"]
        self.labels_ = res["labels"]
        self.inertia_ = float(res["inertia"])
        self.n_iter_ = int(res["n_iter"])
        best = res["best_init"]
        self.history_ = [h for h in res["history"] if h["init_run"] == best]
        self.init_seconds_ = float(res["init_seconds"])
        self._n_features_out = self.cluster_centers_.shape[0]
        return self

    @accepts_dlpack
    def predict(self, X):
        """Index of the closest cluster center for each sample (16-bit X without a copy)."""
        half = _half_kind(X)
        if half:
            check_is_fitted(self)
            X16 = np.ascontiguousarray(X)
            validate_data(self, X16[:1].astype(np.float32), reset=False)
            return _core.predict_half(X16.view(np.uint16), half, self.cluster_centers_.astype(np.float32),
                                      self._threads(), "", self.metric)
        return super().predict(X)

    @accepts_dlpack
    def fit_predict(self, X, y=None, sample_weight=None):
        """Compute cluster centers and predict the cluster index of each sample."""
        return self.fit(X, sample_weight=sample_weight).labels_
