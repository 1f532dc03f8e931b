"""flashkm.mpi.KMeans under mpirun (mpi4py): 1-4 ranks give the one-process answer; errors
reach every rank; a communicator other than COMM_WORLD is honoured."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from flashkm import KMeans

WORKER = os.path.join(os.path.dirname(__file__), "mpi_worker.py")
MPIRUN = shutil.which("mpirun")


def run(tmp_path, ranks, cases):
    """Runs the worker on `ranks` ranks over the comma-separated cases; {case: (results, errors)}."""
    out = tmp_path / f"{ranks}"
    out.mkdir()
    cmd = [MPIRUN, "--oversubscribe", "-np", str(ranks), "-x", "OMP_NUM_THREADS=1"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    p = subprocess.run(cmd + [sys.executable, WORKER, str(out), cases], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    got = {}
    for case in cases.split(","):
        results, errors = {}, {}
        for r in range(ranks):
            if (out / f"{case}-rank{r}.npz").exists():
                results[r] = dict(np.load(out / f"{case}-rank{r}.npz"))
            if (out / f"{case}-rank{r}.err").exists():
                errors[r] = (out / f"{case}-rank{r}.err").read_text()
        got[case] = (results, errors)
    return got


def data(shift=0.0):
    rng = np.random.default_rng(5)
    X = (rng.normal(size=(4001, 7)) + 10 * rng.integers(0, 6, size=(4001, 1))).astype(np.float64)
    return X + shift, rng.uniform(0.5, 2.0, size=4001)


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_ranks_give_the_one_process_answer(tmp_path, ranks):
    cases = ["random", "array", "k-means++"]
    got = run(tmp_path, ranks, ",".join(cases))
    for case in cases:
        check_one_process_answer(case, ranks, *got[case])


def check_one_process_answer(case, ranks, results, errors):
    X, w = data()
    init = {"random": "random", "array": X[[3, 500, 1000, 2000, 3000, 4000]]}.get(case, "k-means++")
    # n_init=1: with several runs, two of (nearly) equal inertia may be a genuine tie that float64
    # rounding of the sums decides either way.
    one = KMeans(n_clusters=6, init=init, n_init=1, random_state=11, n_threads=1).fit(X, sample_weight=w)
    assert not errors and len(results) == ranks, (case, errors)
    labels = np.concatenate([results[r]["labels"] for r in range(ranks)])
    np.testing.assert_array_equal(labels, one.labels_)
    for r in range(ranks):
        res = results[r]
        # The same model on every rank, bitwise, and the one-process model up to float64 rounding.
        np.testing.assert_array_equal(res["centers"], results[0]["centers"])
        np.testing.assert_allclose(res["centers"], one.cluster_centers_, rtol=1e-12, atol=1e-12)
        assert int(res["n_iter"]) == one.n_iter_
        assert float(res["inertia"]) == pytest.approx(one.inertia_, rel=1e-12)
        np.testing.assert_array_equal(res["predicted"], res["labels"])


def test_sub_communicators_and_errors_reach_every_rank(tmp_path):
    got = run(tmp_path, 4, "halves,nan,columns")
    results, errors = got["halves"]
    assert not errors
    for color in (0, 1):
        X, w = data(100.0 * color)
        one = KMeans(n_clusters=6, init="k-means++", random_state=11, n_threads=1).fit(X, sample_weight=w)
        ranks = [r for r in range(4) if r % 2 == color]
        labels = np.concatenate([results[r]["labels"] for r in ranks])
        np.testing.assert_array_equal(labels, one.labels_)
        for r in ranks:
            np.testing.assert_allclose(results[r]["centers"], one.cluster_centers_, rtol=1e-12, atol=1e-12)

    for case, fragment in (("nan", "NaN"), ("columns", "column")):
        results, errors = got[case]
        assert not results
        assert sorted(errors) == [0, 1, 2, 3]
        for r, text in errors.items():
            assert text.startswith("ValueError"), text
            assert fragment.lower() in text.lower(), text


def test_kmeans_parallel_options_and_verbose_seeding(tmp_path):
    # init_rounds and init_oversampling reach the MPI engine (2 ranks give the one-process
    # answer's labels, as k-means|| draws the same rows for any split); verbose prints the
    # seeding's progress on rank 0 only, k-means||'s rounds as k-means++'s centres on the
    # gathered sample.
    results, errors = run(tmp_path, 2, "verbose")["verbose"]
    assert not errors, errors
    X, w = data()
    one = KMeans(n_clusters=6, init="k-means||", init_rounds=2, init_oversampling=3.0, n_init=1, random_state=11,
                 n_threads=1).fit(X, sample_weight=w)
    np.testing.assert_array_equal(np.concatenate([results[r]["labels"] for r in range(2)]), one.labels_)
    printed = str(results[0]["printed"])
    assert "Seeding (k-means||): 2/2" in printed, printed
    assert "Iteration 0" in printed, printed
    assert str(results[1]["printed"]) == ""
    printed = str(results[0]["printed_pp"])
    assert "Seeding (k-means++): 6/6" in printed, printed
    assert str(results[1]["printed_pp"]) == ""


@pytest.mark.parametrize("ranks", [2, 3])
def test_inner_product_metrics_give_the_one_process_answer(tmp_path, ranks):
    # The shards' engines are made for the metric (rows uncentred; cosine's Lloyd steps weighted
    # by w / ||x||) while the MPI engine centres them on the global means for its own statistics.
    got = run(tmp_path, ranks, "cosine,dot")
    X, w = data()
    for metric in ("cosine", "dot"):
        results, errors = got[metric]
        assert not errors and len(results) == ranks, (metric, errors)
        one = KMeans(n_clusters=6, init="k-means++", n_init=1, random_state=11, n_threads=1,
                     metric=metric).fit(X, sample_weight=w)
        np.testing.assert_array_equal(np.concatenate([results[r]["labels"] for r in range(ranks)]), one.labels_)
        for r in range(ranks):
            np.testing.assert_array_equal(results[r]["centers"], results[0]["centers"])
            np.testing.assert_allclose(results[r]["centers"], one.cluster_centers_, rtol=1e-12, atol=1e-12)
            assert int(results[r]["n_iter"]) == one.n_iter_
