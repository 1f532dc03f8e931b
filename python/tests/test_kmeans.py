"""flashkm.KMeans against scikit-learn: the estimator contract, equal results, no copies, GIL."""

import threading
import time
import tracemalloc

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.cluster import KMeans as SkKMeans
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import flashkm


def blobs(n=20000, d=32, k=30, dtype=np.float64, seed=1):
    X, _ = make_blobs(n, d, centers=k, cluster_std=2.0, random_state=seed)
    return X.astype(dtype)


def test_check_estimator(monkeypatch):
    # Array API dispatch on, so that check_array_api_input runs too: no check is skipped.
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    results = check_estimator(
        flashkm.KMeans(),
        on_skip=None,
        expected_failed_checks={
            # The same expected failure scikit-learn declares for its own KMeans: the
            # initialisation samples points in data order, so repeating or dropping rows
            # changes which points are drawn.
            "check_sample_weight_equivalence_on_dense_data":
                "sample_weight is not equivalent to removing/repeating samples.",
            "check_sample_weight_equivalence_on_sparse_data":
                "sample_weight is not equivalent to removing/repeating samples.",
        },
    )
    assert not [r["check_name"] for r in results if r["status"] == "skipped"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_same_result_as_scikit_learn_from_same_init(dtype, weighted):
    X = blobs(dtype=dtype)
    rng = np.random.default_rng(3)
    C0 = X[rng.choice(len(X), 30, replace=False)]
    sw = rng.uniform(0, 3, len(X)) if weighted else None
    ours = flashkm.KMeans(30, init=C0, n_init=1).fit(X, sample_weight=sw)
    ref = SkKMeans(30, init=C0, n_init=1).fit(X, sample_weight=sw)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.cluster_centers_.dtype == dtype
    # float32: scikit-learn accumulates centroid sums in float32, flashkm in float64 and rounds
    # once; both are within float32 rounding of coordinates of magnitude ~10.
    atol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=atol)
    np.testing.assert_allclose(ours.inertia_, ref.inertia_, rtol=1e-5 if dtype == np.float32 else 1e-10)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    np.testing.assert_allclose(ours.transform(X[:100]), ref.transform(X[:100]), rtol=1e-4)
    np.testing.assert_allclose(ours.score(X, sample_weight=sw), ref.score(X, sample_weight=sw), rtol=1e-5)


def test_thread_count_gives_identical_bytes():
    X = blobs(n=50000, d=20, k=40, dtype=np.float32)
    a = flashkm.KMeans(40, random_state=7, n_threads=1).fit(X)
    b = flashkm.KMeans(40, random_state=7, n_threads=2).fit(X)
    assert a.cluster_centers_.tobytes() == b.cluster_centers_.tobytes()
    assert a.labels_.tobytes() == b.labels_.tobytes()
    assert a.inertia_ == b.inertia_


def peak_python_allocation(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_c_contiguous_float32_is_not_copied():
    X = np.random.default_rng(0).normal(size=(1_000_000, 16)).astype(np.float32)  # 64 MB
    km = flashkm.KMeans(8, max_iter=2, n_init=1, random_state=0)
    peak = peak_python_allocation(lambda: km.fit(X))
    # What Python allocates during fit is far below one copy of X (numpy allocations are traced).
    assert peak < X.nbytes / 10, peak
    # A Fortran-ordered array is copied exactly once.
    F = np.asfortranarray(X)
    peak_f = peak_python_allocation(lambda: km.fit(F))
    assert X.nbytes <= peak_f < 2 * X.nbytes, peak_f


def test_gil_is_released_during_fit():
    X = np.random.default_rng(1).normal(size=(400_000, 32)).astype(np.float32)
    km = flashkm.KMeans(128, init="random", n_init=1, max_iter=15, tol=0, random_state=0, n_threads=1)
    done = threading.Event()
    elapsed = {}

    def work():
        t = time.perf_counter()
        km.fit(X)
        elapsed["fit"] = time.perf_counter() - t
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    ticks = 0
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    thread.join()
    # With the GIL held for the whole fit this loop could not run while it lasts.
    assert elapsed["fit"] > 0.2
    assert ticks > 0.25 * elapsed["fit"] / 0.001 * 0.2, (ticks, elapsed)


def test_dtypes():
    X = blobs(n=500, d=4, k=3)
    assert flashkm.KMeans(3, n_init=1).fit(X.astype(np.float32)).cluster_centers_.dtype == np.float32
    assert flashkm.KMeans(3, n_init=1).fit(X).cluster_centers_.dtype == np.float64
    km = flashkm.KMeans(3, n_init=1).fit((X * 10).astype(np.int64))  # converted like scikit-learn
    assert km.cluster_centers_.dtype == np.float64
    assert km.labels_.dtype == np.int32
    assert km.predict(X.astype(np.float32)).shape == (500,)


def test_pipeline_gridsearch_clone():
    X = blobs(n=2000, d=6, k=5)
    pipe = make_pipeline(StandardScaler(), flashkm.KMeans(5, n_init=1, random_state=0))
    assert pipe.fit_predict(X).shape == (2000,)
    grid = GridSearchCV(flashkm.KMeans(n_init=1, random_state=0), {"n_clusters": [2, 5, 8]}, cv=3).fit(X)
    assert grid.best_params_["n_clusters"] == 8  # score = -inertia, which falls with K
    c = clone(flashkm.KMeans(7, n_threads=2, tol=1e-3))
    assert c.get_params()["n_clusters"] == 7 and c.get_params()["n_threads"] == 2


def test_init_variants():
    X = blobs(n=3000, d=5, k=6)
    calls = []

    def my_init(X_, k, random_state):
        calls.append(1)
        return X_[random_state.choice(len(X_), k, replace=False)]

    km = flashkm.KMeans(6, init=my_init, random_state=0).fit(X)  # n_init='auto' -> 10 runs
    assert len(calls) == 10
    assert km.inertia_ <= flashkm.KMeans(6, init="random", n_init=1, random_state=0).fit(X).inertia_ * 1.5
    with pytest.warns(RuntimeWarning, match="only one init"):
        flashkm.KMeans(6, init=X[:6], n_init=3).fit(X)
    a = flashkm.KMeans(6, random_state=3).fit(X)
    b = flashkm.KMeans(6, random_state=3).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert flashkm.KMeans(6, random_state=np.random.RandomState(5)).fit(X).n_iter_ >= 1
    assert flashkm.KMeans(6).fit(X).history_[0]["iteration"] == 1


def test_verbose_prints_progress(capsys):
    X = blobs(n=3000, d=5, k=6)
    flashkm.KMeans(6, n_init=1, verbose=1, random_state=0).fit(X)
    out = capsys.readouterr().out
    assert "Iteration 0, inertia" in out
    assert "Converged at iteration" in out


def test_errors_like_scikit_learn():
    X = blobs(n=100, d=3, k=3)
    with pytest.raises(ValueError, match="n_clusters"):
        flashkm.KMeans(0).fit(X)
    with pytest.raises(ValueError, match="n_samples=100 should be >= n_clusters=101"):
        flashkm.KMeans(101).fit(X)
    bad = X.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        flashkm.KMeans(3).fit(bad)
    with pytest.raises(NotFittedError):
        flashkm.KMeans(3).predict(X)
    with pytest.raises(ValueError, match="(?i)negative"):
        flashkm.KMeans(3).fit(X, sample_weight=-np.ones(100))
    with pytest.raises(ValueError, match="shape of the initial centers"):
        flashkm.KMeans(3, init=X[:2]).fit(X)
    km = flashkm.KMeans(3, n_init=1).fit(X)
    with pytest.raises(ValueError, match="features"):
        km.predict(X[:, :2])
    with pytest.raises(ValueError):
        flashkm.KMeans(3, algorithm="full").fit(X)


def test_engine_errors_become_value_errors():
    # A C++ flashkm::Error reaching Python is a ValueError with the engine's message.
    X = np.ascontiguousarray(blobs(n=50, d=3, k=2))
    with pytest.raises(ValueError, match="n_clusters = 60"):
        flashkm._core.fit(X, 60, "k-means++", None, n_init=1, max_iter=5, tol=0.0, seed=0,
                          n_threads=0, sample_weight=None, callback=None, target="")
    with pytest.raises(ValueError, match="SIMD target 'nope'"):
        flashkm._core.fit(X, 2, "k-means++", None, n_init=1, max_iter=5, tol=0.0, seed=0,
                          n_threads=0, sample_weight=None, callback=None, target="nope")


def test_callback_exception_propagates():
    X = np.ascontiguousarray(blobs(n=500, d=3, k=2))

    def boom(stats):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        flashkm._core.fit(X, 2, "k-means++", None, n_init=1, max_iter=5, tol=0.0, seed=0,
                          n_threads=0, sample_weight=None, callback=boom, target="")
    assert set(flashkm.available_targets()) >= {"reference"}


def _spherical_reference(X, C, max_iter):
    """Spherical k-means in float64: argmax cosine, mean direction of normalised rows."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    Xn = np.where(norms > 0, X / np.where(norms > 0, norms, 1), 0)
    C = C / np.linalg.norm(C, axis=1, keepdims=True)
    prev = None
    for it in range(1, max_iter + 1):
        labels = np.argmax(Xn @ C.T, axis=1)
        if it > 1 and np.array_equal(labels, prev):
            return C, labels
        prev = labels
        for c in range(C.shape[0]):
            s = Xn[labels == c].sum(axis=0)
            if np.linalg.norm(s) > 0:
                C[c] = s / np.linalg.norm(s)
    return C, np.argmax(Xn @ C.T, axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cosine_metric_is_spherical_kmeans(dtype):
    X, _ = make_blobs(n_samples=2000, n_features=10, centers=6, center_box=(-20, 20), random_state=3)
    X = X.astype(dtype)
    C0 = X[[0, 300, 600, 900, 1200, 1500]].astype(np.float64)
    km = flashkm.KMeans(6, init=C0.astype(dtype), n_init=1, max_iter=8, tol=0, metric="cosine").fit(X)
    C, labels = _spherical_reference(X.astype(np.float64), C0.copy(), 8)
    np.testing.assert_array_equal(km.labels_, labels)
    np.testing.assert_allclose(km.cluster_centers_, C, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(km.cluster_centers_, axis=1), 1, atol=1e-6)
    cos = np.sum(X.astype(np.float64) * C[labels], axis=1) / np.linalg.norm(X.astype(np.float64), axis=1)
    assert km.inertia_ == pytest.approx(np.sum(1 - cos), rel=1e-6)
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    assert km.score(X) == pytest.approx(-km.inertia_, rel=1e-6)
    np.testing.assert_array_equal(np.argmin(km.transform(X), axis=1), km.labels_)


def test_dot_metric_assigns_by_largest_inner_product():
    X, _ = make_blobs(n_samples=1500, n_features=6, centers=4, random_state=5)
    km = flashkm.KMeans(4, n_init=1, random_state=0, metric="dot").fit(X)
    np.testing.assert_array_equal(km.labels_, np.argmax(X @ km.cluster_centers_.T, axis=1))
    assert km.inertia_ == pytest.approx(-np.sum(X * km.cluster_centers_[km.labels_]), rel=1e-9)
    with pytest.raises(ValueError, match="metric"):
        flashkm.KMeans(4, metric="manhattan").fit(X)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_half_precision_input_matches_float32_without_a_copy(kind):
    import ml_dtypes  # a test dependency (pyproject.toml)
    rng = np.random.default_rng(2)
    centers = rng.integers(-60, 60, size=(5, 24))
    X32 = (centers[rng.integers(0, 5, 40000)] + rng.integers(-4, 5, size=(40000, 24))).astype(np.float32)
    dtype = np.float16 if kind == "float16" else ml_dtypes.bfloat16
    X16 = X32.astype(dtype)
    assert np.array_equal(X16.astype(np.float32), X32)  # the values are exact in 16 bits
    a = flashkm.KMeans(5, n_init=1, random_state=0).fit(X32)
    tracemalloc.start()
    b = flashkm.KMeans(5, n_init=1, random_state=0).fit(X16)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < X16.nbytes // 4, f"{peak} bytes allocated: a widened copy of X?"
    assert b.cluster_centers_.dtype == np.float32
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_
    np.testing.assert_array_equal(b.predict(X16), a.labels_)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_half_targets_amx_and_widening_agree_bitwise(kind, monkeypatch):
    """Non-integer 16-bit data, K = 100, D = 96: FlashAssign on AMX tiles (where the CPU has
    it) gives the bytes of the widening float32 kernels and of the float32 fit."""
    import ml_dtypes
    targets = flashkm.available_half_targets()
    simd_targets = flashkm.available_targets()
    first = 1 if targets[0] == "AMX_BF16" else 0
    assert targets[first:first + len(simd_targets)] == simd_targets
    rng = np.random.default_rng(8)
    dtype = np.float16 if kind == "float16" else ml_dtypes.bfloat16
    X16 = (rng.normal(size=(6000, 96)) * 2).astype(dtype)
    X32 = X16.astype(np.float32)
    simd = flashkm.available_targets()[0]
    fits = {}
    for target in [t for t in targets if t in ("AMX_BF16", "AVX512_BF16", simd)]:
        monkeypatch.setenv("FLASHKM_TARGET", target)
        fits[target] = flashkm.KMeans(100, n_init=1, init="random", random_state=3, max_iter=15).fit(X16)
    monkeypatch.setenv("FLASHKM_TARGET", simd)
    ref = flashkm.KMeans(100, n_init=1, init="random", random_state=3, max_iter=15).fit(X32)
    for km in fits.values():
        np.testing.assert_array_equal(km.cluster_centers_, ref.cluster_centers_)
        np.testing.assert_array_equal(km.labels_, ref.labels_)
        assert km.inertia_ == ref.inertia_ and km.n_iter_ == ref.n_iter_
    for target in ("AMX_BF16", "AVX512_BF16"):
        if target in targets:
            monkeypatch.setenv("FLASHKM_TARGET", target)
            with pytest.raises(ValueError, match=target):
                flashkm.KMeans(4, n_init=1).fit(X32)
