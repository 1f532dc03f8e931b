"""What KMeans and MiniBatchKMeans share once fitted: centers queried through the engine."""

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _sparse
from ._arrays import accepts_dlpack


class _CentersMixin(TransformerMixin):
    """predict / transform / score against ``cluster_centers_`` in ``self.metric`` on the
    flashkm kernels, with ``n_threads``; float32 stays float32 and float64 stays float64.

    A TransformerMixin, so that scikit-learn wraps transform and fit_transform, defined here,
    for ``set_output``. X may be any CPU array that speaks DLPack (a torch tensor: labels and
    distances come back as torch tensors)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags

    def _threads(self):
        return 0 if self.n_threads is None else int(self.n_threads)

    def _validate_data(self, X, reset):
        # SciPy sparse input: CSR (other formats converted once), kept sparse.
        return validate_data(self, X, dtype=[np.float64, np.float32], order="C",
                             accept_sparse="csr", reset=reset)

    @staticmethod
    def _weights(sample_weight, X):
        # float64 for the kernels whatever X's type (they accumulate in float64).
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        return np.ascontiguousarray(sw, dtype=np.float64)

    def _test_data(self, X):
        check_is_fitted(self)
        X = self._validate_data(X, reset=False)
        # The engine takes one float type: X in the centroids' type (converted once if needed).
        return _sparse.astype(X, self.cluster_centers_.dtype)

    @accepts_dlpack
    def predict(self, X):
        """Index of the closest cluster center for each sample."""
        X = self._test_data(X)
        return _sparse.predict(X, self.cluster_centers_, self._threads(), "", self.metric)

    @accepts_dlpack
    def transform(self, X):
        """Distances of X to every cluster center (n_samples, n_clusters).

        Euclidean distances; with metric='cosine' the cosine distances 1 - cos(x, c), with
        metric='dot' the negated inner products -x.c (smaller is closer in every case).
        """
        return self._transform(X)

    def _transform(self, X):
        # Unwrapped by set_output, so that fit_transform's output is wrapped once.
        X = self._test_data(X)
        return _sparse.transform(X, self.cluster_centers_, self._threads(), "", self.metric)

    @accepts_dlpack
    def fit_transform(self, X, y=None, sample_weight=None):
        """Fit, then transform X."""
        return self.fit(X, sample_weight=sample_weight)._transform(X)

    @accepts_dlpack
    def score(self, X, y=None, sample_weight=None):
        """Opposite of the (weighted) inertia: sum of squared distances to the closest centers
        (metric='cosine': sum of 1 - cos; metric='dot': minus the sum of x.c)."""
        X = self._test_data(X)
        sw = None if sample_weight is None else self._weights(sample_weight, X)
        return float(_sparse.score(X, self.cluster_centers_, sw, self._threads(), "", self.metric))
