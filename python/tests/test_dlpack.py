"""Arrays of other libraries through DLPack: read in place, results in the caller's kind of
array, equal to the numpy path's; 16-bit floats (JAX bfloat16 / float16); devices refused.

``Tensor`` below is a minimal DLPack producer of its own library (this module, whose
``from_dlpack`` makes Tensors), standing for PyTorch, whose CUDA-sized wheel is no test
dependency; JAX (CPU) is the real library tested, bfloat16 included.
"""

import gc
import tracemalloc
import weakref

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_blobs

import flashkm
from flashkm._arrays import as_numpy


class Tensor:
    """An array of another library: only DLPack, no __array__ (so numpy cannot read it)."""

    def __init__(self, array, device=(1, 0)):
        self._array = array
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device

    def numpy(self):
        return self._array


def from_dlpack(x):
    """This module's from_dlpack: what flashkm hands results back through."""
    return Tensor(np.from_dlpack(x))


def blobs(n=3000, d=8, k=5, dtype=np.float32, seed=0):
    X, _ = make_blobs(n, d, centers=k, cluster_std=1.0, random_state=seed)
    return X.astype(dtype)


def peak_python_allocation(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("estimator", [flashkm.KMeans, flashkm.MiniBatchKMeans])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_every_method_equals_the_numpy_path(estimator, dtype):
    X = blobs(dtype=dtype)
    sw = np.random.default_rng(1).uniform(0.5, 2, len(X))
    ref = estimator(5, n_init=1, random_state=0).fit(X, sample_weight=sw)
    km = estimator(5, n_init=1, random_state=0).fit(Tensor(X), sample_weight=Tensor(sw))
    np.testing.assert_array_equal(km.cluster_centers_, ref.cluster_centers_)
    assert type(km.cluster_centers_) is np.ndarray and type(km.labels_) is np.ndarray  # fitted: numpy
    for method in ("predict", "transform"):
        out = getattr(km, method)(Tensor(X[:700]))
        assert isinstance(out, Tensor)
        np.testing.assert_array_equal(out.numpy(), getattr(ref, method)(X[:700]))
    assert km.score(Tensor(X), sample_weight=Tensor(sw)) == ref.score(X, sample_weight=sw)
    labels = estimator(5, n_init=1, random_state=0).fit_predict(Tensor(X), sample_weight=sw)
    assert isinstance(labels, Tensor) and labels.numpy().dtype == np.int32
    np.testing.assert_array_equal(labels.numpy(), ref.labels_)
    dist = estimator(5, n_init=1, random_state=0).fit_transform(Tensor(X), None, sw)
    assert isinstance(dist, Tensor)
    np.testing.assert_array_equal(dist.numpy(), ref.transform(X))
    if estimator is flashkm.MiniBatchKMeans:
        a = estimator(5, random_state=0).partial_fit(Tensor(X[:1000])).partial_fit(Tensor(X[1000:]))
        b = estimator(5, random_state=0).partial_fit(X[:1000]).partial_fit(X[1000:])
        np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)


@pytest.mark.parametrize("n, d, k", [(1, 1, 1), (7, 3, 2), (33, 17, 5), (129, 31, 9), (64, 129, 3)])
def test_awkward_shapes_and_layouts(n, d, k):
    rng = np.random.default_rng(n * d)
    X = rng.integers(-8, 9, size=(n, d)).astype(np.float32)
    C0 = X[:k].copy() if n >= k else None
    for layout in (X, np.asfortranarray(X), np.repeat(X, 3, axis=1)[:, ::3], X[::-1][::-1]):
        assert np.array_equal(layout, X)
        ours = flashkm.KMeans(k, init=C0, n_init=1).fit(Tensor(layout))
        ref = flashkm.KMeans(k, init=C0, n_init=1).fit(X)
        np.testing.assert_array_equal(ours.cluster_centers_, ref.cluster_centers_)
        np.testing.assert_array_equal(ours.predict(Tensor(layout)).numpy(), ref.labels_)


def test_read_in_place_and_handed_back():
    a = np.arange(24, dtype=np.float32).reshape(4, 6).copy()  # owns its memory
    view, back = as_numpy(Tensor(a))
    assert np.shares_memory(view, a) and not view.flags.writeable
    strided, _ = as_numpy(Tensor(a[1:, ::2]))
    assert np.shares_memory(strided, a) and np.array_equal(strided, a[1:, ::2])
    assert isinstance(back(np.ones(3)), Tensor)
    # The view keeps the producer's array alive; when the view goes, DLPack's deleter runs.
    owner = weakref.ref(a)
    del a
    gc.collect()
    assert owner() is not None
    del view, back
    gc.collect()
    assert owner() is not None  # the strided view still holds it
    del strided
    gc.collect()
    assert owner() is None


class ShapedTensor(Tensor):
    """A Tensor with a shape: array-like to scikit-learn's parameter checks, yet unreadable by
    numpy.asarray (no __array__)."""

    @property
    def shape(self):
        return self._array.shape


@pytest.mark.parametrize("estimator", [flashkm.KMeans, flashkm.MiniBatchKMeans])
def test_init_centroids_of_another_library(estimator):
    X = blobs(n=800)
    C0 = X[[0, 100, 200, 300, 400]]
    ref = estimator(5, init=C0, random_state=0).fit(X)
    km = estimator(5, init=ShapedTensor(C0), random_state=0).fit(Tensor(X))
    np.testing.assert_array_equal(km.cluster_centers_, ref.cluster_centers_)


def test_empty_arrays_are_refused_as_numpy_ones_are():
    empty, _ = as_numpy(Tensor(np.zeros((0, 3), dtype=np.float32)))
    assert empty.shape == (0, 3) and empty.dtype == np.float32
    with pytest.raises(ValueError, match="0 sample"):
        flashkm.KMeans(2).fit(Tensor(np.zeros((0, 3))))


def test_no_copy_of_contiguous_input_and_one_of_strided():
    X = np.random.default_rng(0).normal(size=(1_000_000, 16)).astype(np.float32)  # 64 MB
    km = flashkm.KMeans(8, max_iter=2, n_init=1, random_state=0)
    assert peak_python_allocation(lambda: km.fit(Tensor(X))) < X.nbytes / 10
    assert peak_python_allocation(lambda: km.predict(Tensor(X))) < X.nbytes / 10
    F = np.asfortranarray(X)
    assert X.nbytes <= peak_python_allocation(lambda: km.fit(Tensor(F))) < 2 * X.nbytes


@pytest.mark.parametrize("device, name", [((2, 0), "cuda:0"), ((10, 3), "rocm:3"), ((8, 0), "metal:0")])
def test_device_arrays_are_refused_by_name(device, name):
    X = blobs(n=100)
    gpu = Tensor(X, device=device)
    km = flashkm.KMeans(3, n_init=1).fit(X)
    calls = [lambda: flashkm.KMeans(3).fit(gpu), lambda: km.predict(gpu), lambda: km.transform(gpu),
             lambda: km.score(gpu), lambda: flashkm.MiniBatchKMeans(3).fit(gpu),
             lambda: flashkm.batch_kmeans(Tensor(X[None], device=device), 3),
             lambda: km.fit(X, sample_weight=Tensor(np.ones(100), device=device))]
    for call in calls:
        with pytest.raises(ValueError, match=f"runs on the CPU; .* is on {name}"):
            call()
    # Pinned host memory (cuda_host) is readable by the CPU.
    assert flashkm.KMeans(3, n_init=1).fit(Tensor(X, device=(3, 0))).n_iter_ >= 1


def test_set_output_builds_the_dataframe_from_a_dlpack_input():
    X = blobs()
    km = flashkm.KMeans(3, n_init=1, random_state=0).set_output(transform="pandas")
    out = km.fit_transform(Tensor(X))
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["kmeans0", "kmeans1", "kmeans2"]
    np.testing.assert_array_equal(out.to_numpy(), km.set_output(transform="default").transform(X))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float16, jnp.bfloat16])
def test_jax_arrays_in_and_out(dtype):
    X = blobs(n=5000, d=24)
    Xj = jnp.asarray(X).astype(dtype)
    Xn = np.asarray(Xj)  # the same values as a numpy array (ml_dtypes for bfloat16)
    ref = flashkm.KMeans(5, n_init=1, random_state=0).fit(Xn)
    km = flashkm.KMeans(5, n_init=1, random_state=0).fit(Xj)
    np.testing.assert_array_equal(km.cluster_centers_, ref.cluster_centers_)
    labels = km.predict(Xj)
    assert isinstance(labels, jax.Array) and labels.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(labels), ref.labels_)
    dist = km.transform(Xj)
    assert isinstance(dist, jax.Array) and dist.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(dist), ref.transform(Xn))
    assert isinstance(flashkm.MiniBatchKMeans(5, random_state=0).fit_predict(Xj), jax.Array)


def test_jax_bfloat16_is_clustered_without_a_copy():
    X = jnp.asarray(blobs(n=400_000, d=32)).astype(jnp.bfloat16)  # 25.6 MB
    X.block_until_ready()
    km = flashkm.KMeans(8, n_init=1, max_iter=3, random_state=0)
    peak = peak_python_allocation(lambda: km.fit(X))
    assert peak < X.nbytes / 10, f"{peak} bytes allocated: a copy of X?"
    assert km.cluster_centers_.dtype == np.float32


def test_bfloat16_view_is_ml_dtypes():
    view, _ = as_numpy(jnp.ones((3, 2), dtype=jnp.bfloat16))
    assert view.dtype == ml_dtypes.bfloat16 and view.shape == (3, 2)


def test_batch_kmeans_takes_dlpack_arrays():
    rng = np.random.default_rng(4)
    X = np.stack([blobs(n=400, d=6, seed=s) for s in range(3)])
    init = X[:, :5].copy()
    labels, centroids, info = flashkm.batch_kmeans(Tensor(X), 5, init=Tensor(init))
    ref_labels, ref_centroids, ref_info = flashkm.batch_kmeans(X, 5, init=init)
    assert isinstance(labels, Tensor) and isinstance(centroids, Tensor)
    np.testing.assert_array_equal(labels.numpy(), ref_labels)
    np.testing.assert_array_equal(centroids.numpy(), ref_centroids)
    np.testing.assert_array_equal(info["n_iter"], ref_info["n_iter"])
    # 16-bit members are widened to float32 once: the float32 result of the same values.
    Xb = jnp.asarray(X + rng.integers(0, 2, X.shape)).astype(jnp.bfloat16)
    labels, centroids, _ = flashkm.batch_kmeans(Xb, 5, random_state=0)
    ref_labels, ref_centroids, _ = flashkm.batch_kmeans(np.asarray(Xb).astype(np.float32), 5, random_state=0)
    assert isinstance(centroids, jax.Array) and centroids.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(labels), ref_labels)
    np.testing.assert_array_equal(np.asarray(centroids), ref_centroids)


def test_unreadable_dtypes_are_refused():
    with pytest.raises(TypeError, match="cannot read DLPack dtype"):
        as_numpy(jnp.ones((2, 2), dtype=jnp.float8_e4m3fn))
