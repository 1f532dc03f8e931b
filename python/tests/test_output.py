"""scikit-learn's output API (set_output: pandas and polars DataFrames named kmeans0...) and the
estimator checks scikit-learn runs on its own KMeans beyond check_estimator."""

import numpy as np
import pandas as pd
import polars as pl  # a test dependency (pyproject.toml), as pandas
import pytest
from sklearn import config_context
from sklearn.cluster import KMeans as SkKMeans
from sklearn.cluster import MiniBatchKMeans as SkMiniBatchKMeans
from sklearn.datasets import make_blobs
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import estimator_checks

import flashkm

PAIRS = [(flashkm.KMeans, SkKMeans), (flashkm.MiniBatchKMeans, SkMiniBatchKMeans)]


def blobs(n=600, d=5, k=4, dtype=np.float64):
    X, _ = make_blobs(n, d, centers=k, random_state=2)
    return X.astype(dtype)


@pytest.mark.parametrize("ours, theirs", PAIRS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pandas_output_like_scikit_learn(ours, theirs, dtype):
    X = blobs(dtype=dtype)
    C0 = X[[0, 150, 300, 450]]
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])],
                      index=[f"row{i}" for i in range(len(X))])
    a = ours(4, init=C0, n_init=1, random_state=0).set_output(transform="pandas")
    b = theirs(4, init=C0, n_init=1, random_state=0).set_output(transform="pandas")
    out_a, out_b = a.fit_transform(df), b.fit_transform(df)
    assert isinstance(out_a, pd.DataFrame)
    assert list(out_a.columns) == list(out_b.columns) == [f"{ours.__name__.lower()}{i}" for i in range(4)]
    assert list(out_a.index) == list(df.index)
    assert out_a.dtypes.tolist() == out_b.dtypes.tolist() == [dtype] * 4
    np.testing.assert_array_equal(out_a.to_numpy(), a.set_output(transform="default").transform(df))
    np.testing.assert_array_equal(a.get_feature_names_out(), b.get_feature_names_out())
    np.testing.assert_array_equal(a.feature_names_in_, df.columns)
    # transform alone, on new rows, keeps their index; predict is not wrapped.
    a.set_output(transform="pandas")
    new = df.iloc[[5, 3, 1]]
    out = a.transform(new)
    assert isinstance(out, pd.DataFrame) and list(out.index) == ["row5", "row3", "row1"]
    assert isinstance(a.predict(new), np.ndarray)
    if ours is flashkm.KMeans:
        # Same centers from the same start: scikit-learn's distances, to float rounding.
        np.testing.assert_allclose(out_a.to_numpy(), out_b.to_numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ours, theirs", PAIRS)
def test_polars_output_like_scikit_learn(ours, theirs):
    X = blobs()
    df = pl.DataFrame(X, schema=[f"f{i}" for i in range(X.shape[1])])
    a = ours(4, n_init=1, random_state=0).set_output(transform="polars")
    out = a.fit_transform(df)
    assert isinstance(out, pl.DataFrame)
    ref = theirs(4, n_init=1, random_state=0).set_output(transform="polars").fit_transform(df)
    assert out.columns == ref.columns == [f"{ours.__name__.lower()}{i}" for i in range(4)]
    np.testing.assert_array_equal(out.to_numpy(), a.set_output(transform="default").transform(df))
    np.testing.assert_array_equal(a.feature_names_in_, df.columns)


@pytest.mark.parametrize("estimator", [flashkm.KMeans, flashkm.MiniBatchKMeans])
def test_global_output_config_and_default(estimator):
    X = blobs()
    with config_context(transform_output="pandas"):
        out = estimator(3, n_init=1, random_state=0).fit(X).transform(X)
    assert isinstance(out, pd.DataFrame) and out.shape == (600, 3)
    with config_context(transform_output="polars"):
        assert isinstance(estimator(3, n_init=1, random_state=0).fit_transform(X), pl.DataFrame)
    # 'default' gives the plain array back after a DataFrame was asked for.
    km = estimator(3, n_init=1, random_state=0).set_output(transform="pandas").fit(X)
    assert type(km.set_output(transform="default").transform(X)) is np.ndarray


def test_pipeline_with_pandas_output():
    X = blobs()
    pipe = make_pipeline(StandardScaler(), flashkm.KMeans(3, n_init=1, random_state=0))
    pipe.set_output(transform="pandas")
    out = pipe.fit_transform(pd.DataFrame(X))
    assert list(out.columns) == ["kmeans0", "kmeans1", "kmeans2"]
    np.testing.assert_array_equal(pipe.get_feature_names_out(), out.columns)


# The checks scikit-learn's own test suite runs on its transformers besides check_estimator
# (sklearn/tests/test_common.py), with pandas and polars installed so that none is skipped.
EXTRA_CHECKS = [
    "check_set_output_transform",
    "check_set_output_transform_pandas",
    "check_global_output_transform_pandas",
    "check_set_output_transform_polars",
    "check_global_set_output_transform_polars",
    "check_transformer_get_feature_names_out",
    "check_transformer_get_feature_names_out_pandas",
    "check_get_feature_names_out_error",
    "check_dataframe_column_names_consistency",
    "check_param_validation",
    "check_all_zero_sample_weights_error",
    "check_inplace_ensure_writeable",
]


@pytest.mark.filterwarnings("ignore::UserWarning")  # the checks' own feature-name warnings
@pytest.mark.parametrize("check", EXTRA_CHECKS)
@pytest.mark.parametrize("estimator", [flashkm.KMeans(), flashkm.MiniBatchKMeans()],
                         ids=["KMeans", "MiniBatchKMeans"])
def test_scikit_learn_common_checks(estimator, check):
    if check == "check_inplace_ensure_writeable" and "copy_x" in estimator.get_params():
        estimator = estimator.set_params(copy_x=False)  # as scikit-learn's test_common does
    getattr(estimator_checks, check)(type(estimator).__name__, estimator)
