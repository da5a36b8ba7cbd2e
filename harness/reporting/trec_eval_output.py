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

from harness.metrics.trec_eval_compute import Evaluation

__all__ = ["trec_lines", "table_rows", "render", "FORMATS"]

FORMATS = ("trec", "tsv", "csv", "json")


def _value(kind: str, value: Any, z: bool) -> str:
    if kind == "text":
        return str(value)
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
    out = []
    if per_query:
        for i, qid in enumerate(ev.qids):
            for line in ev.lines:
                if line.per_query and line.name in ev.values:
                    out.append(_line(line.name, qid, line.kind, ev.values[line.name][i], z))
    if summary:
        for line in ev.lines:
            if line.summary and line.name in ev.summary:
                kind = "int" if line.aggregate == "count" else line.kind
                out.append(_line(line.name, "all", kind, ev.summary[line.name], z))
    return out


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
                    row[name] = _cell(kinds.get(name, "float"), vals[i]) if vals else None
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
        return "".join(line + "\n" for ev in evs
                       for line in trec_lines(ev, per_query=per_query, summary=summary, z=z))
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
