"""flashkm.flash_kmeans against Flash-KMeans's documented loop (a float64 numpy reference
written from its description below), its signatures and its return tuple."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import make_blobs

import flashkm
from flashkm.flash_kmeans import batch_kmeans_Cosine, batch_kmeans_Dot, batch_kmeans_Euclid
from test_dlpack import Tensor

FUNCTIONS = {"euclid": batch_kmeans_Euclid, "cosine": batch_kmeans_Cosine, "dot": batch_kmeans_Dot}


def flash_reference(x, C, max_iters, metric):
    """Flash-KMeans's loop with tol=0, in float64: assign (nearest centroid; largest cosine or
    inner product), then each centroid becomes its rows' mean (cosine: of the unit rows; cosine
    and dot: scaled to unit length), an empty cluster keeping its centroid. It returns the last
    assignment and the centroids updated from it."""
    x, C = x.astype(np.float64), C.astype(np.float64)
    if metric == "cosine":
        x = x / np.linalg.norm(x, axis=-1, keepdims=True)
        C = C / np.linalg.norm(C, axis=-1, keepdims=True)
    for _ in range(max_iters):
        if metric == "euclid":
            labels = np.argmin(((x[:, :, None, :] - C[:, None, :, :]) ** 2).sum(-1), axis=-1)
        else:
            labels = np.argmax(np.einsum("bnd,bkd->bnk", x, C), axis=-1)
        new = C.copy()
        for b in range(x.shape[0]):
            for k in range(C.shape[1]):
                if (labels[b] == k).any():
                    new[b, k] = x[b][labels[b] == k].mean(axis=0)
        if metric != "euclid":
            new /= np.linalg.norm(new, axis=-1, keepdims=True)
        C = new
    return labels, C


def batch(b=3, n=517, d=7, k=5, dtype=np.float32, seed=0):
    """Well-separated blobs per member, away from the origin (distinct directions too), the
    first k rows of a member from its k different blobs."""
    members = []
    for i in range(b):
        X, y = make_blobs(n, d, centers=k, cluster_std=0.4, center_box=(-10, 10), random_state=seed + i)
        first = [np.flatnonzero(y == c)[0] for c in range(k)]
        members.append(X[first + [j for j in range(n) if j not in first]] + 12)
    return np.stack(members).astype(dtype)


def initial(x, k):
    """The first k rows of every member, scaled a little differently (inner products see it)."""
    C = x[:, :k].copy()
    return C * np.linspace(0.8, 1.25, k, dtype=x.dtype)[None, :, None]


@pytest.mark.parametrize("metric", FUNCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fixed_point_equals_flash_kmeans(metric, dtype):
    x = batch(dtype=dtype)
    C0 = initial(x, 5)
    ids, centroids, n_iters = FUNCTIONS[metric](x, 5, max_iters=100, init_centroids=C0)
    ref_ids, ref_centroids = flash_reference(x, C0, 100, metric)
    assert ids.dtype == np.int64 and ids.shape == (3, 517)
    assert centroids.dtype == dtype and centroids.shape == (3, 5, 7)
    assert isinstance(n_iters, int) and 2 <= n_iters < 100  # labels stopped changing
    np.testing.assert_array_equal(ids, ref_ids)
    # float32: the centroids are rounded once from float64 sums (flashkm) -- within float32
    # rounding of coordinates of magnitude ~20.
    np.testing.assert_allclose(centroids, ref_centroids, rtol=0, atol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("metric", FUNCTIONS)
@pytest.mark.parametrize("max_iters", [1, 2, 3])
def test_first_iterations_equal_flash_kmeans(metric, max_iters):
    """Stopped before convergence: Flash-KMeans's centroids; the labels are theirs."""
    x = batch(b=2, n=300, d=4, k=6, dtype=np.float64, seed=5)
    x += np.random.default_rng(1).normal(scale=4.0, size=x.shape)  # overlapping: labels move
    C0 = initial(x, 6)
    ids, centroids, n_iters = FUNCTIONS[metric](x, 6, max_iters=max_iters, init_centroids=C0)
    _, ref_centroids = flash_reference(x, C0, max_iters, metric)
    assert n_iters == max_iters
    np.testing.assert_allclose(centroids, ref_centroids, rtol=0, atol=1e-12)
    if metric == "euclid":
        expected = np.argmin(((x[:, :, None] - centroids[:, None]) ** 2).sum(-1), axis=-1)
    else:
        expected = np.argmax(np.einsum("bnd,bkd->bnk", x, centroids), axis=-1)
    np.testing.assert_array_equal(ids, expected)


@pytest.mark.parametrize("metric", FUNCTIONS)
def test_arrays_of_the_callers_library_and_dtype(metric):
    x = batch(b=2, n=200, d=5, k=3)
    C0 = initial(x, 3)
    ref = FUNCTIONS[metric](x, 3, init_centroids=C0)
    ids, centroids, n = FUNCTIONS[metric](Tensor(x), 3, init_centroids=Tensor(C0.reshape(6, 5)))
    assert isinstance(ids, Tensor) and isinstance(centroids, Tensor) and n == ref[2]
    assert ids.numpy().dtype == np.int64 and centroids.numpy().dtype == np.float32
    np.testing.assert_array_equal(ids.numpy(), ref[0])
    np.testing.assert_array_equal(centroids.numpy(), ref[1])
    # 16-bit x: clustered as float32, the centroids handed back in x's dtype by x's library.
    xb = jnp.asarray(x).astype(jnp.bfloat16)
    ids, centroids, _ = FUNCTIONS[metric](xb, 3, init_centroids=C0)
    assert isinstance(ids, jax.Array) and isinstance(centroids, jax.Array)
    assert centroids.dtype == jnp.bfloat16 and centroids.shape == (2, 3, 5)
    ref = FUNCTIONS[metric](np.asarray(xb).astype(np.float32), 3, init_centroids=C0)
    np.testing.assert_array_equal(np.asarray(ids), ref[0])
    np.testing.assert_array_equal(np.asarray(centroids), ref[1].astype(jnp.bfloat16))
    ids, centroids, _ = FUNCTIONS[metric](x.astype(np.float16), 3, init_centroids=C0)
    assert centroids.dtype == np.float16 and ids.dtype == np.int64


def test_empty_clusters_are_relocated_under_euclid():
    x = batch(b=1, n=400, d=3, k=4, dtype=np.float64)
    C0 = x[:, [0, 0, 1, 2]].copy()  # two equal centroids: one of them gets no row
    _, ref_centroids = flash_reference(x, C0, 1, "euclid")
    assert np.array_equal(ref_centroids[0, 1], C0[0, 1])  # Flash-KMeans keeps it where it was
    ids, centroids, _ = batch_kmeans_Euclid(x, 4, init_centroids=C0)
    assert np.bincount(ids[0], minlength=4).min() > 0  # flashkm moves it to a far point
    # Cosine and dot keep an empty cluster's centroid, as Flash-KMeans does.
    for metric in ("cosine", "dot"):
        ids, centroids, _ = FUNCTIONS[metric](x, 4, init_centroids=C0)
        ref_ids, ref_centroids = flash_reference(x, C0, 100, metric)
        np.testing.assert_array_equal(ids, ref_ids)
        np.testing.assert_allclose(centroids, ref_centroids, rtol=0, atol=1e-12)


def test_tol_stops_when_the_squared_shifts_are_within_tol_squared():
    x = batch(b=1, n=2000, d=6, k=8, dtype=np.float64, seed=3)
    x += np.random.default_rng(2).normal(scale=3.0, size=x.shape)
    C0 = initial(x, 8)
    _, _, n_exact = batch_kmeans_Euclid(x, 8, init_centroids=C0)
    tol = 0.05
    ids, centroids, n = batch_kmeans_Euclid(x, 8, tol=tol, init_centroids=C0)
    assert 2 <= n < n_exact
    before = batch_kmeans_Euclid(x, 8, max_iters=n - 1, init_centroids=C0)[1]
    same = batch_kmeans_Euclid(x, 8, max_iters=n, init_centroids=C0)
    np.testing.assert_array_equal(centroids, same[1])
    np.testing.assert_array_equal(ids, same[0])
    assert np.sum((centroids - before) ** 2) <= tol ** 2
    earlier = batch_kmeans_Euclid(x, 8, max_iters=n - 2, init_centroids=C0)[1] if n > 2 else C0
    assert np.sum((before - earlier) ** 2) > tol ** 2
    # Cosine and dot: the same rule on their unit centroids.
    for f in (batch_kmeans_Cosine, batch_kmeans_Dot):
        _, _, n_exact = f(x, 8, init_centroids=C0)
        assert f(x, 8, tol=0.5, init_centroids=C0)[2] < n_exact


def test_members_stop_independently_and_n_iters_is_the_most():
    x = batch(b=3, n=500, d=4, k=4, dtype=np.float64, seed=7)
    C0 = initial(x, 4)
    _, centroids, n = batch_kmeans_Euclid(x, 4, init_centroids=C0)
    alone = [batch_kmeans_Euclid(x[b:b + 1], 4, init_centroids=C0[b:b + 1]) for b in range(3)]
    assert n == max(a[2] for a in alone)
    for b in range(3):
        np.testing.assert_array_equal(centroids[b], alone[b][1][0])


def test_random_and_kmeans_plus_plus_init():
    x = batch(b=2, n=600, d=5, k=6)
    a = batch_kmeans_Euclid(x, 6, random_state=0)
    b = batch_kmeans_Euclid(x, 6, random_state=0)
    np.testing.assert_array_equal(a[1], b[1])
    ids, centroids, _ = batch_kmeans_Euclid(x, 6, init="k-means++", random_state=4)
    ref_labels, ref_centroids, _ = flashkm.batch_kmeans(x, 6, init="k-means++", random_state=4, tol=0)
    np.testing.assert_array_equal(ids, ref_labels)
    np.testing.assert_array_equal(centroids, ref_centroids)
    for f in FUNCTIONS.values():
        ids, centroids, _ = f(x, 6, init="k-means++", random_state=1)
        assert ids.shape == (2, 600) and np.isfinite(centroids).all()
        ids, centroids, _ = f(x, 6)
        assert ids.shape == (2, 600) and np.isfinite(centroids).all()


def test_signatures_and_errors(capsys):
    x = batch(b=2, n=50, d=3, k=2)
    batch_kmeans_Euclid(x, 2, 10, 0.0, None, True, use_heuristic=False)
    assert "member 1:" in capsys.readouterr().out
    with pytest.raises(ValueError, match="3-D"):
        batch_kmeans_Euclid(x[0], 2)
    with pytest.raises(ValueError, match="n_clusters"):
        batch_kmeans_Cosine(x, 51)
    with pytest.raises(ValueError, match="init_centroids"):
        batch_kmeans_Dot(x, 2, init_centroids=np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="runs on the CPU; x is on cuda:0"):
        batch_kmeans_Euclid(Tensor(x, device=(2, 0)), 2)
    with pytest.raises(ValueError, match="init_centroids is on cuda:1"):
        batch_kmeans_Dot(x, 2, init_centroids=Tensor(x[:, :2].copy(), device=(2, 1)))
