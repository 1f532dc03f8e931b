"""flashkm.batch_kmeans: every member exactly its solo KMeans fit; shapes, dtypes and errors."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import flashkm


def batch(b=4, n=600, d=7, k=5, dtype=np.float64):
    return np.stack([make_blobs(n, d, centers=k, random_state=10 + i)[0] for i in range(b)]).astype(dtype)


def first_rows(X, k):
    # Rows 0, 3, 6, ... of every member: distinct points, so a valid explicit start.
    return np.ascontiguousarray(X[:, : 3 * k : 3, :])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("b", [1, 3, 9])
def test_members_equal_solo_kmeans_from_explicit_init(dtype, b):
    X = batch(b=b, dtype=dtype)
    C0 = first_rows(X, 6)
    labels, centroids, info = flashkm.batch_kmeans(X, 6, init=C0, max_iter=50, n_threads=2)
    assert labels.shape == (b, 600) and labels.dtype == np.int32
    assert centroids.shape == (b, 6, 7) and centroids.dtype == dtype
    assert info["inertia"].shape == (b,) and info["n_iter"].shape == (b,)
    assert info["converged"].dtype == bool
    for i in range(b):
        solo = flashkm.KMeans(6, init=C0[i], n_init=1, max_iter=50, n_threads=1).fit(X[i])
        np.testing.assert_array_equal(centroids[i], solo.cluster_centers_)
        np.testing.assert_array_equal(labels[i], solo.labels_)
        assert info["inertia"][i] == solo.inertia_
        assert info["n_iter"][i] == solo.n_iter_


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_seeded_init_equals_solo_fit_with_the_same_random_state(dtype, init):
    X = batch(b=5, dtype=dtype)
    labels, centroids, info = flashkm.batch_kmeans(X, 8, init=init, random_state=123, n_threads=2)
    for i in range(5):
        # batch_kmeans draws its one seed from random_state exactly as KMeans does.
        solo = flashkm.KMeans(8, init=init, n_init=1, max_iter=100, random_state=123).fit(X[i])
        np.testing.assert_array_equal(centroids[i], solo.cluster_centers_)
        np.testing.assert_array_equal(labels[i], solo.labels_)
        assert info["inertia"][i] == solo.inertia_
    again = flashkm.batch_kmeans(X, 8, init=init, random_state=123)
    np.testing.assert_array_equal(again[1], centroids)


def test_converged_and_iterations_are_per_member():
    X = batch(b=3)
    _, _, info = flashkm.batch_kmeans(X, 5, max_iter=1, random_state=0)
    assert list(info["n_iter"]) == [1, 1, 1]
    _, _, info = flashkm.batch_kmeans(X, 5, max_iter=300, random_state=0)
    assert info["converged"].all()


def test_other_dtypes_become_float64():
    X = np.round(batch(b=2) * 10).astype(np.int64)
    labels, centroids, _ = flashkm.batch_kmeans(X, 3, random_state=0)
    assert centroids.dtype == np.float64 and labels.shape == (2, 600)


def test_non_contiguous_input_gives_the_contiguous_result():
    X = batch(b=4, d=8, dtype=np.float32)
    wide = np.zeros((4, 600, 16), dtype=np.float32)
    wide[:, :, ::2] = X
    strided = wide[:, :, ::2]
    assert not strided.flags.c_contiguous
    got = flashkm.batch_kmeans(strided, 5, random_state=7)
    want = flashkm.batch_kmeans(X, 5, random_state=7)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    # A transposed view of the batch axis, too.
    Xt = np.ascontiguousarray(X.transpose(1, 0, 2)).transpose(1, 0, 2)
    np.testing.assert_array_equal(flashkm.batch_kmeans(Xt, 5, random_state=7)[1], want[1])


def test_awkward_shapes():
    X = np.arange(12, dtype=np.float64).reshape(3, 1, 4)
    labels, centroids, _ = flashkm.batch_kmeans(X, 1)
    np.testing.assert_array_equal(centroids, X)
    assert labels.tolist() == [[0], [0], [0]]
    X = batch(b=2, n=9, d=1)
    labels, _, info = flashkm.batch_kmeans(X, 9, random_state=0)
    assert sorted(labels[0]) == list(range(9))
    # Every point is its own centroid: zero up to the rounding of centring (shift, unshift).
    np.testing.assert_allclose(info["inertia"], 0.0, atol=1e-20)


def test_shape_errors():
    X = batch(b=2)
    with pytest.raises(ValueError, match="3-D array"):
        flashkm.batch_kmeans(X[0], 3)
    with pytest.raises(ValueError, match="0 members"):
        flashkm.batch_kmeans(X[:0], 3)
    with pytest.raises(ValueError, match="n_samples=600 should be >= n_clusters=601"):
        flashkm.batch_kmeans(X, 601)
    with pytest.raises(ValueError, match=r"initial centers \(2, 4, 7\) does not match .*\(2, 3, 7\)"):
        flashkm.batch_kmeans(X, 3, init=np.zeros((2, 4, 7)))
    with pytest.raises(ValueError, match="init must be"):
        flashkm.batch_kmeans(X, 3, init="farthest")
    with pytest.raises(ValueError, match="n_clusters"):
        flashkm.batch_kmeans(X, 0)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_metric_members_equal_solo_kmeans(metric):
    X = batch(b=3, dtype=np.float32)
    C0 = first_rows(X, 5)
    labels, centroids, info = flashkm.batch_kmeans(X, 5, init=C0, metric=metric, max_iter=30)
    for i in range(3):
        solo = flashkm.KMeans(5, init=C0[i], n_init=1, max_iter=30, metric=metric).fit(X[i])
        np.testing.assert_array_equal(centroids[i], solo.cluster_centers_)
        np.testing.assert_array_equal(labels[i], solo.labels_)
        assert info["inertia"][i] == solo.inertia_
    with pytest.raises(ValueError, match="metric must be"):
        flashkm.batch_kmeans(X, 3, metric="manhattan")


@pytest.mark.parametrize("n_threads", [1, 2, 8])
def test_nan_error_names_the_member(n_threads):
    X = batch(b=5, dtype=np.float32)
    X[3, 17, 2] = np.nan
    with pytest.raises(ValueError, match="member 3: X contains NaN at row 17, column 2"):
        flashkm.batch_kmeans(X, 4, n_threads=n_threads)
    C0 = first_rows(batch(b=5), 4)
    C0[1, 2, 0] = np.inf
    with pytest.raises(ValueError, match="member 1: init_centroids contains inf at row 2, column 0"):
        flashkm.batch_kmeans(batch(b=5), 4, init=C0, n_threads=n_threads)


def test_ctrl_c_stops_a_batch():
    """SIGINT during batch_kmeans raises KeyboardInterrupt between iterations."""
    import os
    import signal
    import threading
    import time
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 200_000, 32)).astype(np.float32)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    # Python raises KeyboardInterrupt only if SIGINT was not ignored when it started, and a
    # job started in the background of a non-interactive shell inherits it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            flashkm.batch_kmeans(X, 256, init="random", max_iter=100_000, tol=0, random_state=0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - start < 30
