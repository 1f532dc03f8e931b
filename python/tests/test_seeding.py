"""Seeding: flashkm.kmeans_plusplus against scikit-learn's contract, init='k-means||', verbose."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import kmeans_plusplus as sk_kmeans_plusplus
from sklearn.datasets import make_blobs

import flashkm


def blobs(n=2000, d=12, centers=15, seed=0, dtype=np.float64):
    X, _ = make_blobs(n_samples=n, n_features=d, centers=centers, random_state=seed)
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_centers_are_the_chosen_rows(dtype):
    X = blobs(dtype=dtype)
    centers, indices = flashkm.kmeans_plusplus(X, 20, random_state=3)
    assert centers.dtype == dtype and centers.shape == (20, X.shape[1])
    assert indices.shape == (20,) and len(set(indices.tolist())) == 20
    np.testing.assert_array_equal(centers, X[indices])


def test_deterministic_for_a_seed_and_any_thread_count():
    X = blobs()
    w = np.random.default_rng(1).uniform(0, 2, len(X))
    a = flashkm.kmeans_plusplus(X, 30, sample_weight=w, random_state=7, n_threads=1)
    b = flashkm.kmeans_plusplus(X, 30, sample_weight=w, random_state=7, n_threads=2)
    np.testing.assert_array_equal(a[1], b[1])
    c = flashkm.kmeans_plusplus(X, 30, sample_weight=w, random_state=8)
    assert not np.array_equal(a[1], c[1])


def test_zero_weight_rows_are_never_chosen():
    X = blobs()
    w = np.ones(len(X))
    w[::2] = 0
    _, indices = flashkm.kmeans_plusplus(X, 25, sample_weight=w, random_state=0)
    assert np.all(indices % 2 == 1)


def test_kmeans_seeds_with_the_same_rows():
    # KMeans(init='k-means++') draws its seed from random_state as kmeans_plusplus does: the
    # same seeds, so the fits from them are bitwise the same.
    X = blobs()
    centers, _ = flashkm.kmeans_plusplus(X, 10, random_state=5)
    a = flashkm.KMeans(10, init="k-means++", random_state=5).fit(X)
    b = flashkm.KMeans(10, init=centers, n_init=1).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)


def test_n_local_trials_changes_the_seeding():
    X = blobs(n=3000, centers=40)
    one = flashkm.kmeans_plusplus(X, 40, random_state=2, n_local_trials=1)[0]
    many = flashkm.kmeans_plusplus(X, 40, random_state=2)[0]

    def potential(C):
        d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
        return d.min(1).sum()

    assert potential(many) < potential(one)


BAD = [
    ("n_clusters zero", lambda X: dict(X=X, n_clusters=0)),
    ("more clusters than rows", lambda X: dict(X=X[:5], n_clusters=6)),
    ("x_squared_norms length", lambda X: dict(X=X, n_clusters=3, x_squared_norms=np.ones(len(X) - 1))),
    ("n_local_trials zero", lambda X: dict(X=X, n_clusters=3, n_local_trials=0)),
    ("weights length", lambda X: dict(X=X, n_clusters=3, sample_weight=np.ones(len(X) + 1))),
    ("NaN in X", lambda X: dict(X=np.where(np.arange(X.size).reshape(X.shape) == 7, np.nan, X), n_clusters=3)),
    ("1-D X", lambda X: dict(X=X[:, 0], n_clusters=3)),
    ("n_clusters float", lambda X: dict(X=X, n_clusters=2.5)),
]


@pytest.mark.parametrize("name,args", BAD, ids=[b[0] for b in BAD])
def test_refuses_what_scikit_learn_refuses(name, args):
    X = blobs(n=50)
    with pytest.raises(Exception) as theirs:
        sk_kmeans_plusplus(**args(X))
    with pytest.raises(type(theirs.value)):
        flashkm.kmeans_plusplus(**args(X))


def test_negative_weights_are_refused():
    # scikit-learn's kmeans_plusplus takes them (and draws with negative "probabilities");
    # KMeans refuses them in both libraries, and so does flashkm's seeding.
    X = blobs(n=50)
    with pytest.raises(ValueError, match="(?i)negative"):
        flashkm.kmeans_plusplus(X, 3, sample_weight=-np.ones(len(X)))


def test_sparse_input_gives_the_dense_seeds():
    # The same draws from the same distances (to rounding): the same rows on blob data.
    X = blobs(n=500)
    c, i = flashkm.kmeans_plusplus(sp.csr_matrix(X), 5, random_state=3)
    cd, id_ = flashkm.kmeans_plusplus(X, 5, random_state=3)
    np.testing.assert_array_equal(i, id_)
    np.testing.assert_array_equal(c, cd)


def test_kmeans_parallel_init():
    X = blobs(n=4000, centers=30, d=8)
    a = flashkm.KMeans(30, init="k-means||", random_state=1, n_threads=1).fit(X)
    b = flashkm.KMeans(30, init="k-means||", random_state=1, n_threads=2).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    pp = flashkm.KMeans(30, random_state=1).fit(X)
    assert a.inertia_ <= 1.05 * pp.inertia_
    assert a.init_seconds_ > 0


def test_kmeans_parallel_options():
    # init_rounds and init_oversampling reach k-means|| (other draws, other seeds), are ignored
    # by k-means++, and are validated as scikit-learn validates parameters.
    X = blobs(n=3000, centers=30, d=8)

    def fit(**kw):
        return flashkm.KMeans(30, random_state=1, max_iter=1, n_threads=2, **kw).fit(X)

    base = fit(init="k-means||")
    np.testing.assert_array_equal(base.cluster_centers_,
                                  fit(init="k-means||", init_rounds=5, init_oversampling=2.0).cluster_centers_)
    assert not np.array_equal(base.cluster_centers_, fit(init="k-means||", init_rounds=2).cluster_centers_)
    assert not np.array_equal(base.cluster_centers_, fit(init="k-means||", init_oversampling=0.5).cluster_centers_)
    np.testing.assert_array_equal(fit().cluster_centers_, fit(init_rounds=1, init_oversampling=7.0).cluster_centers_)
    for bad in [dict(init_rounds=0), dict(init_oversampling=0.0), dict(init_oversampling=-1.0)]:
        with pytest.raises(ValueError):
            fit(init="k-means||", **bad)


def test_verbose_reports_seeding(capsys):
    flashkm.KMeans(12, verbose=1, random_state=0).fit(blobs())
    out = capsys.readouterr().out
    assert "Seeding (k-means++): 12/12" in out
    assert "Initialization complete" in out
