"""DLPack input against numpy input: what reading another library's array costs flashkm.

Per kind of array (numpy, a minimal DLPack producer, JAX and PyTorch when installed): the time
to read it (flashkm._arrays.as_numpy), predict's time over interleaved runs (median and min), and
what Python allocates during fit + predict (tracemalloc). Run with the package installed:
    python bench/bench_dlpack.py [N] [D] [K]
"""

import sys
import time
import timeit
import tracemalloc

import numpy as np

import flashkm
from flashkm._arrays import as_numpy


class Producer:
    """An array of no known library: DLPack only."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def main():
    n, d, k = (int(v) for v in (sys.argv[1:] + ["1000000", "32", "64"][len(sys.argv) - 1:])[:3])
    X = np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)
    kinds = {"numpy": X, "DLPack producer": Producer(X)}
    try:
        import jax.numpy as jnp
        kinds["JAX"] = jnp.asarray(X)
    except ImportError:
        pass
    try:
        import torch
        kinds["PyTorch"] = torch.from_dlpack(X)
    except ImportError:
        pass
    for name, A in kinds.items():
        if name != "numpy":
            reps = 2000
            t = timeit.timeit(lambda: as_numpy(A), number=reps) / reps
            print(f"reading {name}: {t * 1e6:.1f} us per call")
    km = flashkm.KMeans(k, init=X[:k], n_init=1, max_iter=1).fit(X)
    times = {name: [] for name in kinds}
    for _ in range(15):
        for name, A in kinds.items():
            t = time.perf_counter()
            km.predict(A)
            times[name].append(time.perf_counter() - t)
    for name, A in kinds.items():
        tracemalloc.start()
        km.fit(A)
        km.predict(A)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        v = times[name]
        print(f"predict {n} x {d}, K = {k}, {name}: median {np.median(v) * 1e3:.1f} ms, "
              f"min {np.min(v) * 1e3:.1f} ms; Python allocated {peak / 1e6:.2f} MB in fit + predict "
              f"(X is {X.nbytes / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
