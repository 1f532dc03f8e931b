"""flashkm.mpi: k-means over the rows of many MPI ranks, from Python programs run under mpirun.

Each rank passes its own rows (its shard) to ``fit``; the C++ MPI engine clusters the rows of
all ranks, concatenated in rank order, on the caller's communicator (mpi4py; the default is
``MPI.COMM_WORLD``). Every rank gets the same ``cluster_centers_``, ``inertia_`` and
``n_iter_``, and its own rows' ``labels_``: the answer of one process on all the rows (up to
float64 rounding of the centroid sums), as ``flashkm fit --distributed`` gives. An error on any
rank is raised on every rank, so no rank is left waiting.

Needs mpi4py (``pip install flashkm[mpi]``) and a flashkm built with MPI (Debian:
``libopenmpi-dev`` when the package is built).

Example (``mpirun -np 4 python script.py``)::

    from mpi4py import MPI
    import numpy as np
    from flashkm.mpi import KMeans

    X_mine = np.load(f"shard-{MPI.COMM_WORLD.rank}.npy")
    km = KMeans(n_clusters=1024, random_state=0).fit(X_mine)
    km.cluster_centers_   # the same on every rank
    km.labels_            # this rank's rows
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions

from ._kmeans import KMeans as _KMeans
from ._kmeans import _half_kind

__all__ = ["KMeans"]


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - the test environment has mpi4py
        raise ImportError("flashkm.mpi needs mpi4py: pip install 'flashkm[mpi]'") from e
    return MPI


def _engine():
    try:
        from . import _mpi as engine
    except ImportError as e:
        raise ImportError("this flashkm was built without MPI (install libopenmpi-dev and reinstall flashkm)") from e
    return engine


def _agreed(comm, fn):
    """fn() on every rank; if it raised on any rank, every rank raises: the rank's own exception
    where it failed, the lowest failing rank's (same type, message prefixed 'rank R: ') elsewhere."""
    try:
        out, err = fn(), None
    except Exception as e:  # noqa: BLE001 - every error must reach every rank
        out, err = None, e
    errors = comm.allgather(None if err is None else (type(err), str(err)))
    if err is not None:
        raise err
    for rank, e in enumerate(errors):
        if e is not None:
            kind, message = e
            raise kind(f"rank {rank}: {message}")
    return out


class KMeans(_KMeans):
    """Exact Lloyd k-means over the rows of all MPI ranks (mpi4py).

    The parameters are those of :class:`flashkm.KMeans`, plus ``comm``, and must be the same on
    every rank (``random_state`` is taken from rank 0; an array ``init`` too).

    Parameters
    ----------
    comm : mpi4py communicator or None, default=None
        The ranks that cluster together; None means ``MPI.COMM_WORLD``.

    Notes
    -----
    ``fit(X)`` takes this rank's rows (at least one per rank; the same number of columns and
    float dtype on every rank; float16/bfloat16 rows are widened to float32; sparse input is
    not supported here). ``labels_`` holds this rank's rows' labels; ``predict``,
    ``transform`` and ``score`` work on the rows they are given, locally. ``init`` may be
    'k-means++' (run on a sample of at most max(64 K, 65536) rows gathered from all ranks),
    'k-means||' (likewise), 'random' (exactly the rows one process would draw) or an array;
    not a callable. ``verbose`` prints on rank 0, the seeding's progress included (k-means||'s
    rounds with rank 0's own distances, k-means++'s centres chosen on the gathered sample;
    'random', one collective draw, prints none). Ctrl-C on any rank
    stops every rank at the end of the iteration with KeyboardInterrupt.
    """

    _parameter_constraints = {
        **_KMeans._parameter_constraints,
        "init": [StrOptions({"k-means++", "k-means||", "random"}), "array-like"],
        "comm": [None, object],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        init="k-means++",
        n_init="auto",
        max_iter=300,
        tol=1e-4,
        verbose=0,
        random_state=None,
        copy_x=True,
        algorithm="lloyd",
        n_threads=None,
        metric="euclidean",
        prune="auto",
        init_rounds=5,
        init_oversampling=2.0,
        comm=None,
    ):
        super().__init__(n_clusters=n_clusters, init=init, n_init=n_init, max_iter=max_iter, tol=tol,
                         verbose=verbose, random_state=random_state, copy_x=copy_x, algorithm=algorithm,
                         n_threads=n_threads, metric=metric, prune=prune, init_rounds=init_rounds,
                         init_oversampling=init_oversampling)
        self.comm = comm

    def _comm(self):
        return self.comm if self.comm is not None else _mpi().COMM_WORLD

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Cluster the rows of all ranks; X is this rank's rows (n_rows_mine, n_features)."""
        comm = self._comm()
        engine = _engine()
        is_root = comm.Get_rank() == 0

        def check():
            nonlocal X
            if sp.issparse(X):
                raise TypeError("flashkm.mpi.KMeans does not take sparse input; pass dense rows")
            if isinstance(X, np.ndarray) and _half_kind(X):
                X = X.astype(np.float32)
            X = self._validate_data(X, reset=True)
            sw = None if sample_weight is None else self._weights(sample_weight, X)
            return X, sw

        X, sw = _agreed(comm, check)
        kinds = comm.allgather((X.dtype.str, X.shape[1]))
        if len(set(kinds)) != 1:
            raise ValueError("the ranks' rows differ in dtype or number of columns: "
                             + ", ".join(f"rank {r}: {d} x {c}" for r, (d, c) in enumerate(kinds)))
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max)) if is_root else None
        seed = comm.bcast(seed, root=0)
        if isinstance(self.init, str):
            init, centers, n_init = self.init, None, self._n_init()
        else:
            centers = comm.bcast(np.asarray(self.init) if is_root else None, root=0)
            centers = _agreed(comm, lambda: self._check_centroids(centers, X))
            init, n_init = "explicit", 1

        def report(stats):
            if stats["iteration"] == 1:
                print("Initialization complete")
            print(f"Iteration {stats['iteration'] - 1}, inertia {stats['inertia']}.")

        res = engine.fit(X, self.n_clusters, init, centers, n_init=n_init, max_iter=self.max_iter,
                         tol=float(self.tol), seed=seed, n_threads=self._threads(), sample_weight=sw,
                         callback=report if self.verbose and is_root else None, metric=self.metric,
                         prune=self._prune(), comm=comm.py2f(),
                         seed_callback=self._seed_callback() if is_root else None,
                         init_rounds=int(self.init_rounds), init_oversampling=float(self.init_oversampling))
        if any(comm.allgather(bool(res["interrupted"]))):
            raise KeyboardInterrupt("flashkm.mpi.KMeans.fit interrupted on a rank; every rank stopped")
        self.cluster_centers_ = res["centroids"]
        self.labels_ = res["labels"]
        self.inertia_ = float(res["inertia"])
        self.n_iter_ = int(res["n_iter"])
        best = res["best_init"]
        self.history_ = [h for h in res["history"] if h["init_run"] == best]
        self.init_seconds_ = float(res["init_seconds"])
        self._n_features_out = self.cluster_centers_.shape[0]
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        """fit, then this rank's rows' labels."""
        return self.fit(X, sample_weight=sample_weight).labels_
