"""`pip install .` also installs the flashkm command; it agrees with flashkm.KMeans."""
import json
import pathlib
import subprocess
import sys

import numpy as np
from sklearn.datasets import make_blobs

import flashkm


def command():
    # The command lives next to the interpreter of the environment the package went into.
    path = pathlib.Path(sys.executable).parent / "flashkm"
    assert path.exists(), f"{path} was not installed by pip"
    return str(path)


def test_command_is_installed():
    out = subprocess.run([command(), "--version"], capture_output=True, text=True, check=True)
    assert "flashkm" in out.stdout


def test_command_and_estimator_agree(tmp_path):
    X, _ = make_blobs(n_samples=3000, n_features=12, centers=6, random_state=4)
    X = X.astype(np.float32)
    init = X[[0, 500, 1000, 1500, 2000, 2500]]
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "init.npy", init)
    res = subprocess.run([command(), "fit", str(tmp_path / "x.npy"), "--init", str(tmp_path / "init.npy"),
                          "-o", str(tmp_path / "c.npy"), "--labels", str(tmp_path / "l.npy"), "--json", "-q"],
                         capture_output=True, text=True, check=True)
    summary = json.loads(res.stdout)
    km = flashkm.KMeans(n_clusters=6, init=init, n_init=1).fit(X)
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), km.cluster_centers_)
    np.testing.assert_array_equal(np.load(tmp_path / "l.npy"), km.labels_)
    assert summary["n_iter"] == km.n_iter_
    assert summary["inertia"] == km.inertia_
