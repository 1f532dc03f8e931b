"""flashkm.MiniBatchKMeans against scikit-learn's: the estimator contract, the same trajectory from
the same initial centers, quality, partial_fit, weights, metrics and errors."""

import numpy as np
import pytest
from sklearn.cluster import KMeans as SkKMeans
from sklearn.cluster import MiniBatchKMeans as SkMiniBatchKMeans
from sklearn.datasets import make_blobs
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_estimator

import flashkm


def blobs(n=20000, d=16, k=10, std=1.5, dtype=np.float64, seed=1):
    X, _ = make_blobs(n, d, centers=k, cluster_std=std, random_state=seed)
    return X.astype(dtype)


def initial_centers(X, k, seed=0):
    return X[np.random.default_rng(seed).choice(len(X), k, replace=False)].copy()


def test_check_estimator(monkeypatch):
    # Array API dispatch on, so that check_array_api_input runs too: no check is skipped.
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    results = check_estimator(
        flashkm.MiniBatchKMeans(),
        on_skip=None,
        expected_failed_checks={
            # The same expected failure scikit-learn declares for its own MiniBatchKMeans
            # (PER_ESTIMATOR_XFAIL_CHECKS): batches are drawn at random, so repeating or
            # dropping rows changes which rows are drawn.
            "check_sample_weight_equivalence_on_dense_data":
                "sample_weight is not equivalent to removing/repeating samples.",
            "check_sample_weight_equivalence_on_sparse_data":
                "sample_weight is not equivalent to removing/repeating samples.",
        },
    )
    assert not [r["check_name"] for r in results if r["status"] == "skipped"]


# From the same initial centers and random_state the batches, reassignments and stopping step
# are scikit-learn's (the same draws from the same stream), so the whole run is scikit-learn's
# up to rounding: center updates sum in a different order (float64, errors ~1e-16 relative on
# coordinates of magnitude ~10), and no label is close enough to a tie to flip.
@pytest.mark.parametrize("params", [
    dict(),
    dict(tol=1e-3),
    dict(batch_size=100),
    dict(max_no_improvement=None, max_iter=3),
    dict(batch_size=200, reassignment_ratio=0.2),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_same_run_as_scikit_learn_from_same_init(params, weighted):
    X = blobs()
    C0 = initial_centers(X, 10)
    C0[0] = 1000.0  # a center nothing is near: it stays empty until reassigned
    sw = np.random.default_rng(2).uniform(0, 3, len(X)) if weighted else None
    ours = flashkm.MiniBatchKMeans(10, init=C0, random_state=4, **params).fit(X, sample_weight=sw)
    ref = SkMiniBatchKMeans(10, init=C0, random_state=4, **params).fit(X, sample_weight=sw)
    assert ours.n_steps_ == ref.n_steps_
    assert ours.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.inertia_, ref.inertia_, rtol=1e-10)
    assert np.abs(ours.cluster_centers_).max() < 100  # the far center was reassigned


def test_same_partial_fits_as_scikit_learn():
    X = blobs()
    C0 = initial_centers(X, 10)
    sw = np.random.default_rng(2).uniform(0, 3, len(X))
    ours = flashkm.MiniBatchKMeans(10, init=C0, random_state=4)
    ref = SkMiniBatchKMeans(10, init=C0, random_state=4)
    for chunk in np.array_split(np.arange(len(X)), 10):
        ours.partial_fit(X[chunk], sample_weight=sw[chunk])
        ref.partial_fit(X[chunk], sample_weight=sw[chunk])
        np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-10)
        np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.n_steps_ == ref.n_steps_ == 10


def test_running_mean_update_is_exact():
    # Integer rows and weights with power-of-two totals: every center is a weighted mean
    # computed without rounding, so the update is checked exactly.
    X = np.array([[0, 0], [2, 0], [0, 2], [2, 2], [100, 100], [104, 100]], dtype=np.float64)
    C0 = np.array([[1.0, 1.0], [101.0, 99.0]])
    m = flashkm.MiniBatchKMeans(2, init=C0, reassignment_ratio=0, compute_labels=False)
    m.partial_fit(X[:4], sample_weight=[1, 1, 1, 1])
    np.testing.assert_array_equal(m.cluster_centers_, [[1, 1], [101, 99]])  # 2nd got nothing
    m.partial_fit(X[4:], sample_weight=[3, 1])
    np.testing.assert_array_equal(m.cluster_centers_, [[1, 1], [101, 100]])
    m.partial_fit(np.array([[5.0, 5.0]]), sample_weight=[4])
    # (1, 1) * 4 + (5, 5) * 4 over a count of 8.
    np.testing.assert_array_equal(m.cluster_centers_, [[3, 3], [101, 100]])


def test_quality_like_scikit_learn_and_close_to_kmeans():
    # The seeding is flashkm's (other draws than scikit-learn's), so single runs are compared
    # as distributions: with one init, some seeds of either library stop in a local minimum
    # (3 in 30 each on these data); the median and the count of such runs match.
    X = blobs()
    full = SkKMeans(10, n_init=3, random_state=0).fit(X).inertia_
    seeds = range(30)
    ours = np.array([flashkm.MiniBatchKMeans(10, random_state=s).fit(X).inertia_ for s in seeds])
    ref = np.array([SkMiniBatchKMeans(10, random_state=s).fit(X).inertia_ for s in seeds])
    assert np.median(ours) <= 1.01 * np.median(ref)
    assert np.median(ours) <= 1.01 * full
    assert (ours > 1.05 * full).sum() <= (ref > 1.05 * full).sum() + 2
    # Three inits on the init subset avoid those minima here: every run is near the optimum.
    for seed in range(3):
        m = flashkm.MiniBatchKMeans(10, n_init=3, random_state=seed).fit(X)
        assert m.inertia_ <= 1.01 * full
    # More clusters, three inits: averages over seeds.
    X = blobs(d=32, k=30, std=2.0)
    full = SkKMeans(30, n_init=3, random_state=0).fit(X).inertia_
    ours = np.mean([flashkm.MiniBatchKMeans(30, n_init=3, random_state=s).fit(X).inertia_
                    for s in range(4)])
    ref = np.mean([SkMiniBatchKMeans(30, n_init=3, random_state=s).fit(X).inertia_
                   for s in range(4)])
    assert ours <= 1.05 * ref
    assert ours <= 1.10 * full


def test_partial_fit_over_chunks_improves():
    X = blobs(n=30000)
    full = SkKMeans(10, n_init=3, random_state=0).fit(X).inertia_
    m = flashkm.MiniBatchKMeans(10, random_state=0)
    rng = np.random.default_rng(0)
    chunks = np.array_split(rng.permutation(len(X)), 30)
    m.partial_fit(X[chunks[0]])
    first = -m.score(X)
    for c in chunks[1:]:
        m.partial_fit(X[c])
    assert m.n_steps_ == 30
    assert m.labels_.shape == (len(chunks[-1]),)
    assert -m.score(X) <= first
    assert -m.score(X) <= 1.02 * full


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_preserved(dtype):
    X = blobs(n=5000, dtype=dtype)
    m = flashkm.MiniBatchKMeans(10, random_state=0).fit(X)
    assert m.cluster_centers_.dtype == dtype
    assert m.transform(X[:10]).dtype == dtype
    assert m.labels_.dtype == np.int32
    m.partial_fit(X[:100].astype(np.float64))  # later chunks take the centers' type
    assert m.cluster_centers_.dtype == dtype


def test_float32_close_to_float64():
    X = blobs(n=5000)
    a = flashkm.MiniBatchKMeans(10, random_state=0).fit(X)
    b = flashkm.MiniBatchKMeans(10, random_state=0).fit(X.astype(np.float32))
    np.testing.assert_allclose(a.inertia_, b.inertia_, rtol=1e-3)


def test_predict_transform_score_are_nearest_center():
    X = blobs(n=3000, d=7, k=5)
    m = flashkm.MiniBatchKMeans(5, random_state=0, batch_size=256).fit(X)
    d2 = ((X[:, None, :] - m.cluster_centers_[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(m.predict(X), d2.argmin(1))
    np.testing.assert_array_equal(m.labels_, d2.argmin(1))
    np.testing.assert_allclose(m.transform(X), np.sqrt(d2), rtol=1e-9)
    sw = np.random.default_rng(0).uniform(0, 2, len(X))
    np.testing.assert_allclose(m.score(X, sample_weight=sw), -(sw * d2.min(1)).sum(), rtol=1e-9)
    np.testing.assert_allclose(m.inertia_, d2.min(1).sum(), rtol=1e-9)
    np.testing.assert_array_equal(m.fit_predict(X), m.labels_)
    np.testing.assert_allclose(m.fit_transform(X), m.transform(X))


def test_zero_weight_rows_pull_no_center():
    X = blobs(n=5000, d=4, k=4)
    far = np.full((500, 4), 1e3)
    sw = np.r_[np.ones(len(X)), np.zeros(len(far))]
    m = flashkm.MiniBatchKMeans(4, random_state=0).fit(np.vstack([X, far]), sample_weight=sw)
    assert np.abs(m.cluster_centers_).max() < 100
    m = flashkm.MiniBatchKMeans(4, random_state=0).fit(np.vstack([X, far]))
    assert np.abs(m.cluster_centers_).max() > 900


def test_steps_and_iterations():
    X = blobs(n=4000)
    m = flashkm.MiniBatchKMeans(10, batch_size=300, max_iter=5, max_no_improvement=None,
                                random_state=0).fit(X)
    assert m.n_steps_ == 5 * 4000 // 300
    assert m.n_iter_ == 5
    m = flashkm.MiniBatchKMeans(10, batch_size=300, random_state=0).fit(X)
    assert m.n_steps_ < 5 * 4000 // 300  # early stop on the smoothed inertia
    assert m.n_iter_ == int(np.ceil(m.n_steps_ * 300 / 4000))
    m.partial_fit(X[:50])
    m.partial_fit(X[50:100])
    assert m.n_iter_ == int(np.ceil((m.n_steps_ - 2) * 300 / 4000))


def test_compute_labels_false_estimates_inertia():
    X = blobs(n=10000)
    m = flashkm.MiniBatchKMeans(10, compute_labels=False, random_state=0).fit(X)
    assert not hasattr(m, "labels_")
    np.testing.assert_allclose(m.inertia_, -m.score(X), rtol=0.2)
    np.testing.assert_array_equal(m.fit_predict(X), m.predict(X))


def test_thread_count_gives_identical_bytes():
    # Batches large enough for several kernel threads.
    X = blobs(n=50000, d=32, k=30, dtype=np.float32)
    runs = [flashkm.MiniBatchKMeans(30, batch_size=40000, max_iter=3, random_state=7,
                                    n_threads=t).fit(X) for t in (1, 2)]
    assert runs[0].cluster_centers_.tobytes() == runs[1].cluster_centers_.tobytes()
    assert runs[0].labels_.tobytes() == runs[1].labels_.tobytes()


def test_cosine_centers_have_unit_norm():
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(6, 20))
    X = np.repeat(directions, 1000, axis=0) + 0.2 * rng.normal(size=(6000, 20))
    X *= rng.uniform(0.5, 5, (len(X), 1))  # lengths carry no information under cosine
    m = flashkm.MiniBatchKMeans(6, metric="cosine", random_state=0, batch_size=256).fit(X)
    np.testing.assert_allclose(np.linalg.norm(m.cluster_centers_, axis=1), 1, rtol=1e-12)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_array_equal(m.labels_, (Xn @ m.cluster_centers_.T).argmax(1))
    full = flashkm.KMeans(6, metric="cosine", random_state=0).fit(X)
    assert m.inertia_ <= 1.02 * full.inertia_
    m.partial_fit(X[:300])
    np.testing.assert_allclose(np.linalg.norm(m.cluster_centers_, axis=1), 1, rtol=1e-12)


def test_dot_assigns_by_largest_inner_product():
    X = blobs(n=3000, d=5, k=4)
    m = flashkm.MiniBatchKMeans(4, metric="dot", random_state=0).fit(X)
    np.testing.assert_array_equal(m.predict(X), (X @ m.cluster_centers_.T).argmax(1))


def test_errors_like_scikit_learn():
    X = blobs(n=100, d=3, k=3)
    for est in (flashkm.MiniBatchKMeans, SkMiniBatchKMeans):
        with pytest.raises(ValueError, match="n_samples=5 should be >= n_clusters=8"):
            est().fit(X[:5])
        with pytest.raises(ValueError, match="n_samples=5 should be >= n_clusters=8"):
            est().partial_fit(X[:5])
        for bad in (dict(n_clusters=0), dict(batch_size=0), dict(reassignment_ratio=-1),
                    dict(init="kmeans"), dict(max_no_improvement=-1), dict(n_init=0)):
            with pytest.raises(InvalidParameterError):
                est(**bad).fit(X)
        with pytest.raises(ValueError, match="shape of the initial centers"):
            est(3, init=np.zeros((2, 3))).fit(X)
        with pytest.warns(RuntimeWarning, match="init_size=2 should be larger"):
            est(3, init_size=2).fit(X)
        with pytest.warns(RuntimeWarning, match="performing only one init"):
            est(3, init=X[:3], n_init=3).fit(X)
    with pytest.raises(InvalidParameterError):
        flashkm.MiniBatchKMeans(metric="manhattan").fit(X)
    with pytest.raises(ValueError, match="at least one non-zero"):
        flashkm.MiniBatchKMeans(3).fit(X, sample_weight=np.zeros(len(X)))
    with pytest.raises(ValueError, match="features"):
        flashkm.MiniBatchKMeans(3).fit(X).partial_fit(X[:, :2])


@pytest.mark.parametrize("init", ["k-means++", "random"])
def test_init_seeds_are_rows_without_a_lloyd_step(init):
    # As scikit-learn: the initial centers are the seeds drawn from init_size rows, each a row
    # of X itself; a Lloyd step on the subset would move them to means of rows.
    X, _ = make_blobs(n_samples=600, centers=6, n_features=5, random_state=4)
    w = np.random.RandomState(2).uniform(0.5, 2.0, X.shape[0])
    est = flashkm.MiniBatchKMeans(n_clusters=6, init=init, init_size=200, random_state=0, n_init=1)
    est._init_size = 200
    centers = est._init_centroids(X, w, np.random.RandomState(0))
    assert centers.shape == (6, 5)
    for c in centers:
        assert np.any(np.all(X == c, axis=1)), c
