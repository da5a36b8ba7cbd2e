"""``harness compare``: compare the ranker versions of a sweep and write a report.

Examples
--------
Every pair of rankers of a sweep, Holm-corrected t-tests, report under runs/reports/::

    harness compare --parent-run-id <id>

Each ranker against a baseline, Benjamini-Hochberg, only the runs with k = 10::

    harness compare --experiment synthetic --filter "params.`metric.k` = '10'" \\
        --baseline random --correction bh

The console shows the headline variants x rankers: each mean with the letters of the rankers
it is significantly better than, and the variant's winner (its leader when significantly
better than every other ranker, else a tie); the full pairwise table (CIs, W/T/L, every
p-value) goes to ``comparison.txt`` in the report folder, whose path is printed. With
``--baseline`` the winners and the discriminative power are still over every ranker pair.

Two run files, no MLflow (``harness.compare`` underneath), the table as Markdown::

    harness compare --qrels qrels.txt bm25.run ance.run -m trec_eval:ndcg -m P@5 \\
        --baseline bm25 --format markdown

The verdicts and the gate on files, as on MLflow runs (exit 1 when the gate fails)::

    harness compare --qrels qrels.txt bm25.run ance.run -m trec_eval:ndcg \\
        --baseline bm25 --margin trec_eval:ndcg=0.01 --gate

Bad input (an unknown run, runs of several datasets, no overlapping queries, a single
ranker) prints one line and exits 2; an unreachable tracking server exits 3.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from harness.commands.base import add_tracking_uri, keyword_default
from harness.errors import CompareError, HarnessError
from harness.paths import ARTIFACT_ROOT, PENDING_DIR, REPORTS_DIR
from harness.reporting.console import column_blocks, fit, terminal_width

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    from harness.compare.api import compare
    from harness.compare.stats import CORRECTIONS, FAMILIES, TESTS
    from harness.compare.verdicts import VERDICT_TESTS
    from harness.compare.workflow import SweepOptions as Default  # the options' defaults

    p = argparse.ArgumentParser(prog="harness compare",
                                description="Compare the ranker versions of a sweep: paired "
                                "tests per metric variant, sensitivity to the metric "
                                "definition, and an HTML/Markdown/LaTeX report.")
    p.add_argument("run_ids", nargs="*", metavar="RUN_ID",
                   help="one sweep's or job's run id (as printed when it ends; the same as "
                   "--parent-run-id), or several ranker, job or sweep runs of any jobs and "
                   "experiments, compared query by query; with --qrels, run files (TREC "
                   "text, .gz or parquet), each named by its file's stem or as NAME=PATH")
    p.add_argument("--qrels", default=None, metavar="QRELS",
                   help="compare run files on these judgments (TREC qrels or parquet) "
                   "instead of MLflow runs: harness compare --qrels QRELS A.run B.run")
    p.add_argument("-m", "--measure", action="append", default=None, metavar="MEASURE",
                   help="with --qrels: a measure in any tool's spelling, repeatable "
                   f"(default {', '.join(keyword_default(compare, 'metrics'))}), e.g. "
                   "-m trec_eval:ndcg -m 'P(rel=2)@5'")
    p.add_argument("--format", default="text", choices=("text", "markdown", "latex", "html",
                                                        "json"),
                   help="with --qrels: how the table prints (default text)")
    p.add_argument("--log", action="store_true",
                   help="with --qrels: write the comparison under --out-dir and record it "
                   "as an MLflow run (experiment 'comparisons' unless --log-experiment) that "
                   "harness reproduce recomputes from the files")
    p.add_argument("--allow-subset", action="store_true",
                   help="runs evaluated on different query sets: compare on the queries "
                   "they share (default: refuse)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--parent-run-id", help="a sweep's (or a job's) parent run id")
    source.add_argument("--experiment", help="an experiment name (every ranker run in it, "
                        "narrowed by --filter)")
    p.add_argument("--filter", dest="filter_string", default=None,
                   help="MLflow search_runs filter ANDed to the selection, e.g. "
                   "\"params.`metric.k` = '10'\"")
    add_tracking_uri(p)
    p.add_argument("--baseline", action="append", default=None, metavar="BASELINE",
                   help="compare every ranker with this one (a ranker name, a version label "
                   "or a run id) instead of every pair; repeat for several baselines")
    p.add_argument("--variants", nargs="+", default=None, metavar="VARIANT",
                   help="variant display names to compare (default: all)")
    p.add_argument("--correction", choices=CORRECTIONS, default=Default.correction,
                   help="multiple-testing correction (default: %(default)s)")
    p.add_argument("--family", choices=FAMILIES, default=Default.family,
                   help="comparisons corrected together: per variant (default), per "
                   "baseline (every variant against one baseline), or all compared")
    p.add_argument("--test", choices=(*TESTS, "bootstrap", "tukey"), default=Default.test,
                   help="test whose corrected p-value marks significance (default: "
                   "%(default)s); "
                   "with --qrels also bootstrap (the paired bootstrap test) and tukey (the "
                   "randomised Tukey HSD over all runs)")
    p.add_argument("--alpha", type=float, default=Default.alpha,
                   help="significance level (%(default)s)")
    p.add_argument("--margin", action="append", default=None, metavar="VARIANT=DELTA",
                   help="non-inferiority margin of a variant, e.g. nDCG@10=0.005: the "
                   "candidate is 'not worse' when a one-sided test shows its mean is above "
                   "the baseline's minus DELTA; repeat for several variants (needs "
                   "--baseline)")
    p.add_argument("--equivalence", action="store_true",
                   help="also test equivalence within +-DELTA (TOST)")
    p.add_argument("--verdict-test", choices=VERDICT_TESTS, default=Default.verdict_test,
                   help="the one-sided test of the verdicts: ttest (paired t), wilcoxon, or "
                   "bootstrap (the bootstrap interval's bound); default %(default)s")
    p.add_argument("--gate", action="store_true",
                   help="exit 1 unless every variant with a --margin is better or not worse "
                   "than each baseline (for continuous integration)")
    p.add_argument("--resamples", type=int, default=Default.resamples,
                   help="permutation-test sign flips and bootstrap resamples (%(default)s)")
    p.add_argument("--seed", type=int, default=Default.seed,
                   help="seed of the resampling (%(default)s)")
    p.add_argument("--max-queries", type=int, default=Default.max_queries,
                   help="above this many queries, normal approximations replace the "
                   "permutation test and the bootstrap (%(default)s; 0: never)")
    p.add_argument("--out-dir", default=REPORTS_DIR,
                   help="reports go to <out-dir>/<experiment>/<parent id or timestamp>/ "
                   "(default: %(default)s; relative to the project)")
    p.add_argument("--no-log", action="store_true",
                   help="do not log the comparison (its own run) nor the report to the "
                   "parent run")
    p.add_argument("--log-experiment", default=None, metavar="NAME",
                   help="the MLflow experiment of the comparison's run (default: the first "
                   "compared run's)")
    p.add_argument("--pending-dir", default=PENDING_DIR,
                   help="where the comparison's log plan waits when MLflow is unreachable "
                   "(default: %(default)s; harness sync replays it)")
    p.add_argument("--artifact-root", default=ARTIFACT_ROOT,
                   help="with --log and a local store, where a new experiment keeps its "
                   "artifacts (default: %(default)s; relative to the project)")
    return p


#: Options that change what a report holds; two compares differing in one of them write
#: two reports (``selection_slug``).
SELECTION = ("baseline", "variants", "filter_string", "correction", "family", "test", "alpha",
             "resamples", "seed", "max_queries", "margin", "equivalence", "verdict_test",
             "allow_subset")


def selection_slug(args: argparse.Namespace, *, p_defaults: argparse.Namespace) -> str | None:
    """A folder name for a report whose options differ from the defaults, e.g.
    ``baseline-random-3f2a9c1e`` (readable part, then a hash of every differing option);
    None for the default selection."""
    import hashlib
    import json

    changed = {k: getattr(args, k) for k in SELECTION
               if getattr(args, k) != getattr(p_defaults, k)}
    if not changed:
        return None
    digest = hashlib.sha1(json.dumps(changed, sort_keys=True, default=str).encode()
                          ).hexdigest()[:8]
    readable = f"baseline-{'-'.join(args.baseline)}" if args.baseline else "selection"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", readable)[:40] + f"-{digest}"


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; returns the exit code (0, 2 for bad input, 3 MLflow down)."""
    p = parser()
    args = p.parse_args(argv)
    for option in ("seed", "max_queries"):  # numpy seeds are >= 0; -1 queries meant "all"
        if getattr(args, option) < 0:
            print(f"error: --{option.replace('_', '-')} must be an int >= 0; got "
                  f"{getattr(args, option)}", file=sys.stderr)
            return 2
    if args.qrels is not None or args.measure or args.format != "text" or args.log:
        try:
            return _files(args)
        except HarnessError as exc:
            print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
            return int(getattr(exc, "exit_code", 2))
    given = [x for x in (args.run_ids, args.parent_run_id, args.experiment) if x]
    if len(given) != 1:
        p.error("name the runs once: RUN_ID, --parent-run-id ID or --experiment NAME")
    if len(args.run_ids) == 1:
        args.parent_run_id = args.run_ids[0]
    from harness.tracking import configure_requests

    configure_requests()  # an unreachable server fails in seconds (as a study's log)
    try:
        return _run(args)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))


def _files(args: argparse.Namespace) -> int:
    """``harness compare --qrels QRELS RUN [RUN ...]``: :func:`harness.compare.compare`
    on the files, printed in ``--format``."""
    import json

    from harness.compare.api import compare
    from harness.compare.verdicts import gate_lines, verdict_lines
    from harness.compare.workflow import judge

    if args.qrels is None:
        raise CompareError("-m, --format and --log compare run files: give --qrels QRELS")
    if args.parent_run_id or args.experiment:
        raise CompareError("--qrels compares run files: leave out --parent-run-id and "
                           "--experiment")
    if len(args.baseline or []) > 1:
        raise CompareError("--qrels takes one --baseline")
    runs: dict[str, str] = {}
    for item in args.run_ids:
        name, eq, path = item.partition("=")
        name, path = (name, path) if eq else (item.rsplit("/", 1)[-1].split(".")[0], item)
        if name in runs:
            raise CompareError(f"two runs are named {name!r}: name them as NAME=PATH")
        runs[name] = path
    result = compare(args.qrels, runs, args.measure or keyword_default(compare, "metrics"),
                     baseline=(args.baseline or [None])[0], test=args.test,
                     correction=args.correction, alpha=args.alpha, seed=args.seed,
                     resamples=args.resamples)
    judged = judge(result, _options(args))  # the verdicts, as the MLflow form's
    width = terminal_width()
    if args.log:
        from harness.compare.file_record import record_file_comparison

        directory, run_id = record_file_comparison(
            result, args.qrels, runs, out_dir=args.out_dir, tracking_uri=args.tracking_uri,
            experiment=args.log_experiment or "comparisons", pending_dir=args.pending_dir,
            artifact_root=args.artifact_root)
        print(f"comparison written to {directory}\nlogged as run {run_id}; recompute it: "
              f"harness reproduce {run_id}", file=sys.stderr)
    sys.stdout.write({"text": lambda: result.to_string(width=width),
                      "markdown": result.to_markdown, "latex": result.to_latex,
                      "html": lambda: result.to_html() + "\n",
                      "json": lambda: json.dumps(result.to_dict(), indent=1) + "\n",
                      }[args.format]())
    if judged is None:
        return 0
    verdicts, settings = judged
    passed, gate = gate_lines(verdicts) if args.gate else (True, [])
    # after a text table on stdout; on stderr after the other formats, which stay parseable
    out = sys.stdout if args.format == "text" else sys.stderr
    print("\n".join(line if line.startswith(" ") else fit(line)
                    for line in verdict_lines(verdicts, settings) + gate), file=out)
    return 0 if passed else 1


def _run(args: argparse.Namespace) -> int:
    from harness.progress import Steps

    steps = Steps(["load runs", "compare pairs", "write report", "log comparison",
                   "log report"], desc="compare")
    try:
        return _steps(args, steps)
    finally:
        steps.close()


def _print_headline(sens: Any, comparison: Any) -> None:
    """The headline variants x rankers, with significance marks and the winner, wrapped to
    the terminal (at most 120 columns)."""
    import textwrap

    from harness.compare.report import headline_display

    table, letters = headline_display(sens.means, comparison, sens.winners)
    width = terminal_width()
    s = comparison.settings
    print("\n".join(textwrap.wrap(
        f"Mean per query under the {len(table)} headline variants (of {len(sens.means)}); "
        f"^letters: the rankers it is significantly better than ({s.test} p adj < "
        f"{s.alpha}, {s.correction} per {s.family}"
        + (f"; compared with {s.baseline} only" if s.baseline else "") + "); winner: the "
        "leader when significantly better than every other ranker, else a tie"
        + ("" if sens.rule else " (untested)") + ":", width=width, break_on_hyphens=False,
        break_long_words=False)))
    print("\n".join(textwrap.wrap("  ".join(f"{letter} {label}" for label, letter
                                            in letters.items()), width=width - 2,
                                   initial_indent="  ", subsequent_indent="  ",
                                   break_on_hyphens=False)))
    rows = [["variant", *table.columns]] + [[str(v), *map(str, r)]
                                            for v, r in zip(table.index, table.values)]
    print("\n".join(column_blocks(rows, width)))


def _options(args: argparse.Namespace) -> Any:
    from harness.compare.workflow import SweepOptions

    return SweepOptions(variants=args.variants, baseline=args.baseline, test=args.test,
                        correction=args.correction, alpha=args.alpha, seed=args.seed,
                        resamples=args.resamples, family=args.family,
                        max_queries=args.max_queries or None, margin=tuple(args.margin or ()),
                        equivalence=args.equivalence, verdict_test=args.verdict_test,
                        gate=args.gate)


def _steps(args: argparse.Namespace, steps: Any) -> int:
    from harness.compare.record import overall_verdict
    from harness.compare.report import log_report, report_dir
    from harness.compare.verdict_shifts import change_lines
    from harness.compare.verdicts import gate_lines, verdict_lines
    from harness.compare.workflow import compare_sweep, load_compared, log_sweep, write_sweep_report

    with steps("load runs"):
        sweep = load_compared(args.tracking_uri, args.run_ids,
                              parent_run_id=args.parent_run_id, experiment=args.experiment,
                              filter_string=args.filter_string,
                              allow_subset=args.allow_subset)
    with steps(f"compare pairs ({args.resamples} resamples)"):
        result = compare_sweep(sweep, _options(args))
    comparison, sens, verdicts = result.comparison, result.sensitivity, result.verdicts
    rows = comparison.tests
    n_queries = max(len(f) for f in sweep.per_query.values())
    print(fit(f"{sweep.experiment}: {len(sweep.versions)} ranker versions "
               f"({', '.join(sweep.versions)}), {len(sweep.variants)} variants, up to "
               f"{n_queries} queries of {sweep.dataset_name} ({sweep.dataset_digest[:12]})"))
    _print_headline(sens, comparison)
    dropped = rows[rows["n_dropped"] > 0]
    print(f"queries dropped in {len(dropped)} of {len(rows)} comparisons"
          + "".join("\n" + fit(f"  {r.variant}, {r.ranker_a} vs {r.ranker_b}: {r.dropped}")
                    for r in dropped.itertuples()))
    for note in [*sweep.notes, *comparison.notes, *sens.notes]:
        print(fit(note, first="- "))
    slug = selection_slug(args, p_defaults=parser().parse_args(["x"]))
    with steps("write report and figures"):
        files = write_sweep_report(result, report_dir(sweep, args.out_dir) / (slug or ""))
    paths = files.paths
    print(f"every variant's means:\n  {paths.directory / 'means.csv'}\n"
          f"the {len(rows)} paired comparisons (CIs, W/T/L, every p-value):\n"
          f"  {files.pairwise}")
    print(f"report: {paths.html}\n        {paths.markdown}\n        {paths.latex}")
    status = 0
    if verdicts is not None:
        assert result.verdict_settings is not None  # reached with the verdicts
        # headings wrap; the indented lines are records (a verdict, a change), one a line
        lines = (verdict_lines(verdicts, result.verdict_settings)
                 + change_lines(result.changes, verdicts))
        print("\n".join(line if line.startswith(" ") else fit(line) for line in lines))
        if args.gate:
            passed, lines = gate_lines(verdicts)
            print("\n".join(line if line.startswith(" ") else fit(line) for line in lines))
            status = 0 if passed else 1
    if args.no_log:
        return status
    with steps("log the comparison to MLflow"):
        run_id, experiment = log_sweep(result, files, experiment=args.log_experiment,
                                       pending_dir=args.pending_dir)
    print(f"comparison logged as run {run_id} (experiment {experiment!r}, harness.verdict="
          f"{overall_verdict(verdicts)})\nrecompute it: harness reproduce {run_id}")
    if sweep.parent_run_id is None:
        return status
    where = f"report/{slug}" if slug else "report"
    with steps("log report to MLflow"):
        log_report(paths, sweep.tracking_uri, sweep.parent_run_id, where)
    print(f"logged to run {sweep.parent_run_id} under {where}/")
    return status
