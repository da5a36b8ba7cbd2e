"""What a study produces, shared by its stages: the per-ranker and per-study results, the
marker of a job folder still being written, and the small writers every stage uses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.app.ranker_notes import RankerNotes
from harness.datasets import Dataset
from harness.metrics import Metric
from harness.metrics.sklearn_check import CheckResult
from harness.rankers import RankerSpec

__all__ = ["INCOMPLETE", "RankerResult", "StudyResult", "metric_key_map", "dump_json"]

#: A file in a job's output folder from its start until every result is written: a folder
#: that still holds it after the job ended belongs to a job that was killed or failed.
INCOMPLETE = "INCOMPLETE"


@dataclass
class RankerResult:
    spec: RankerSpec
    cache_key: str
    cache_hit: bool | None  # None: nothing to cache (scores read in place)
    per_query: pd.DataFrame
    checks: list[CheckResult]
    seconds: float
    warnings: list[str] = field(default_factory=list)  # see harness.app.study.score_warnings
    judged_at_10: float | None = None  # mean judged@10 (None: not computed, parquet_run)
    judged: pd.Series | None = None  # Judged@10 per query (None: not computed)
    trainer: dict[str, str] = field(default_factory=dict)  # harness.rankers.Scored.tags
    model: Path | None = None  # a trained ranker's model folder (harness.rankers.models)

    @property
    def train_seconds(self) -> float | None:
        """The model's fit alone: 0 when its run came from the score cache, None when the
        ranker trains nothing."""
        if self.model is None:
            return None
        return 0.0 if self.cache_hit else float(self.trainer.get("trainer.seconds", 0.0))

    def how_scored(self) -> str:
        """``(scores computed); trained in 0.27s, model in models/lambdamart`` and the like."""
        text = "(scores " + {True: "cached", False: "computed",
                             None: "read in place"}[self.cache_hit] + ")"
        if self.model is not None:
            fit = "" if self.cache_hit else f"trained in {self.train_seconds:.2f}s, "
            text += f"; {fit}model in models/{self.model.name}"
        return text


@dataclass
class StudyResult:
    """What a study produced; ``output_dir`` holds it on disk whatever MLflow did."""

    dataset: Dataset
    metrics: list[Metric]
    rankers: dict[str, RankerResult]
    output_dir: Path
    run_ids: dict[str, str]
    check_failures: list[str]
    summaries: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: dict[str, RankerNotes] = field(default_factory=dict)  # beside each summary
    seconds: float = 0.0
    tracking_uri: str | None = None
    experiment: str | None = None
    baseline: str | None = None  # the ranker the closing table's differences are against
    warnings: list[str] = field(default_factory=list)  # e.g. a ranker with constant scores
    # per compared pair and headline variant, whether its verdict holds over every labeling
    # of the unjudged documents (harness.app.judgment_study.pair_verdicts); empty when no
    # interval is wide
    judgment_pairs: list[dict[str, Any]] = field(default_factory=list)

    def closing_summary(self, study: str) -> str:
        """What to print when the job ends (see :func:`harness.app.notes.closing_summary`)."""
        from harness.app.notes import closing_summary

        n_queries = max((len(r.per_query) for r in self.rankers.values()), default=0)
        return closing_summary(study=study, seconds=self.seconds, summaries=self.summaries,
                               notes=self.notes, metrics=self.metrics, n_queries=n_queries,
                               output_dir=self.output_dir, run_ids=self.run_ids,
                               tracking_uri=self.tracking_uri, experiment=self.experiment,
                               baseline=self.baseline, warnings=self.warnings,
                               pairs=self.judgment_pairs, training=self.training_line())

    def training_line(self) -> str:
        """``Training 3.2s (lambdamart 0.40s, ...), apart from evaluation ...``, or "" when no
        ranker trained a model in this job."""
        trained = {n: r.train_seconds for n, r in self.rankers.items()
                   if r.train_seconds is not None and not r.cache_hit}
        if not trained:
            return ""
        rest = sum(r.seconds for r in self.rankers.values()) - sum(trained.values())
        each = ", ".join(f"{n} {s:.2f}s" for n, s in trained.items())
        return (f"Training {sum(trained.values()):.1f}s ({each}), apart from evaluation and "
                f"saving models {max(rest, 0.0):.1f}s.")


def metric_key_map(metrics: list[Metric]) -> dict[str, str]:
    """MLflow key -> display name (logged as an artifact)."""
    return {m.key: m.display_name for m in metrics}


def dump_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
    return path
