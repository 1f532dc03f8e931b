"""Run by test_mpi.py under mpirun: each rank fits its share of one data set with flashkm.mpi.KMeans
and saves what it got to OUT/rank<R>.npz (or the error it raised to OUT/rank<R>.err)."""
import contextlib
import io
import os
import sys

import numpy as np
from mpi4py import MPI

from flashkm.mpi import KMeans

out = sys.argv[1]
world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()


def run(case):
    rng = np.random.default_rng(5)
    X = (rng.normal(size=(4001, 7)) + 10 * rng.integers(0, 6, size=(4001, 1))).astype(np.float64)
    w = rng.uniform(0.5, 2.0, size=4001)
    comm, members = world, size
    if case == "halves":  # two communicators, even and odd ranks, clustering different data
        comm = world.Split(rank % 2, rank)
        members = comm.Get_size()
        X = X + 100.0 * (rank % 2)
    me = comm.Get_rank()
    lo, hi = len(X) * me // members, len(X) * (me + 1) // members
    mine, w_mine = X[lo:hi].copy(), w[lo:hi]
    if case == "nan" and rank == size - 1:
        mine[0, 3] = np.nan
    if case == "columns" and rank == 0:
        mine = mine[:, :5]
    if case == "verbose":  # k-means|| with its options, verbose: rank 0 prints the seeding
        text, text_pp = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(text):
            km = KMeans(n_clusters=6, init="k-means||", init_rounds=2, init_oversampling=3.0, n_init=1,
                        random_state=11, n_threads=1, verbose=1).fit(mine, sample_weight=w_mine)
        with contextlib.redirect_stdout(text_pp):  # k-means++ on the gathered sample
            KMeans(n_clusters=6, n_init=1, random_state=11, n_threads=1, verbose=1).fit(mine, sample_weight=w_mine)
        np.savez(os.path.join(out, f"{case}-rank{rank}.npz"), centers=km.cluster_centers_, labels=km.labels_,
                 printed=np.array(text.getvalue()), printed_pp=np.array(text_pp.getvalue()))
        return
    try:
        init = {"random": "random", "array": X[[3, 500, 1000, 2000, 3000, 4000]]}.get(case, "k-means++")
        metric = case if case in ("cosine", "dot") else "euclidean"  # engines made for the metric
        km = KMeans(n_clusters=6, init=init, n_init=1, random_state=11, n_threads=1, metric=metric,
                    comm=None if case != "halves" else comm).fit(mine, sample_weight=w_mine)
        np.savez(os.path.join(out, f"{case}-rank{rank}.npz"), centers=km.cluster_centers_, labels=km.labels_,
                 inertia=km.inertia_, n_iter=km.n_iter_, predicted=km.predict(mine))
    except Exception as e:  # the test checks that every rank raised
        with open(os.path.join(out, f"{case}-rank{rank}.err"), "w") as f:
            f.write(f"{type(e).__name__}: {e}")


for case in sys.argv[2].split(","):
    run(case)
