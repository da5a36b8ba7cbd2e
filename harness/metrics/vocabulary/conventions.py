"""Presets that reproduce a reference implementation's choices exactly: a convention names
every option its library fixes (see the README's metric-definition table for the versions
each was verified against, and tests/test_peer_conventions.py)."""

from __future__ import annotations

from typing import Any, Final

__all__ = ["CONVENTIONS", "TREC_EVAL_CONVENTIONS"]

#: Presets that reproduce a reference implementation's choices exactly (versions checked:
#: trec_eval 10.0 and 9.0.8, xgboost 3.2.0, lightgbm 4.7.0, catboost 1.2.10, keras-rs
#: 0.4.0). A ``k`` entry is the cut-off a metric gets when ``k`` is not given.
CONVENTIONS: Final[dict[str, dict[str, Any]]] = {
    # sklearn.metrics.ndcg_score / dcg_score (y_true used as the gain, i.e. linear)
    "sklearn": {"gain": "linear", "discount": "log2", "ideal": "retrieved", "ties": "average",
                "empty": "zero"},
    # trec_eval 10.0 ndcg / ndcg_cut_k / map / recip_rank / P_k: scores compared as double,
    # equal ones by docno descending; recall level x reached at round(x R) relevant documents
    "trec_eval": {"gain": "linear", "discount": "log2", "ideal": "judged", "ties": "docid",
                  "empty": "zero", "recall_cutoff": "nearest"},
    # trec_eval 9.x and pytrec_eval: scores compared as float32 (0.1 and 0.100000001 tie),
    # then docno descending; recall level x at floor(x R + 0.9) relevant documents
    "trec_eval9": {"gain": "linear", "discount": "log2", "ideal": "judged",
                   "ties": "docid_float32", "empty": "zero", "recall_cutoff": "plus_0.9"},
    # LightGBM ndcg@k: label_gain 2^i-1, std::stable_sort, all-zero query scores 1 and adds
    # that 1 unweighted to a weighted mean (its weight still counts in the denominator)
    "lightgbm": {"gain": "exp2", "discount": "log2", "ideal": "retrieved", "ties": "input",
                 "empty": "one", "empty_weight": "unweighted"},
    # XGBoost ndcg (default ndcg_exp_gain, stable sort, empty query scores 1, added
    # unweighted as LightGBM does); its metrics without '@k' cut at 32
    "xgboost": {"gain": "exp2", "discount": "log2", "ideal": "retrieved", "ties": "input",
                "empty": "one", "empty_weight": "unweighted", "k": 32},
    # keras_rs NDCG: exp2 gain, seeded shuffle of ties, masked dense lists, 0 when empty,
    # weighted by the mean weight of the lists with a relevant item
    "keras_rs": {"gain": "exp2", "discount": "log2", "ideal": "retrieved", "ties": "random",
                 "empty": "zero", "empty_weight": "mean"},
    # ranx 0.3 ndcg (Jarvelin: linear gain), ideal over the qrels, 0 when empty; ties in
    # the order its Run's quicksort leaves them (insertion order up to 15 documents)
    "ranx": {"gain": "linear", "discount": "log2", "ideal": "judged", "ties": "quicksort",
             "empty": "zero"},
    # CatBoost NDCG (type=Base: linear gain, denominator=LogPosition: log2; tied documents
    # ranked relevant-last; a group without relevant document scores 1, own group weight)
    "catboost": {"gain": "linear", "discount": "log2", "ideal": "retrieved",
                 "ties": "pessimistic", "empty": "one"},
}

#: The conventions of trec_eval's versions: they read a negative label as unjudged.
TREC_EVAL_CONVENTIONS: Final = ("trec_eval", "trec_eval9")
