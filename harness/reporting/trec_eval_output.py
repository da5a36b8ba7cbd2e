"""``harness eval`` output: trec_eval's text (``%-22s\\t%s\\t%6.4f`` lines), or one table of
runs x measures as TSV, CSV or JSON.

trec_eval prints, with ``-q``, every query's lines (in query order, measures in trec_eval's
order), then the summary lines (``all``). Counts print as integers, ``runid`` and
``relstring`` as text; with ``-Z`` every number prints ``%6.4f`` and its name is prefixed
with ``Z`` (``runid`` and ``relstring`` are not).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from harness.metrics.trec_eval.trec_eval_compute import Evaluation

__all__ = ["trec_lines", "table_rows", "render", "FORMATS"]

FORMATS = ("trec", "tsv", "csv", "json")


#: How trec_eval prints a NaN value with ``%6.4f`` (glibc; the NaN of 0.0 / 0.0 on x86-64
#: has its sign bit set).
NAN = "  -nan"


def _value(kind: str, value: Any, z: bool) -> str:
    if kind == "text":
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return NAN
    if z:
        return f"{value:6.4f}"
    if kind == "int":
        return str(int(value))
    return f"{value:6.4f}"


def _line(name: str, qid: str, kind: str, value: Any, z: bool) -> str:
    prefix = "Z" if z and kind != "text" else ""
    return f"{prefix}{name:<22}\t{qid}\t{_value(kind, value, z)}"


def trec_lines(ev: Evaluation, *, per_query: bool, summary: bool = True,
               z: bool = False) -> list[str]:
    """trec_eval's output lines for one run."""
    return _trec_text(ev, per_query=per_query, summary=summary, z=z).splitlines()


def _trec_text(ev: Evaluation, *, per_query: bool, summary: bool, z: bool) -> str:
    """trec_eval's output for one run: every query's lines (with ``per_query``), then the
    summary lines, each ending with a newline."""
    out = [_per_query_text(ev, z)] if per_query else []
    if summary:
        for line in ev.lines:
            if line.summary and line.name in ev.summary:
                kind = "int" if line.aggregate == "count" else line.kind
                out.append(_line(line.name, "all", kind, ev.summary[line.name], z) + "\n")
    return "".join(out)


def _per_query_text(ev: Evaluation, z: bool) -> str:
    """Every query's lines, query after query, as :func:`_line` writes them: one format
    string of a query's lines (``%6.4f`` is ``{:6.4f}``, ``%d`` is ``int()``), repeated for
    every query and filled at once (a million lines: one C call instead of a million)."""
    lines = [ln for ln in ev.lines if ln.per_query and ln.name in ev.values]
    qids = ev.qids
    keep = None
    if ev.unprinted:
        hidden = set(ev.unprinted)
        keep = [i for i, q in enumerate(qids) if q not in hidden]
        qids = [qids[i] for i in keep]
    if not lines or not qids:
        return ""
    spec = {"text": "%s", "int": "%6.4f" if z else "%d", "float": "%6.4f"}
    one_query = "".join(
        f"{'Z' if z and ln.kind != 'text' else ''}{ln.name:<22}".replace("%", "%%")
        + f"\t%s\t{spec[ln.kind]}\n" for ln in lines)
    args = np.empty((len(qids), len(lines), 2), dtype=object)  # (qid, value) per line
    args[:, :, 0] = np.asarray(qids, dtype=object)[:, None]
    for j, ln in enumerate(lines):
        values = ev.values[ln.name]
        args[:, j, 1] = values if keep is None else [values[i] for i in keep]
    text = (one_query * len(qids)) % tuple(args.ravel().tolist())
    return text.replace("\t   nan\n", f"\t{NAN}\n") if "\t   nan\n" in text else text


def _cell(kind: str, value: Any) -> Any:
    if kind == "text" or value is None:
        return value
    value = float(value)
    if kind == "int" and value.is_integer():
        return int(value)
    return None if math.isnan(value) else value


def table_rows(evs: Iterable[Evaluation], *, per_query: bool) -> tuple[list[str], list[dict]]:
    """One table for every run: columns ``run`` (its runid), ``file``, ``qid``, then every
    measure (the union, in order of first appearance); a row per run (``qid`` = ``all``),
    and one per query with ``per_query``."""
    evs = list(evs)
    names: list[str] = []
    for ev in evs:
        for line in ev.lines:
            if line.name not in names and line.name != "runid":
                names.append(line.name)
    rows = []
    for ev in evs:
        kinds = {ln.name: ("int" if ln.aggregate == "count" else ln.kind) for ln in ev.lines}
        if per_query:
            for i, qid in enumerate(ev.qids):
                row: dict[str, Any] = {"run": ev.runid, "file": ev.path, "qid": qid}
                for name in names:
                    vals = ev.values.get(name)
                    row[name] = (_cell(kinds.get(name, "float"), vals[i])
                                 if vals is not None and len(vals) else None)
                rows.append(row)
        row = {"run": ev.runid, "file": ev.path, "qid": "all"}
        for name in names:
            row[name] = _cell(kinds.get(name, "float"), ev.summary.get(name))
        rows.append(row)
    return ["run", "file", "qid", *names], rows


def render(evs: list[Evaluation], fmt: str, *, per_query: bool, z: bool = False,
           summary: bool = True) -> str:
    """The whole output of ``harness eval`` in format ``fmt`` (see :data:`FORMATS`)."""
    if fmt == "trec":
        return "".join(_trec_text(ev, per_query=per_query, summary=summary, z=z)
                       for ev in evs)
    header, rows = table_rows(evs, per_query=per_query)
    if fmt == "json":
        return json.dumps(rows, indent=1) + "\n"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, delimiter="\t" if fmt == "tsv" else ",",
                            lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buf.getvalue()
