"""The per-variant statistics MLflow gets, against numpy and scipy computed here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.reporting import STATS, summarize
from harness.reporting.summary import bootstrap_mean_intervals, summarize_study


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    v = np.where(rng.random(n) < 0.2, 0.0, rng.beta(2, 3, n))  # skewed, with zeros
    return pd.DataFrame({"n_docs": 10, "n_judged": 10, "n_relevant": 3, "nDCG@10": v},
                        index=pd.Index(np.arange(n), name="qid"))


@pytest.mark.parametrize("n", [50, 10_000])  # 10,000: resampled in batches of 400
def test_bootstrap_interval_is_scipys(n: int) -> None:
    table = _table(n)
    v = table["nDCG@10"].to_numpy()
    study = summarize_study({"r": table}, resamples=2000, seed=3)
    got = study.tables["r"]
    ref = stats.bootstrap((v,), np.mean, n_resamples=2000, method="percentile",
                          confidence_level=0.95, rng=np.random.default_rng(3), vectorized=True)
    row = got.loc["nDCG@10"]
    # the same resample indices as scipy's; only the summation order of the means differs
    assert row["ci_low"] == pytest.approx(ref.confidence_interval.low, abs=1e-13)
    assert row["ci_high"] == pytest.approx(ref.confidence_interval.high, abs=1e-13)
    assert study.ci_methods == {"r": {"nDCG@10": "bootstrap"}}
    pd.testing.assert_frame_equal(summarize(table, resamples=2000, seed=3), got)
    assert list(got.columns) == list(STATS)
    assert row["mean"] == pytest.approx(v.mean(), abs=1e-15)
    assert row["std"] == pytest.approx(np.std(v, ddof=1), abs=1e-15)
    assert (row["p10"], row["median"], row["p90"]) == tuple(np.percentile(v, [10, 50, 90]))
    assert row["frac_zero"] == np.mean(v == 0) and row["n_queries"] == n


def _scipy_percentile_ci(v: np.ndarray, seed: int, resamples: int = 2000
                         ) -> tuple[float, float]:
    ref = stats.bootstrap((v,), np.mean, n_resamples=resamples, method="percentile",
                          confidence_level=0.95, rng=np.random.default_rng(seed),
                          vectorized=True)
    return ref.confidence_interval.low, ref.confidence_interval.high


def test_a_study_is_summarised_at_once_each_interval_scipys() -> None:
    """Several rankers, variants with ties, zeros, constants and NaN (excluded queries):
    every interval equals scipy's on that column's own non-NaN values."""
    rng = np.random.default_rng(11)
    n = 300
    qids = pd.Index([f"query-{i:05d}" for i in range(n)], name="qid")
    tables = {}
    for r, name in enumerate(["bm25-baseline", "dense-v2", "oracle"]):
        cols = {"n_docs": 10, "n_judged": 10, "n_relevant": 3,
                "nDCG@10": np.round(rng.beta(2 + r, 3, n), 2),
                "RR": np.where(rng.random(n) < 0.3, 1.0, 0.5),
                "P@10": np.full(n, 0.3),  # constant: the interval is the value
                "nDCG@10(empty=exclude)": np.where(rng.random(n) < 0.1, np.nan,
                                                   rng.random(n))}
        tables[name] = pd.DataFrame(cols, index=qids)
    got = summarize_study(tables, resamples=1000, seed=7).tables
    for name, table in tables.items():
        alone = summarize(table, resamples=1000, seed=7)
        pd.testing.assert_frame_equal(got[name], alone, check_exact=False, rtol=0, atol=1e-14)
        for column in ("nDCG@10", "RR", "nDCG@10(empty=exclude)"):
            v = table[column].dropna().to_numpy()
            low, high = _scipy_percentile_ci(v, seed=7, resamples=1000)
            assert got[name].at[column, "ci_low"] == pytest.approx(low, abs=1e-13)
            assert got[name].at[column, "ci_high"] == pytest.approx(high, abs=1e-13)
        assert got[name].at["P@10", "ci_low"] == got[name].at["P@10", "ci_high"] == 0.3
        assert got[name].at["nDCG@10(empty=exclude)", "n_queries"] == table[
            "nDCG@10(empty=exclude)"].notna().sum()


def test_the_intervals_of_a_study_are_paired() -> None:
    """Two rankers on the same queries get the same resamples: for B = A + c the interval
    of B is that of A shifted by c, which independent resamples would not give."""
    rng = np.random.default_rng(2)
    a = rng.random((500, 1))
    low, high = bootstrap_mean_intervals(np.hstack([a, a + 0.25]), resamples=500, seed=1)
    assert low[1] - low[0] == pytest.approx(0.25, abs=1e-12)
    assert high[1] - high[0] == pytest.approx(0.25, abs=1e-12)
    other_low, _ = bootstrap_mean_intervals(a + 0.25, resamples=500, seed=2)
    assert abs(other_low[0] - low[1]) > 1e-6  # another seed: other resamples


def test_tiny_and_degenerate_columns() -> None:
    low, high = bootstrap_mean_intervals(np.array([[0.5, 1.0]]), resamples=100)
    assert np.isnan(low).all() and np.isnan(high).all()  # one query: no interval
    low, high = bootstrap_mean_intervals(np.zeros((0, 3)), resamples=100)
    assert low.shape == (3,) and np.isnan(low).all()
    table = pd.DataFrame({"n_docs": 1, "n_judged": 1, "n_relevant": 0,
                          "nDCG@10(empty=exclude)": [np.nan, np.nan]},
                         index=pd.Index(["a", "b"], name="qid"))
    row = summarize(table).loc["nDCG@10(empty=exclude)"]
    assert row["n_queries"] == 0 and np.isnan(row["ci_low"]) and np.isnan(row["median"])


def test_above_the_limit_the_interval_is_the_normal_one() -> None:
    table = _table(30_000, seed=1)
    v = table["nDCG@10"].to_numpy()
    normal_study = summarize_study({"r": table}, bootstrap_max_queries=20_000)
    normal = normal_study.tables["r"]
    low, high = stats.norm.interval(0.95, loc=v.mean(), scale=stats.sem(v))
    assert normal_study.ci_methods == {"r": {"nDCG@10": "normal"}}
    assert normal.at["nDCG@10", "ci_low"] == pytest.approx(low, abs=1e-14)
    assert normal.at["nDCG@10", "ci_high"] == pytest.approx(high, abs=1e-14)
    boot_study = summarize_study({"r": table}, bootstrap_max_queries=None, resamples=2000)
    boot = boot_study.tables["r"]
    assert boot_study.ci_methods == {"r": {"nDCG@10": "bootstrap"}}
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
