"""flashkm.MiniBatchKMeans: scikit-learn's MiniBatchKMeans, assignments on the flashkm kernels."""

import numbers
import os
import warnings

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from . import _sparse
from ._arrays import accepts_dlpack, as_numpy
from ._centers import _CentersMixin

# Multiply-adds (rows x clusters x features) that repay starting one more kernel thread.
_WORK_PER_THREAD = 1 << 24


class MiniBatchKMeans(_CentersMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin,
                      BaseEstimator):
    """Mini-batch k-means (scikit-learn compatible) on the flashkm kernels.

    The algorithm is scikit-learn's (Sculley, "Web-scale k-means clustering", WWW 2010, with
    scikit-learn's early stopping and reassignment rules): every step assigns a random
    mini-batch to its nearest centers and moves each center to the running (weighted) mean of
    all points it has received. Assignments, inertias, ``predict``, ``transform`` and ``score``
    run on flashkm's compiled kernels (FlashAssign); the per-step center update is a
    deterministic sorted segment sum in numpy.

    Parameters are scikit-learn's ``MiniBatchKMeans`` parameters with the same defaults and
    meaning, plus ``n_threads`` and ``metric``.

    Parameters
    ----------
    n_clusters : int, default=8
    init : {'k-means++', 'random'}, callable or array-like of shape (n_clusters, n_features), \
            default='k-means++'
        Computed on a random subset of ``init_size`` rows, as scikit-learn does: 'k-means++'
        runs the flashkm engine's greedy k-means++ (scikit-learn's semantics) and 'random' draws
        distinct rows by weight; the seeds are the centers, with no Lloyd step on the subset. A
        callable is called as ``init(X_subset, n_clusters, random_state=random_state)``.
    max_iter : int, default=100
        Passes over the data: at most ``max_iter * n_samples // batch_size`` steps.
    batch_size : int, default=1024
    verbose : int, default=0
    compute_labels : bool, default=True
        Assign the whole data set once the steps are done (``labels_``, exact ``inertia_``).
    random_state : int, RandomState instance or None, default=None
        Seeds the init subsets, the seeding, the batches and the reassignments.
    tol : float, default=0.0
        Stop when the sum of squared center changes of one step is at most ``tol`` times the
        mean per-feature variance of X (absolute on the unit centers for metric='cosine').
        0 disables this test.
    max_no_improvement : int or None, default=10
        Stop after this many steps without a new minimum of the exponentially weighted
        average of the mean batch inertia. None disables this test.
    init_size : int or None, default=None
        Rows for the initialisation; None means ``3 * batch_size`` (at least
        ``3 * n_clusters``), never more than n_samples.
    n_init : 'auto' or int, default='auto'
        Initialisations tried; the one with the lowest inertia on a random validation subset
        of ``init_size`` rows is kept and run once. 'auto' is 1 for 'k-means++' and arrays,
        3 for 'random' and callables.
    reassignment_ratio : float, default=0.01
        Centers whose accumulated weight is below this fraction of the largest are moved to
        random rows of the batch (every ``10 * n_clusters`` rows seen, or when one is empty).
    n_threads : int or None, default=None
        Threads for the kernels; None uses all cores. Results do not depend on it.
    metric : {'euclidean', 'cosine', 'dot'}, default='euclidean'
        The kernels' metric, as in ``flashkm.KMeans``. 'cosine' is online spherical k-means:
        batch rows are L2-normalised before they enter the running means (all-zero rows pull
        no center), and the centers are re-normalised to unit length after each step, so a
        center is the direction of its accumulated mean. 'dot' assigns by the largest inner
        product and keeps plain running means.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features), X's float dtype
    labels_ : ndarray of shape (n_samples,), int32
        Labels of the data of the last ``fit`` / ``partial_fit`` (when compute_labels).
    inertia_ : float
        Inertia of those labels (in the metric, as ``flashkm.KMeans``), or when
        compute_labels=False the smoothed mean batch inertia times the total weight.
    n_iter_ : int
        Passes over the data set started by ``fit``.
    n_steps_ : int
        Mini-batches processed.
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when X has feature names
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "init": [StrOptions({"k-means++", "random"}), callable, "array-like"],
        "n_init": [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "compute_labels": ["boolean"],
        "max_no_improvement": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "init_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "reassignment_ratio": [Interval(numbers.Real, 0, None, closed="left")],
        "n_threads": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "metric": [StrOptions({"euclidean", "cosine", "dot"})],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        max_iter=100,
        batch_size=1024,
        verbose=0,
        compute_labels=True,
        random_state=None,
        tol=0.0,
        max_no_improvement=10,
        init_size=None,
        n_init="auto",
        reassignment_ratio=0.01,
        n_threads=None,
        metric="euclidean",
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.compute_labels = compute_labels
        self.random_state = random_state
        self.tol = tol
        self.max_no_improvement = max_no_improvement
        self.init_size = init_size
        self.n_init = n_init
        self.reassignment_ratio = reassignment_ratio
        self.n_threads = n_threads
        self.metric = metric

    # -- helpers ---------------------------------------------------------------------------
    def _batch_threads(self, n_rows, n_features):
        """Threads for one batch's kernel calls: a call pays a thread start-up of the order of
        milliseconds, more than a default batch's whole assignment (1024 x 8 x D multiply-adds
        take microseconds), so small batches run on one thread. Results do not depend on it."""
        most = self.n_threads or os.cpu_count() or 1
        return int(max(1, min(most, n_rows * self.n_clusters * n_features // _WORK_PER_THREAD)))

    def _check_params_vs_input(self, X):
        """Per-data settings, as scikit-learn derives them (n_init, batch and init sizes, tol)."""
        n_samples = X.shape[0]
        if n_samples < self.n_clusters:
            raise ValueError(f"n_samples={n_samples} should be >= n_clusters={self.n_clusters}.")
        array_init = not (isinstance(self.init, str) or callable(self.init))
        if self.n_init == "auto":
            self._n_init = 1 if array_init or self.init == "k-means++" else 3
        else:
            self._n_init = int(self.n_init)
        if array_init and self._n_init != 1:
            warnings.warn(
                "Explicit initial center position passed: performing only one init in "
                f"MiniBatchKMeans instead of n_init={self._n_init}.", RuntimeWarning, stacklevel=3)
            self._n_init = 1
        self._batch_size = min(self.batch_size, n_samples)
        init_size = self.init_size
        if init_size is None:
            init_size = 3 * self._batch_size
            if init_size < self.n_clusters:
                init_size = 3 * self.n_clusters
        elif init_size < self.n_clusters:
            warnings.warn(
                f"init_size={init_size} should be larger than n_clusters={self.n_clusters}. "
                "Setting it to min(3*n_clusters, n_samples)", RuntimeWarning, stacklevel=3)
            init_size = 3 * self.n_clusters
        self._init_size = min(init_size, n_samples)
        # Unit centers under cosine: the change is measured in absolute terms (as flashkm.KMeans).
        if self.tol == 0 or self.metric == "cosine":
            self._tol = float(self.tol)
        else:
            self._tol = float(_sparse.mean_variance(X) * self.tol)

    def _unit_rows(self, C):
        """Cosine: rows scaled to unit length (all-zero rows stay zero); other metrics: as is."""
        if self.metric != "cosine":
            return C
        norms = np.linalg.norm(C, axis=1, keepdims=True)
        return C / np.where(norms > 0, norms, 1.0)

    def _init_centroids(self, X, sample_weight, random_state):
        """Centers from a random subset of init_size rows (scikit-learn's _init_centroids)."""
        n_samples = X.shape[0]
        if self._init_size < n_samples:
            idx = random_state.randint(0, n_samples, self._init_size)
            X, sample_weight = X[idx], sample_weight[idx]
        if isinstance(self.init, str) and not sample_weight.sum() > 0:
            sample_weight = np.ones_like(sample_weight)  # a subset of zero weights: uniform
        if isinstance(self.init, str) and self.init == "k-means++":
            # As scikit-learn: the seeds themselves, no Lloyd step.
            seed = int(random_state.randint(np.iinfo(np.int32).max))
            centers, _ = _sparse.kmeans_plusplus(X, self.n_clusters, np.ascontiguousarray(sample_weight), seed, 0,
                                               self._batch_threads(*X.shape))
            return np.ascontiguousarray(self._unit_rows(centers), dtype=X.dtype)
        if isinstance(self.init, str) and self.init == "random":
            # scikit-learn's draw: distinct rows with probability proportional to their weight.
            seeds = random_state.choice(X.shape[0], size=self.n_clusters, replace=False,
                                        p=sample_weight / sample_weight.sum())
            return np.ascontiguousarray(self._unit_rows(_sparse.rows_dense(X[seeds])), dtype=X.dtype)
        if callable(self.init):
            centers = self.init(X, self.n_clusters, random_state=random_state)
        else:
            centers = self.init
        centers = check_array(as_numpy(centers, "init")[0], dtype=X.dtype, copy=True, order="C")
        if centers.shape != (self.n_clusters, X.shape[1]):
            raise ValueError(
                f"The shape of the initial centers {centers.shape} does not match "
                f"the number of clusters {self.n_clusters} and features {X.shape[1]}."
            )
        return np.ascontiguousarray(self._unit_rows(centers), dtype=X.dtype)

    def _random_reassign(self):
        """Reassign every 10 * n_clusters rows seen, or at once while a center is empty."""
        self._n_since_last_reassign += self._batch_size
        if (self._counts == 0).any() or self._n_since_last_reassign >= 10 * self.n_clusters:
            self._n_since_last_reassign = 0
            return True
        return False

    def _step(self, X, sample_weight, centers, random_state, random_reassign):
        """One mini-batch step on the batch X (scikit-learn's _mini_batch_step).

        Assigns X with the kernels, moves each center that received weight to the running mean
        of all the weight it has received, then (when asked) moves low-count centers to random
        batch rows. Updates ``centers`` and ``self._counts`` in place; returns the batch's
        inertia against the centers before the update.
        """
        threads = self._batch_threads(*X.shape)
        labels = _sparse.predict(X, centers, threads, "", self.metric)
        inertia = -_sparse.score(X, centers, sample_weight, threads, "", self.metric)

        rows, w = X, sample_weight
        if self.metric == "cosine":
            # Spherical k-means: normalised rows enter the means; zero rows pull nothing.
            rows, nz = _sparse.unit_rows(X)
            w = np.where(nz, sample_weight, 0.0)
        # Segment sums over the labels sorted once: deterministic, float64 accumulation.
        order = np.argsort(labels, kind="stable")
        sorted_labels = labels[order]
        starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
        hit = sorted_labels[starts]
        ws = w[order]
        wsum = np.add.reduceat(ws, starts)
        sums = _sparse.segment_sums(rows, order, starts, ws)
        moved = wsum > 0
        hit, wsum, sums = hit[moved], wsum[moved], sums[moved]
        counts = self._counts[hit] + wsum
        means = (centers[hit] * self._counts[hit, None] + sums) / counts[:, None]
        centers[hit] = self._unit_rows(means)
        self._counts[hit] = counts

        if random_reassign and self.reassignment_ratio > 0:
            to_reassign = self._counts < self.reassignment_ratio * self._counts.max()
            # At most half the batch becomes new centers; the largest counts are kept.
            if to_reassign.sum() > 0.5 * X.shape[0]:
                to_reassign[np.argsort(self._counts)[int(0.5 * X.shape[0]):]] = False
            n_reassigns = int(to_reassign.sum())
            if n_reassigns:
                picked = random_state.choice(X.shape[0], replace=False, size=n_reassigns)
                if self.verbose:
                    print(f"[MiniBatchKMeans] Reassigning {n_reassigns} cluster centers.")
                centers[to_reassign] = self._unit_rows(_sparse.rows_dense(X[picked]))
            # Not back to zero, so that they are not reassigned at once (scikit-learn's rule;
            # it also sets their learning rate).
            self._counts[to_reassign] = np.min(self._counts[~to_reassign])
        return inertia

    def _converged(self, step, n_steps, n_samples, centers_squared_diff, batch_inertia):
        """scikit-learn's early stopping: center change within tol, or max_no_improvement
        steps without a new minimum of the smoothed mean batch inertia."""
        batch_inertia /= self._batch_size
        step += 1
        # The first batch's inertia is that of the initial centers.
        if step == 1:
            if self.verbose:
                print(f"Minibatch step {step}/{n_steps}: mean batch inertia: {batch_inertia}")
            return False
        if self._ewa_inertia is None:
            self._ewa_inertia = batch_inertia
        else:
            alpha = min(self._batch_size * 2.0 / (n_samples + 1), 1.0)
            self._ewa_inertia = self._ewa_inertia * (1 - alpha) + batch_inertia * alpha
        if self.verbose:
            print(f"Minibatch step {step}/{n_steps}: mean batch inertia: {batch_inertia}, "
                  f"ewa inertia: {self._ewa_inertia}")
        if self._tol > 0.0 and centers_squared_diff <= self._tol:
            if self.verbose:
                print(f"Converged (small centers change) at step {step}/{n_steps}")
            return True
        if self._ewa_inertia_min is None or self._ewa_inertia < self._ewa_inertia_min:
            self._no_improvement = 0
            self._ewa_inertia_min = self._ewa_inertia
        else:
            self._no_improvement += 1
        if self.max_no_improvement is not None and self._no_improvement >= self.max_no_improvement:
            if self.verbose:
                print(f"Converged (lack of improvement in inertia) at step {step}/{n_steps}")
            return True
        return False

    # -- scikit-learn API ----------------------------------------------------------------
    @accepts_dlpack
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Compute the centers of X (n_samples, n_features) from mini-batches.

        Batches are drawn with replacement with probability proportional to sample_weight
        and then count with unit weight (as in scikit-learn). SciPy sparse X stays sparse
        (CSR): batches are assigned by the sparse kernels and their sums taken over the
        non-zeros.
        """
        X = self._validate_data(X, reset=True)
        self._check_params_vs_input(X)
        random_state = check_random_state(self.random_state)
        sample_weight = self._weights(sample_weight, X)
        total_weight = float(sample_weight.sum())
        n_samples = X.shape[0]
        threads = self._threads()

        # The n_init initialisations are compared on one validation subset.
        valid = random_state.randint(0, n_samples, self._init_size)
        X_valid, sw_valid = X[valid], sample_weight[valid]
        best_inertia = None
        for init_idx in range(self._n_init):
            if self.verbose:
                print(f"Init {init_idx + 1}/{self._n_init} with method {self.init}")
            candidate = self._init_centroids(X, sample_weight, random_state)
            threads_valid = self._batch_threads(*X_valid.shape)
            inertia = -_sparse.score(X_valid, candidate, sw_valid, threads_valid, "", self.metric)
            if self.verbose:
                print(f"Inertia for init {init_idx + 1}/{self._n_init}: {inertia}")
            if best_inertia is None or inertia < best_inertia:
                centers, best_inertia = candidate, inertia

        centers = np.array(centers, dtype=X.dtype, order="C")
        self._counts = np.zeros(self.n_clusters, dtype=np.float64)
        self._ewa_inertia = None
        self._ewa_inertia_min = None
        self._no_improvement = 0
        self._n_since_last_reassign = 0

        n_steps = (self.max_iter * n_samples) // self._batch_size
        # Inverse-CDF draws, exactly as RandomState.choice(p=sample_weight / total) makes them
        # (the same numbers from the same stream), with the CDF built once instead of per step.
        cdf = np.cumsum(sample_weight / total_weight)
        cdf /= cdf[-1]
        unit = np.ones(self._batch_size, dtype=np.float64)
        batch_inertia = 0.0
        for i in range(n_steps):
            batch = cdf.searchsorted(random_state.random_sample(self._batch_size), side="right")
            previous = centers.copy() if self._tol > 0.0 else None
            batch_inertia = self._step(X[batch], unit, centers, random_state,
                                       self._random_reassign())
            diff = 0.0
            if previous is not None:
                diff = float(np.sum((centers - previous) ** 2, dtype=np.float64))
            if self._converged(i, n_steps, n_samples, diff, batch_inertia):
                break

        self.cluster_centers_ = centers
        self._n_features_out = self.n_clusters
        self.n_steps_ = i + 1
        self.n_iter_ = int(np.ceil((i + 1) * self._batch_size / n_samples))
        if self.compute_labels:
            self.labels_ = _sparse.predict(X, centers, threads, "", self.metric)
            self.inertia_ = -float(_sparse.score(X, centers, sample_weight, threads, "", self.metric))
        else:
            # A single step leaves no smoothed value: its own mean batch inertia stands in.
            ewa = self._ewa_inertia
            if ewa is None:
                ewa = batch_inertia / self._batch_size
            self.inertia_ = float(ewa * total_weight)
        return self

    @accepts_dlpack
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """One mini-batch step on X (initialising on X first when not yet fitted)."""
        has_centers = hasattr(self, "cluster_centers_")
        X = self._validate_data(X, reset=not has_centers)
        self._random_state = getattr(self, "_random_state", check_random_state(self.random_state))
        sample_weight = self._weights(sample_weight, X)
        self.n_steps_ = getattr(self, "n_steps_", 0)
        if not has_centers:
            self._check_params_vs_input(X)
            centers = self._init_centroids(X, sample_weight, self._random_state)
            self.cluster_centers_ = np.array(centers, dtype=X.dtype, order="C")
            self._counts = np.zeros(self.n_clusters, dtype=np.float64)
            self._n_since_last_reassign = 0
        # The centers keep the type of the first data; later chunks are converted to it.
        X = _sparse.astype(X, self.cluster_centers_.dtype)
        self._step(X, sample_weight, self.cluster_centers_, self._random_state,
                   self._random_reassign())
        if self.compute_labels:
            threads = self._threads()
            self.labels_ = _sparse.predict(X, self.cluster_centers_, threads, "", self.metric)
            self.inertia_ = -float(
                _sparse.score(X, self.cluster_centers_, sample_weight, threads, "", self.metric))
        self.n_steps_ += 1
        self._n_features_out = self.n_clusters
        return self

    @accepts_dlpack
    def fit_predict(self, X, y=None, sample_weight=None):
        """Compute the centers and the cluster index of each sample."""
        self.fit(X, sample_weight=sample_weight)
        return self.labels_ if self.compute_labels else self.predict(X)
