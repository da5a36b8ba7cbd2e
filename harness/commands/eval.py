"""``harness eval QRELS RUN [RUN ...] [MEASURE ...]``: trec_eval's command line and output.

The flags are trec_eval's (and may be glued as it allows: ``-l2``, ``-M100``,
``-mrelstring.20``); the output is trec_eval 10.0's ``name<TAB>qid<TAB>value`` lines,
measures in trec_eval's order, or one table of runs x measures (``--format tsv|csv|json``).
Every trec_eval measure is a harness metric definition with ``convention="trec_eval"``
(linear gain, scores compared as double, ties by docno descending), or
``convention="trec_eval9"`` with ``--compat 9`` (scores compared as float32, as trec_eval
9.x and pytrec_eval read them); arguments after QRELS that are not files are
measure names in any tool's spelling (``nDCG@10``, ``P(rel=2)@5``, ``ndcg_burges@10``),
read by :func:`harness.parse_metric` and printed as written.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.commands.base import OK
from harness.errors import InputError, MetricDefinitionError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from harness.metrics.vocabulary.definition import Metric

EPILOG = """\
measure sets (-m): official (the default), all_trec, set, all_prefs, prefs, qrels_jg
measures with parameters: P.5,10  ndcg_cut.10,20  iprec_at_recall..10,.20  recall.100
  Rprec_mult.0.5,2.0  utility.2,-1,0,0  11pt_avg..25,.5,.75  ndcg.1=3,2=9  G.1=2
  relstring.20  success.1,5  set_F.0.5  rbp.p=0.95  unj.10
inputs: TREC text (qrels: qid iter docno rel; run: qid Q0 docno rank score runid;
  '#' starts a comment line; fields split on ASCII whitespace as trec_eval splits them,
  lines ended by LF, CRLF or CR), gzip (.gz) or parquet (qid, docid, label | score).
examples:
  harness eval qrels.txt run.txt
  harness eval -q -m all_trec -l2 qrels.txt run.txt
  harness eval qrels.txt run_a.txt run_b.txt "nDCG@10" "P(rel=2)@5" --format tsv
  harness eval --compat 9 -m all_trec qrels.txt run.txt   # as trec_eval 9.x, pytrec_eval
notes on stderr (the output is unchanged by them): a judged query a run lacks is skipped
  without -c (trec_eval 10.0 stops with exit 4 there; 9.x skipped it); qrels labels that
  are not integers are truncated toward zero, as trec_eval reads them
exit codes: 0 ok, 2 bad input"""


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (``error: ...``), exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"harness eval: {message} (harness eval --help)")


def parser() -> argparse.ArgumentParser:
    """The command line; the defaults of -l, -N and --compat are the evaluation's own
    (:mod:`harness.metrics.trec_eval.trec_eval_compute`, :func:`~harness.metrics.
    vocabulary.tool_names.trec_eval_measures.select`)."""
    from harness.commands.base import keyword_default
    from harness.metrics.trec_eval.trec_eval_compute import COLLECTION_SIZE, LEVEL
    from harness.metrics.vocabulary.tool_names.trec_eval_measures import select
    from harness.reporting.trec_eval_output import FORMATS

    p = _Parser(prog="harness eval", formatter_class=argparse.RawDescriptionHelpFormatter,
                usage="harness eval [-q] [-m MEASURE]... [-c] [-M DEPTH] [-l LEVEL] [-J] "
                      "[-n]\n       [-R FORMAT] [-Z ZSCORES] [-N NUM] [--format FMT] "
                      "QRELS RUN [RUN ...] [NAME ...]",
                description="trec_eval's command line and output. After the runs, measures may "
                            "also be named\nin any tool's spelling (nDCG@10, P(rel=2)@5, "
                            "ndcg_burges@10), printed as written.",
                epilog=EPILOG)
    p.add_argument("inputs", nargs="+", metavar="QRELS RUN [NAME]",
                   help="the qrels, then one or more runs (existing files), then measure "
                        "names in any tool's spelling")
    p.add_argument("-q", "--query_eval_wanted", action="store_true",
                   help="print every query's values before the summary")
    p.add_argument("-m", "--measure", action="append", default=[], metavar="MEASURE",
                   help="a trec_eval measure (name[.params]) or set; repeatable "
                        "(default: official)")
    p.add_argument("-c", "--complete_rel_info_wanted", action="store_true",
                   help="average over every judged query; one the run lacks scores 0")
    p.add_argument("-M", "--Max_retrieved_per_topic", type=int, default=None,
                   metavar="DEPTH", help="only the first DEPTH documents of each query "
                   "(score descending, ties by docno descending)")
    p.add_argument("-l", "--level_for_rel", type=int, metavar="LEVEL",
                   default=LEVEL,
                   help="binary relevance: label >= LEVEL (default %(default)s)")
    p.add_argument("-J", "--Judged_docs_only", action="store_true",
                   help="remove unjudged documents from each ranking first")
    p.add_argument("-n", "--nosummary", action="store_true", help="no summary lines")
    p.add_argument("-R", "--Rel_info_format", default="qrels",
                   choices=("qrels", "prefs", "qrels_prefs", "qrels_jg"), metavar="FORMAT",
                   help="QRELS format: qrels (default), prefs, qrels_prefs, qrels_jg "
                        "(the iter column is the judge)")
    p.add_argument("-T", "--Results_format", default="trec_results",
                   choices=("trec_results",), metavar="FORMAT", help="runs' format: "
                   "trec_results (the only one)")
    p.add_argument("-Z", "--Zscore", default=None, metavar="ZSCORES",
                   help="print Z-scores, (value - mean) / stddev, from a file of "
                        "'qid measure mean stddev' lines")
    p.add_argument("-N", "--Number_docs_in_coll", type=int, metavar="NUM",
                   default=COLLECTION_SIZE,
                   help="number of documents in the collection (default %(default)s): "
                        "utility's fourth weight counts the non-relevant documents not "
                        "retrieved, NUM + rel_ret - ret - rel")
    p.add_argument("--compat", default=str(keyword_default(select, "version")),
                   choices=("10", "9"),
                   help="the trec_eval version to reproduce: 10 (10.0, the default: scores "
                        "compared as double) or 9 (9.x and pytrec_eval: scores compared as "
                        "float32, recall level x at floor(x R + 0.9) relevant documents)")
    p.add_argument("--format", default="trec", choices=FORMATS,
                   help="trec (trec_eval's lines, default) or one runs x measures table")
    return p


def _split_inputs(inputs: list[str]) -> tuple[str, list[str], list[str]]:
    qrels = inputs[0]
    runs: list[str] = []
    names: list[str] = []
    for arg in inputs[1:]:
        (runs if Path(arg).is_file() else names).append(arg)
    if not runs:
        what = f"{inputs[1]!r} is not a file" if len(inputs) > 1 else "none given"
        raise InputError(f"RUN: give at least one run file after QRELS ({what})")
    return qrels, runs, names


def _named(names: list[str]) -> list[tuple[str, Metric]]:
    from harness.metrics.vocabulary.definition import parse_metric

    out = []
    for name in names:
        try:
            out.append((name, parse_metric(name)))
        except MetricDefinitionError as exc:
            if "/" in name or Path(name).suffix in (".txt", ".gz", ".run", ".parquet"):
                raise InputError(f"RUN file not found: {name}") from None
            raise MetricDefinitionError(f"measure {name!r}: {str(exc).splitlines()[0]}"
                                        ) from None
    return out


def _whole(label: np.ndarray, qid: Any, docid: Any, path: str) -> np.ndarray | None:
    """The labels truncated toward zero, as trec_eval reads them (``atol``), with a note
    on stderr naming the first that changed; None when all are whole."""
    import numpy as np

    whole = np.trunc(label)
    frac = np.flatnonzero(whole != label)
    if not len(frac):
        return None
    i = int(frac[0])
    print(f"harness eval: QRELS {path}: {len(frac)} label(s) are not integers (first: "
          f"query {str(qid[i])!r}, document {str(docid[i])!r}, {label[i]:g}); truncated "
          f"toward zero, as trec_eval reads them", file=sys.stderr)
    return whole


def _whole_labels(qrels: pd.DataFrame, path: str, note: bool = True) -> pd.DataFrame:
    """The qrels with labels truncated toward zero (a note on stderr when any changed)."""
    import numpy as np

    label = qrels["label"].to_numpy(dtype=np.float64)
    whole = _whole(label, qrels["qid"].to_numpy(), qrels["docid"].to_numpy(),
                   path) if note else np.trunc(label)
    return qrels if whole is None else qrels.assign(label=whole)


def _out_of_memory(path: str) -> InputError:
    """One line for a run this process cannot evaluate in the memory it may use, and the
    bounded-memory route: a parquet file clustered by query, streamed block by block."""
    size = Path(path).stat().st_size / 2 ** 30
    stem = Path(path).name.split(".")[0]
    return InputError(
        f"RUN {path} ({size:.2f} GiB) needs more memory than this process may use to be "
        f"evaluated at once; evaluate it in bounded memory: harness cluster {path} "
        f"{stem}.parquet, then harness.evaluate_parquet('{stem}.parquet', QRELS, metrics) "
        f"or a study with dataset=parquet_run")


def _lacking(qrels: pd.DataFrame, run: pd.DataFrame) -> list[str]:
    """The judged queries a run lacks, sorted."""
    import pandas as pd

    qids = pd.Index(pd.unique(qrels["qid"])).difference(pd.Index(pd.unique(run["qid"])))
    return [str(q) for q in qids]


def _note_skipped(lacking: list[str], path: str) -> None:
    """One stderr line naming the judged queries a run lacks: they are skipped without
    ``-c`` (trec_eval 9.x's behaviour; 10.0 stops with exit 4 instead)."""
    if lacking:
        shown = ", ".join(repr(q) for q in lacking[:5]) + (", ..." if len(lacking) > 5 else "")
        print(f"harness eval: RUN {path} has no results for {len(lacking)} judged "
              f"quer{'y' if len(lacking) == 1 else 'ies'} ({shown}): skipped, as trec_eval "
              f"9.x does (10.0 stops with exit 4); -c scores them 0", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_intermixed_args(argv)
    from harness.metrics.vocabulary.tool_names.trec_eval_measures import expand, select
    from harness.reporting.trec_eval_output import render

    qrels_path, run_paths, names = _split_inputs(args.inputs)
    if args.level_for_rel < 1:
        raise InputError(f"-l: the relevance level must be >= 1, got {args.level_for_rel}")
    if args.Max_retrieved_per_topic is not None and args.Max_retrieved_per_topic < 1:
        raise InputError(f"-M: the depth must be >= 1, got {args.Max_retrieved_per_topic}")
    if args.Number_docs_in_coll < 0:
        raise InputError(f"-N: the number of documents must be >= 0, got "
                         f"{args.Number_docs_in_coll}")
    extra = _named(names)
    try:
        families = select(args.measure or (["official"] if not extra else ["runid", "num_q"]),
                          version=int(args.compat))
        columns = [c for fam, params in families.items() for c in expand(fam, params)
                   # a line printed per query only (relstring) is not computed without -q
                   if args.query_eval_wanted or c.family.summary]
    except MetricDefinitionError as exc:
        raise InputError(str(exc)) from None
    zscores = _zscores(args.Zscore) if args.Zscore else None
    big = any(Path(p).stat().st_size > STREAM_FROM for p in run_paths)
    from harness.allocator import BOUNDED_MMAP, bounded_memory, map_from

    # a run read block by block: memory follows the blocks
    with bounded_memory() if big else contextlib.nullcontext():
        inputs = _Inputs(args, qrels_path, columns, extra, zscores, big=big)
        if big:  # the qrels' columns read mapped; the blocks' arrays in the heap
            map_from(BOUNDED_MMAP)
        evaluations = []
        for path in run_paths:
            ev = inputs.evaluate(path)
            if not ev.qids:
                raise InputError(f"RUN {path}: no query has both results and judgments in "
                                 f"QRELS {qrels_path}")
            if ev.unavailable:
                print(f"harness eval: not computed ({len(ev.unavailable)} lines; no such "
                      f"measure in the registry yet): {', '.join(ev.unavailable)}",
                      file=sys.stderr)
            evaluations.append(ev)
    text = render(evaluations, args.format, per_query=args.query_eval_wanted,
                  z=zscores is not None, summary=not args.nosummary)
    sys.stdout.write(text)
    return OK


def _zscores(path: str) -> dict[tuple[str, str], tuple[float, float]]:
    from harness.data.eval_inputs import read_zscores

    return read_zscores(path)


#: Runs larger than this are evaluated in blocks of about ``BLOCK`` bytes of whole queries,
#: two blocks at once on threads while the next is read: smaller arrays fault in fewer
#: pages and both cores evaluate (a 49 MB run in about 1.1 s against 1.5-1.9 s read whole).
PARALLEL_FROM = 16 << 20
BLOCK = 8 << 20
#: ... and runs larger than this in bounded memory (:func:`harness.allocator.bounded_memory`).
STREAM_FROM = 256 << 20
#: Runs larger than ``PARALLEL_FROM`` and up to this size: the second half's blocks are
#: evaluated in a fork of the process (:func:`_halfway`). Larger runs in one process, for its
#: memory: a fork's pages are its own once written.
TWO_PROCESSES_UPTO = 1 << 30


class _Inputs:
    """The qrels read once, as column arrays for the quick path
    (:mod:`harness.metrics.trec_eval.trec_eval_arrays`, no pandas) and as a DataFrame when a run
    needs the DataFrame path (:func:`~harness.metrics.trec_eval.trec_eval_compute.evaluate_trec`);
    each run evaluated by the first that takes it."""

    def __init__(self, args: argparse.Namespace, qrels_path: str, columns: list[Any],
                 extra: list[tuple[str, Metric]], zscores: Any, *, big: bool = False
                 ) -> None:
        from harness.metrics.trec_eval.trec_eval_arrays import quick_path

        self.args, self.path, self.columns, self.extra = args, qrels_path, columns, extra
        self.zscores = zscores
        self.convention = "trec_eval9" if args.compat == "9" else "trec_eval"
        self.frame: pd.DataFrame | None = None
        self.prefs: pd.DataFrame | None = None
        self.arrays: Any = None
        self.noted = False  # the note on fractional labels is printed
        if quick_path(columns, extra, judged_only=args.Judged_docs_only,
                      rel_format=args.Rel_info_format):
            from harness.data.trec_arrays import CHUNK, STREAM_CHUNK, plan_reading, read_columns

            plan_reading([qrels_path, *args.inputs[1:]])
            chunk = STREAM_CHUNK if big else CHUNK
            self.arrays = _or_memory(lambda: read_columns(qrels_path, "qrels", chunk=chunk),
                                     qrels_path, "qrels")
            if self.arrays is not None:
                whole = _whole(self.arrays.number, self.arrays.text[0], self.arrays.text[2],
                               qrels_path)
                self.noted = True
                if whole is not None:
                    self.arrays.number = whole

    def evaluate(self, path: str) -> Any:
        a = self.args
        options = dict(level=a.level_for_rel, depth=a.Max_retrieved_per_topic,
                       complete=a.complete_rel_info_wanted, zscores=self.zscores,
                       convention=self.convention, collection_size=a.Number_docs_in_coll)
        if self.arrays is not None:
            from harness.data.trec_arrays import read_columns
            from harness.metrics.trec_eval.trec_eval_arrays import evaluate_arrays

            streamed = self._blocks(path, options)
            if streamed is not None:
                return streamed
            run = _or_memory(lambda: read_columns(path, "run"), path, "run")
            if run is not None:
                runid = run.runid
                try:
                    done = evaluate_arrays(run, self.arrays, self.columns,
                                           runid=str(runid), **options)
                except MemoryError:
                    del run
                    raise _out_of_memory(path) from None
                if done is not None:
                    ev, lacking = done
                    ev.path = path
                    if not a.complete_rel_info_wanted:
                        _note_skipped(lacking, path)
                    return ev
        return self._frames(path, options)

    def _blocks(self, path: str, options: dict[str, Any]) -> Any:
        """A run of more than ``PARALLEL_FROM`` bytes evaluated block by block
        (:mod:`harness.metrics.trec_eval.trec_eval_blocks`; over ``STREAM_FROM`` in bounded
        memory); None when it is smaller, or not grouped by query, or not plain: it is read
        whole."""
        from harness.data.trec_arrays import run_blocks
        from harness.metrics.trec_eval.trec_eval_blocks import evaluate_blocks

        size = Path(path).stat().st_size
        if size <= min(PARALLEL_FROM, STREAM_FROM) or Path(path).suffix == ".parquet":
            return None
        cut = _halfway(path, size)
        try:
            done = evaluate_blocks(run_blocks(path, BLOCK, end=cut), self.arrays,
                                   self.columns, rest=None if cut is None else
                                   run_blocks(path, BLOCK, start=cut), **options)
        except MemoryError:
            raise _out_of_memory(path) from None
        if done is None:
            return None
        ev, lacking = done
        ev.path = path
        if not self.args.complete_rel_info_wanted:
            _note_skipped(lacking, path)
        return ev

    def _frames(self, path: str, options: dict[str, Any]) -> Any:
        from harness.data.eval_inputs import read_eval_qrels, read_eval_run, read_prefs
        from harness.metrics.trec_eval.trec_eval_compute import evaluate_trec

        fmt = self.args.Rel_info_format
        if self.frame is None:
            if fmt == "prefs":
                prefs = read_prefs(self.path)
                self.frame = prefs.rename(columns={"jg": "iter"})[
                    ["qid", "iter", "docid", "label"]]
                self.prefs = prefs.rename(columns={"label": "rel"})
            else:
                self.frame = _whole_labels(read_eval_qrels(self.path), self.path,
                                           note=not self.noted)
                if fmt == "qrels_prefs":
                    self.prefs = self.frame  # harness.metrics.trec_eval.prefs reads what they imply
        run, runid = read_eval_run(path)
        try:
            ev = evaluate_trec(run, self.frame, self.columns, self.extra,
                               judged_only=self.args.Judged_docs_only, prefs=self.prefs,
                               runid=runid, **options)
        except MemoryError:  # numpy's and Arrow's too
            del run
            raise _out_of_memory(path) from None
        ev.path = path
        if not self.args.complete_rel_info_wanted and fmt != "prefs":
            _note_skipped(_lacking(self.frame, run), path)
        return ev


def _halfway(path: str, size: int) -> int | None:
    """Where a large run is cut in two, between two queries, for its second half to be
    evaluated in a fork (:mod:`harness.forked`) while this process evaluates the first;
    None: the whole run in this process (a run over ``TWO_PROCESSES_UPTO`` bytes, where
    forks are not safe, in a memory-limited container, or no second query near the middle)."""
    from harness.data.trec_arrays import memory_limited, query_start
    from harness.forked import available

    if size > TWO_PROCESSES_UPTO or not available() or memory_limited():
        return None
    return query_start(path, size // 2)


def _or_memory(read: Any, path: str, kind: str) -> Any:
    """``read()``, its MemoryError the one-line error naming the file."""
    try:
        return read()
    except MemoryError:
        if kind == "run":
            raise _out_of_memory(path) from None
        size = Path(path).stat().st_size / 2 ** 30
        raise InputError(f"QRELS {path} ({size:.2f} GiB) does not fit in the memory this "
                         "process may use; run harness eval where more memory is free, or "
                         "evaluate the run in blocks of queries: harness cluster RUN "
                         "RUN.parquet, then harness.evaluate_parquet") from None
