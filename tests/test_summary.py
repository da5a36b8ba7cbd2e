"""The per-variant statistics MLflow gets, against numpy and scipy computed here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.reporting import STATS, summarize


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    v = np.where(rng.random(n) < 0.2, 0.0, rng.beta(2, 3, n))  # skewed, with zeros
    return pd.DataFrame({"n_docs": 10, "n_judged": 10, "n_relevant": 3, "nDCG@10": v},
                        index=pd.Index(np.arange(n), name="qid"))


@pytest.mark.parametrize("n", [50, 10_000])  # 10,000: resampled in batches of 400
def test_bootstrap_interval_is_scipys(n: int) -> None:
    table = _table(n)
    v = table["nDCG@10"].to_numpy()
    got = summarize(table, resamples=2000, seed=3)
    ref = stats.bootstrap((v,), np.mean, n_resamples=2000, method="percentile",
                          confidence_level=0.95, rng=np.random.default_rng(3), vectorized=True)
    row = got.loc["nDCG@10"]
    assert (row["ci_low"], row["ci_high"]) == (ref.confidence_interval.low,
                                               ref.confidence_interval.high)
    assert got.attrs["ci_method"] == {"nDCG@10": "bootstrap"}
    assert list(got.columns) == list(STATS)
    assert row["mean"] == pytest.approx(v.mean(), abs=1e-15)
    assert row["std"] == pytest.approx(np.std(v, ddof=1), abs=1e-15)
    assert (row["p10"], row["median"], row["p90"]) == tuple(np.percentile(v, [10, 50, 90]))
    assert row["frac_zero"] == np.mean(v == 0) and row["n_queries"] == n


def test_above_the_limit_the_interval_is_the_normal_one() -> None:
    table = _table(30_000, seed=1)
    v = table["nDCG@10"].to_numpy()
    normal = summarize(table, bootstrap_max_queries=20_000)
    low, high = stats.norm.interval(0.95, loc=v.mean(), scale=stats.sem(v))
    assert normal.attrs["ci_method"] == {"nDCG@10": "normal"}
    assert normal.at["nDCG@10", "ci_low"] == pytest.approx(low, abs=1e-14)
    assert normal.at["nDCG@10", "ci_high"] == pytest.approx(high, abs=1e-14)
    boot = summarize(table, bootstrap_max_queries=None, resamples=2000)
    assert boot.attrs["ci_method"] == {"nDCG@10": "bootstrap"}
    width = high - low
    for stat in ("ci_low", "ci_high"):  # the two methods agree at this size
        assert abs(boot.at["nDCG@10", stat] - normal.at["nDCG@10", stat]) < 0.05 * width


@pytest.mark.parametrize("n", [300, 50_000])  # 50,000: drawn through 4,000 order statistics
def test_ecdf_figure_is_written(tmp_path, n: int) -> None:
    from matplotlib.image import imread

    from harness.reporting.figures import ecdf_figure

    rng = np.random.default_rng(n)
    values = {"a": pd.Series(rng.beta(2, 3, n)), "b": pd.Series(rng.random(n))}
    path = ecdf_figure(values, "nDCG@10", tmp_path / "f.png")
    image = imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 600
    assert image[..., :3].std() > 0.05  # something was drawn


def test_ecdf_steps_are_the_ecdf_at_the_points_drawn() -> None:
    from harness.reporting.figures import ecdf_steps

    rng = np.random.default_rng(5)
    data = np.round(rng.beta(2, 3, 100_000), 2)  # ties, as per-query values have
    x, y = ecdf_steps(data, points=500)
    assert len(x) <= 501 and x[0] == data.min() and x[-1] == data.max()
    assert y[0] == 0 and y[-1] == 1 and np.all(np.diff(y) >= 0)
    np.testing.assert_array_equal(y[1:], [np.mean(data <= v) for v in x[1:]])
