"""KMeans(prune=...): the pruned fit is bitwise the unpruned one and computes fewer distances."""

import numpy as np
import pytest

import flashkm


def data(dtype, seed=3, d=24):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (60, d))
    X = centres[rng.integers(0, 60, 8000)] + rng.normal(0, 1, (8000, d))
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_pruned_fit_is_bitwise_the_unpruned(dtype, metric):
    X = data(dtype)
    w = np.random.default_rng(1).uniform(0, 2, len(X))
    kw = dict(n_clusters=64, random_state=0, tol=0, max_iter=40, metric=metric)
    off = flashkm.KMeans(prune=False, **kw).fit(X, sample_weight=w)
    on = flashkm.KMeans(prune=True, **kw).fit(X, sample_weight=w)
    assert off.cluster_centers_.tobytes() == on.cluster_centers_.tobytes()
    assert np.array_equal(off.labels_, on.labels_)
    assert off.inertia_ == on.inertia_ and off.n_iter_ == on.n_iter_
    assert len(off.history_) == len(on.history_)
    for a, b in zip(off.history_, on.history_):
        assert a["inertia"] == b["inertia"] and a["labels_changed"] == b["labels_changed"]
        assert a["distances"] == len(X) * 64
    assert sum(h["distances"] for h in on.history_) < sum(h["distances"] for h in off.history_) / 2


def test_elkan_means_prune_and_auto_prunes():
    X = data(np.float32, d=32)  # auto tries the bounds from K x D = 2048 on
    elkan = flashkm.KMeans(64, algorithm="elkan", random_state=0).fit(X)
    lloyd = flashkm.KMeans(64, algorithm="lloyd", prune=False, random_state=0).fit(X)
    auto = flashkm.KMeans(64, random_state=0).fit(X)
    assert np.array_equal(elkan.labels_, lloyd.labels_)
    assert elkan.cluster_centers_.tobytes() == auto.cluster_centers_.tobytes()
    assert auto.history_[-1]["distances"] < len(X) * 64
    with pytest.raises(ValueError, match="elkan"):
        flashkm.KMeans(8, algorithm="elkan", prune=False).fit(X)


def test_auto_leaves_cheap_rows_unpruned():
    X = data(np.float32)  # K x D = 64 x 24 < 2048: a row's upkeep would cost its distances
    auto = flashkm.KMeans(64, random_state=0, tol=0, max_iter=30).fit(X)
    on = flashkm.KMeans(64, prune=True, random_state=0, tol=0, max_iter=30).fit(X)
    assert auto.cluster_centers_.tobytes() == on.cluster_centers_.tobytes()
    assert all(h["distances"] == len(X) * 64 for h in auto.history_)
    assert on.history_[-1]["distances"] < len(X) * 64


def test_prune_refused_for_dot_and_bad_values():
    X = data(np.float32)
    with pytest.raises(ValueError, match="dot"):
        flashkm.KMeans(8, metric="dot", prune=True).fit(X)
    r = flashkm.KMeans(8, metric="dot", random_state=0).fit(X)
    assert all(h["distances"] == len(X) * 8 for h in r.history_)
    with pytest.raises(ValueError):
        flashkm.KMeans(8, prune="sometimes").fit(X)
