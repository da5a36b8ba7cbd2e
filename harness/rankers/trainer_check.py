"""The trainer's own metric, reproduced: the validation metric a learning-to-rank library
reported while training, beside the harness's value of the same scores under that
library's convention preset (``convention="lightgbm"``, ``"xgboost"``, ``"catboost"``).

They must agree to :data:`TOLERANCE`; when they do not, the check names the validation
query whose value differs most (the library's value of that query alone, computed by the
library on the same scores, against the harness's).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics import parse_metric
from harness.metrics.engine.evaluate import aggregate, evaluate

__all__ = ["TOLERANCE", "trainer_check", "harness_value", "library_value", "trec_eval_gap"]

TOLERANCE = 1e-9

log = logging.getLogger("harness")


def _run(valid: Any, scores: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"qid": valid.qid, "docid": valid.docid,
                         "score": np.asarray(scores, dtype=np.float64), "label": valid.y})


def harness_value(kind: str, k: int, valid: Any, scores: np.ndarray
                  ) -> tuple[float, pd.Series]:
    """The harness's mean ndcg@k of ``scores`` on the validation rows under the library's
    preset, and its value per query."""
    metric = parse_metric(f"ndcg@{k}", convention=kind)
    per_query = evaluate(_run(valid, scores), metrics=[metric])
    mean = float(aggregate(per_query).loc[metric.display_name, "mean"])
    return mean, per_query[metric.display_name]


def library_value(kind: str, k: int, run: pd.DataFrame) -> float:
    """The library's own ndcg@k of ``run``'s scores (no boosting: the scores are the
    model's margins), as in tests/test_peer_conventions.py."""
    codes, _ = pd.factorize(run["qid"], sort=False)
    y, s = run["label"].to_numpy(), run["score"].to_numpy()
    zeros = np.zeros((len(run), 1))
    if kind == "lightgbm":
        import lightgbm as lgb

        data = lgb.Dataset(zeros, label=y, group=np.bincount(codes), init_score=s)
        booster = lgb.Booster({"objective": "lambdarank", "eval_at": [k], "verbose": -1},
                              data)  # lambdarank's metric: ndcg@eval_at
        return float(booster.eval_train()[0][2])
    if kind == "xgboost":
        import xgboost as xgb

        matrix = xgb.DMatrix(zeros, label=y, qid=codes, base_margin=s)
        trained = xgb.train({"objective": "rank:ndcg", "eval_metric": f"ndcg@{k}"}, matrix,
                            num_boost_round=0)
        return float(trained.eval(matrix).rsplit(":", 1)[1])
    from catboost.utils import eval_metric

    (value,) = eval_metric(y.tolist(), s.tolist(), f"NDCG:top={k}", group_id=codes.tolist())
    return float(value)


def trainer_check(spec: Any, trained: Any, valid: Any, k: int) -> dict[str, str]:
    """The ``trainer.*`` tags of a ranker run: the library's metric name and value, the
    harness's value, ``pass`` or ``fail`` and, on a failure, the query that differs."""
    value, per_query = harness_value(spec.kind, k, valid, trained.valid_scores)
    diff = abs(value - trained.value)
    tags = {"trainer.metric": trained.metric, "trainer.value": repr(trained.value),
            "trainer.harness_value": repr(value), "trainer.convention": spec.kind,
            "trainer.check": "pass" if diff <= TOLERANCE else "fail"}
    log.info("ranker %s: %s's validation %s = %r, the harness's (convention=%s) %r: %s",
             spec.name, spec.kind, trained.metric, trained.value, spec.kind, value,
             tags["trainer.check"])
    tags |= trec_eval_gap(spec.kind, k, valid, trained.valid_scores)
    log.info("ranker %s: trec_eval's ndcg_cut_%d of the same scores is %s, %s from %s's: %s",
             spec.name, k, tags["trainer.trec_eval_value"], tags["trainer.trec_eval_gap"],
             spec.kind, tags["trainer.trec_eval_why"])
    if diff > TOLERANCE:
        tags["trainer.differs"] = _differing_query(spec.kind, k, valid, trained, per_query)
        log.warning("ranker %s: %s says validation %s = %r, the harness (convention=%s) %r: "
                    "%s", spec.name, spec.kind, trained.metric, trained.value, spec.kind,
                    value, tags["trainer.differs"])
    return tags


def trec_eval_gap(kind: str, k: int, valid: Any, scores: np.ndarray) -> dict[str, str]:
    """How far trec_eval's ndcg_cut_k of the validation scores is from the library's
    convention, and why: the gap split by option (exact Shapley values,
    :func:`harness.explain.explain_difference`)."""
    from harness.explain import explain_difference

    e = explain_difference(_run(valid, scores), metric=f"ndcg@{k}", a=kind, b="trec_eval")
    parts = [f"{row.option} {row.a} -> {row.b} {row.contribution:+.4f}"
             for row in e.table.itertuples() if abs(row.contribution) > 0]
    return {"trainer.trec_eval_value": repr(e.mean_b),
            "trainer.trec_eval_gap": f"{e.mean_b - e.mean_a:+.6f}",
            "trainer.trec_eval_why": "; ".join(parts) or "no option changes the value"}


def _differing_query(kind: str, k: int, valid: Any, trained: Any, per_query: pd.Series
                     ) -> str:
    """The validation query whose library value differs most from the harness's."""
    run = _run(valid, trained.valid_scores)
    worst, text = -1.0, "no single query differs: the means are aggregated differently"
    for qid, rows in run.groupby("qid", sort=False):
        theirs, ours = library_value(kind, k, rows), float(per_query.get(qid, np.nan))
        gap = abs(theirs - ours) if ours == ours else np.inf
        if gap > TOLERANCE and gap > worst:
            worst, text = gap, f"query {qid}: library {theirs!r}, harness {ours!r}"
    return text
