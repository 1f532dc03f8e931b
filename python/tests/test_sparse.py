"""SciPy sparse input: flashkm.KMeans and MiniBatchKMeans on CSR (and other formats) against
scikit-learn on the same sparse matrices and against flashkm on the densified rows."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans as SkKMeans

import flashkm


def tfidf_like(n, d, density, seed, dtype=np.float64, empty=()):
    """Rows of positive weights at random columns, scaled to unit norm (TF-IDF's shape)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng,
                  data_rvs=lambda m: rng.exponential(1.0, m) + 0.1).astype(np.float64)
    X = X.tolil()
    for i in empty:
        X.rows[i] = []
        X.data[i] = []
    X = X.tocsr()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ X
    return sp.csr_matrix(X, dtype=dtype)


def start(X, k, seed):
    """Initial centres: k rows plus a small dense positive offset (rows alone put a row that
    shares no column with any of them at exactly the same distance from all: an exact tie that
    each implementation's rounding breaks its own way)."""
    rng = np.random.default_rng(seed)
    C0 = X[rng.choice(X.shape[0], k, replace=False)].toarray()
    return (C0 + rng.uniform(0, 0.05, C0.shape)).astype(X.dtype)


CASES = [  # n, d, k, density
    (2000, 500, 20, 0.02),
    (600, 3000, 40, 0.005),
    (400, 40, 8, 0.3),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n,d,k,density", CASES)
def test_same_result_as_scikit_learn_from_same_init(dtype, weighted, n, d, k, density):
    X = tfidf_like(n, d, density, seed=n + d, dtype=dtype, empty=(3, 17))
    C0 = start(X, k, seed=k)
    sw = np.random.default_rng(5).uniform(0.1, 3, n) if weighted else None
    ours = flashkm.KMeans(k, init=C0, n_init=1, n_threads=2).fit(X, sample_weight=sw)
    ref = SkKMeans(k, init=C0, n_init=1, algorithm="lloyd").fit(X, sample_weight=sw)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.cluster_centers_.dtype == dtype
    # float32: scikit-learn accumulates the sums in float32, flashkm in float64 (coordinates < 1).
    atol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=atol)
    np.testing.assert_allclose(ours.inertia_, ref.inertia_, rtol=1e-5 if dtype == np.float32 else 1e-10)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    # Squared distances, expanded as ||x||^2 + ||c||^2 - 2 x.c, are good to the rounding of
    # ||x||^2 + ||c||^2 (about 2 here) in X's type; the square root would magnify that near 0.
    np.testing.assert_allclose(ours.transform(X) ** 2, ref.transform(X) ** 2, rtol=0,
                               atol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(ours.score(X, sample_weight=sw), ref.score(X, sample_weight=sw),
                               rtol=1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_sparse_integers_as_scikit_learn(dtype):
    # Not normalised, a constant column and an all-zero column, several densities.
    rng = np.random.default_rng(2)
    for density in (0.05, 0.3, 0.9):
        X = sp.random(500, 30, density=density, format="csr", random_state=rng,
                      data_rvs=lambda m: rng.integers(1, 9, m)).astype(dtype).tolil()
        X[:, 4] = 0
        X[:, 7] = 2
        X = X.tocsr()
        X.eliminate_zeros()
        C0 = X[:6].toarray() + rng.uniform(0, 0.1, (6, 30)).astype(dtype)
        ours = flashkm.KMeans(6, init=C0, n_init=1).fit(X)
        ref = SkKMeans(6, init=C0, n_init=1).fit(X)
        np.testing.assert_array_equal(ours.labels_, ref.labels_)
        assert ours.n_iter_ == ref.n_iter_
        np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_,
                                   atol=1e-4 if dtype == np.float32 else 1e-10)
        np.testing.assert_allclose(ours.inertia_, ref.inertia_, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_and_sparse_give_the_same_labels(dtype):
    X = tfidf_like(1500, 300, 0.03, seed=7, dtype=dtype)
    C0 = start(X, 25, seed=1)
    s = flashkm.KMeans(25, init=C0, n_init=1).fit(X)
    d = flashkm.KMeans(25, init=C0, n_init=1).fit(X.toarray())
    np.testing.assert_array_equal(s.labels_, d.labels_)
    assert s.n_iter_ == d.n_iter_
    np.testing.assert_allclose(s.cluster_centers_, d.cluster_centers_, atol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(s.predict(X), d.predict(X.toarray()))


@pytest.mark.parametrize("init", ["k-means++", "random", "k-means||"])
def test_every_init_and_thread_counts(init):
    X = tfidf_like(3000, 800, 0.01, seed=3, dtype=np.float32)
    fits = [flashkm.KMeans(30, init=init, random_state=4, n_threads=t).fit(X) for t in (1, 2, 3)]
    for f in fits[1:]:
        np.testing.assert_array_equal(f.labels_, fits[0].labels_)
        np.testing.assert_array_equal(f.cluster_centers_, fits[0].cluster_centers_)
        assert f.inertia_ == fits[0].inertia_
    assert len(np.unique(fits[0].labels_)) == 30
    # As good a local minimum as scikit-learn's from its own k-means++ seeds (a loose check).
    ref = SkKMeans(30, random_state=4, n_init=1).fit(X)
    assert fits[0].inertia_ < 1.05 * ref.inertia_


def test_kmeans_plusplus_on_sparse_rows():
    X = tfidf_like(800, 200, 0.05, seed=9)
    centers, idx = flashkm.kmeans_plusplus(X, 12, random_state=0, n_threads=1)
    np.testing.assert_array_equal(centers, X[idx].toarray())
    c3, i3 = flashkm.kmeans_plusplus(X, 12, random_state=0, n_threads=3)
    np.testing.assert_array_equal(i3, idx)
    assert len(set(idx.tolist())) == 12


@pytest.mark.parametrize("fmt", ["csc", "coo", "lil", "csr_array", "dok"])
def test_other_formats_are_converted(fmt):
    X = tfidf_like(300, 50, 0.1, seed=11)
    C0 = start(X, 5, seed=2)
    want = flashkm.KMeans(5, init=C0, n_init=1).fit(X)
    Y = sp.csr_array(X) if fmt == "csr_array" else X.asformat(fmt)
    got = flashkm.KMeans(5, init=C0, n_init=1).fit(Y)
    np.testing.assert_array_equal(got.labels_, want.labels_)
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)
    np.testing.assert_array_equal(got.predict(Y), want.labels_)


def test_duplicate_entries_are_summed():
    # A non-canonical CSR matrix: column 1 of row 0 stored twice (SciPy reads it as 3).
    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0, 4.0]), np.array([1, 1, 0, 2]), np.array([0, 2, 3, 4])), shape=(3, 3))
    D = X.toarray()
    C0 = np.array([[0.0, 3.0, 0.0], [4.0, 0.0, 4.0]])
    got = flashkm.KMeans(2, init=C0, n_init=1).fit(X)
    want = flashkm.KMeans(2, init=C0, n_init=1).fit(D)
    np.testing.assert_array_equal(got.labels_, want.labels_)
    np.testing.assert_allclose(got.cluster_centers_, want.cluster_centers_)
    assert X.nnz == 4  # the caller's matrix is not modified


def test_awkward_shapes():
    rng = np.random.default_rng(0)
    one = sp.csr_matrix(np.array([[0.0, 2.0, 0.0]]))  # N = 1, K = 1
    m = flashkm.KMeans(1, n_init=1).fit(one)
    np.testing.assert_array_equal(m.cluster_centers_, [[0.0, 2.0, 0.0]])
    assert m.inertia_ == 0
    single = sp.csr_matrix(([5.0], ([3], [2])), shape=(10, 4))  # a single non-zero
    C0 = np.zeros((2, 4))
    C0[1, 2] = 1.0
    got = flashkm.KMeans(2, init=C0, n_init=1).fit(single)
    ref = SkKMeans(2, init=C0, n_init=1).fit(single)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_)
    col = sp.csr_matrix(rng.integers(0, 3, (50, 1)).astype(float))  # D = 1, explicit zeros dropped
    C0 = np.array([[0.1], [1.1], [1.9]])
    got = flashkm.KMeans(3, init=C0, n_init=1).fit(col)
    ref = SkKMeans(3, init=C0, n_init=1).fit(col)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    np.testing.assert_allclose(got.cluster_centers_, ref.cluster_centers_)
    # K = N with duplicate rows and empty rows: every cluster gets a row.
    X = tfidf_like(20, 30, 0.2, seed=4, empty=(2, 5)).tolil()
    X[10] = X[11]
    X[12] = X[11]
    X = X.tocsr()
    m = flashkm.KMeans(20, random_state=0).fit(X)
    assert m.cluster_centers_.shape == (20, 30)
    assert np.isfinite(m.inertia_)
    # All rows empty.
    Z = sp.csr_matrix((6, 4))
    m = flashkm.KMeans(2, init=np.array([[0.0, 0, 0, 0], [1.0, 0, 0, 0]]), n_init=1).fit(Z)
    np.testing.assert_array_equal(m.labels_, 0)


def test_stored_zeros_and_int_indices_are_accepted():
    X = tfidf_like(200, 40, 0.1, seed=12)
    Y = X.copy()
    Y.data[::5] = 0.0  # explicit zeros stay stored
    Y.indices = Y.indices.astype(np.int64)
    Y.indptr = Y.indptr.astype(np.int64)
    C0 = start(X, 4, seed=3)
    got = flashkm.KMeans(4, init=C0, n_init=1).fit(Y)
    Z = Y.copy()
    Z.eliminate_zeros()
    want = flashkm.KMeans(4, init=C0, n_init=1).fit(Z)
    np.testing.assert_array_equal(got.labels_, want.labels_)
    np.testing.assert_allclose(got.cluster_centers_, want.cluster_centers_)


def test_nan_is_refused():
    X = tfidf_like(50, 10, 0.3, seed=1)
    X.data[3] = np.nan
    with pytest.raises(ValueError):
        flashkm.KMeans(2).fit(X)


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_inner_product_metrics_match_dense(metric):
    X = tfidf_like(1000, 200, 0.05, seed=21)
    C0 = start(X, 10, seed=5)
    s = flashkm.KMeans(10, init=C0, n_init=1, metric=metric, max_iter=30).fit(X)
    d = flashkm.KMeans(10, init=C0, n_init=1, metric=metric, max_iter=30).fit(X.toarray())
    np.testing.assert_array_equal(s.labels_, d.labels_)
    np.testing.assert_allclose(s.cluster_centers_, d.cluster_centers_, atol=1e-10)
    np.testing.assert_allclose(s.inertia_, d.inertia_, rtol=1e-9)
    np.testing.assert_allclose(s.transform(X), d.transform(X.toarray()), atol=1e-10)
    np.testing.assert_allclose(s.score(X), d.score(X.toarray()), rtol=1e-9)


def test_fit_predict_and_fit_transform():
    X = tfidf_like(500, 100, 0.05, seed=31, dtype=np.float32)
    C0 = start(X, 6, seed=6)
    m = flashkm.KMeans(6, init=C0, n_init=1)
    np.testing.assert_array_equal(m.fit_predict(X), m.labels_)
    T = flashkm.KMeans(6, init=C0, n_init=1).fit_transform(X)
    assert T.shape == (500, 6) and T.dtype == np.float32
    np.testing.assert_allclose(T ** 2, SkKMeans(6, init=C0, n_init=1).fit_transform(X) ** 2, atol=1e-6)
    # A float64 query against float32 centres is converted once, and still sparse.
    assert np.array_equal(m.predict(X.astype(np.float64)), m.labels_)


def overlapping(n, d, seed, dtype=np.float64):
    """Sparse rows that share many columns: no row is equidistant (to rounding) from several
    centres that are rows (the seeds of k-means++ and random init), so that the dense path's
    rounding and the sparse path's cannot break a tie differently and send the runs apart."""
    rng = np.random.default_rng(seed)
    return sp.random(n, d, density=0.4, format="csr", random_state=rng,
                     data_rvs=lambda m: rng.uniform(0.1, 1.0, m)).astype(dtype)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_minibatch_sparse_equals_dense(metric):
    X = overlapping(3000, 60, seed=41)
    kw = dict(n_clusters=8, random_state=3, batch_size=256, max_iter=5, metric=metric, tol=1e-4)
    s = flashkm.MiniBatchKMeans(**kw).fit(X)
    d = flashkm.MiniBatchKMeans(**kw).fit(X.toarray())
    assert s.n_steps_ == d.n_steps_
    np.testing.assert_allclose(s.cluster_centers_, d.cluster_centers_, atol=1e-10)
    np.testing.assert_array_equal(s.labels_, d.labels_)
    np.testing.assert_allclose(s.inertia_, d.inertia_, rtol=1e-9)
    p = flashkm.MiniBatchKMeans(**kw)
    q = flashkm.MiniBatchKMeans(**kw)
    for i in range(0, 3000, 500):
        p.partial_fit(X[i:i + 500])
        q.partial_fit(X[i:i + 500].toarray())
    np.testing.assert_allclose(p.cluster_centers_, q.cluster_centers_, atol=1e-10)
    np.testing.assert_array_equal(p.predict(X), q.predict(X.toarray()))


def test_minibatch_random_init_on_sparse():
    X = overlapping(2000, 40, seed=42, dtype=np.float32)
    m = flashkm.MiniBatchKMeans(10, init="random", random_state=0, n_init=2).fit(X)
    d = flashkm.MiniBatchKMeans(10, init="random", random_state=0, n_init=2).fit(X.toarray())
    np.testing.assert_allclose(m.cluster_centers_, d.cluster_centers_, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_pruning_changes_the_speed_never_the_answer(dtype, metric):
    # Clustered sparse rows: 12 topics of 60 columns each, a few columns anywhere.
    rng = np.random.default_rng(8)
    n, d, topics = 3000, 720, 12
    rows, cols, vals = [], [], []
    for i in range(n):
        t = rng.integers(topics)
        c = np.unique(np.concatenate([t * 60 + rng.integers(0, 60, 12), rng.integers(0, d, 2)]))
        rows += [i] * len(c)
        cols += list(c)
        vals += list(rng.exponential(1.0, len(c)) + 0.1)
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, d))
    X = sp.csr_matrix(sp.diags(1 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())) @ X, dtype=dtype)
    fits = {p: flashkm.KMeans(24, random_state=2, n_init=1, tol=0, max_iter=30, metric=metric, prune=p).fit(X)
            for p in (False, True, "auto")}
    off = fits[False]
    for p in (True, "auto"):
        on = fits[p]
        np.testing.assert_array_equal(on.labels_, off.labels_)
        np.testing.assert_array_equal(on.cluster_centers_, off.cluster_centers_)
        assert on.inertia_ == off.inertia_ and on.n_iter_ == off.n_iter_
        assert [h["inertia"] for h in on.history_] == [h["inertia"] for h in off.history_]
    assert all(h["distances"] == n * 24 for h in off.history_)
    assert fits[True].history_[-1]["distances"] < n * 24 // 2
    # elkan means prune=True.
    elkan = flashkm.KMeans(24, random_state=2, n_init=1, tol=0, max_iter=30, metric=metric, algorithm="elkan").fit(X)
    assert [h["distances"] for h in elkan.history_] == [h["distances"] for h in fits[True].history_]
