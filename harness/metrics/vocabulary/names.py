"""Measure names written for other evaluation tools, read as explicit definitions.

:func:`~harness.parse_metric` asks :func:`parse_tool_name` first. A name that only one tool
writes implies that tool's convention where it changes the number (gain, tie order, top
grade); the parsed :class:`~harness.Metric` shows those choices in its display name, which
parses back to the same definition.

- trec_eval (as pytrec_eval takes them): ``ndcg_cut.10`` / ``ndcg_cut_10``, ``P.5``,
  ``recall.100``, ``map_cut.10``, ``success.10``, ``recip_rank``, ``ndcg.1=3,2=9`` (gain
  table), ``iprec_at_recall_0.50``; the relevance level is written after the name as
  trec_eval's option, ``P.5 -l 2``. Convention ``trec_eval`` (linear gain, ties by docid).
- ir_measures: a name with parameters before ``@k`` or with one of ir_measures' own
  parameters (``rel``, ``dcg``, ``gains``, ``max_rel``, ``min_rel``, ``judged_only``), e.g.
  ``nDCG(dcg=exp-log2)@10``, ``AP(rel=2)@10``, ``RR(rel=2)``, ``SDCG(max_rel=4)@10``, and
  ``IPrec@0.5``. Conventions of the backend ir_measures uses: pytrec_eval's (``trec_eval9``)
  for nDCG, AP, P, R, RR, Rprec, Bpref, Success, IPrec; gdeval's for ``dcg=exp-log2``
  (exp2 gain; ties by docid among exactly equal scores) and ERR (top grade 4, the same
  ties); ir_measures' own Judged and Compat (ties by docid ascending; Compat's p
  defaults to 0.95); cwl_eval's for SDCG
  and ``RBP(rel=...)`` (ties in the run's order).
- ranx: ``ndcg_burges@10`` (exp2 gain), ``hit_rate@10``, ``r-precision``, ``rbp.95``, and any
  ranx name with its level suffix, ``precision@5-l2``. Convention ``ranx`` (ties as ranx's
  quicksort leaves them).

Names the harness writes itself (``ndcg@10``, ``nDCG@10``, ``map``, ``mrr``, ``P@5``,
``ERR@20``, ``Rprec``, ``Bpref``, ``Success@10``, ``Judged@10``, ``RBP(p=0.8)``, ``f1@10``)
keep the harness's defaults. A tool prefix reads any name with that tool's convention:
``trec_eval:ndcg``, ``ir_measures:nDCG@10``, ``ranx:mrr``; ``trec_eval9:P.5`` reads a trec_eval
name as trec_eval 9.x and pytrec_eval compute it (scores compared as float32).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from harness.errors import MetricDefinitionError

__all__ = ["parse_tool_name", "TOOLS"]

TOOLS = ("trec_eval", "trec_eval9", "ir_measures", "ranx")
Spec = tuple[str, dict[str, Any]]

_PREFIX = re.compile(r"^\s*(trec_eval9|trec_eval|ir_measures|ranx)\s*:\s*(.*?)\s*$", re.S)


def parse_tool_name(text: str, known: Callable[[str], Any] | None = None) -> Spec | None:
    """``(measure, options)`` for a name of trec_eval, ir_measures or ranx; None when
    ``text`` is not a name only one of those tools writes (the harness grammar reads it).
    ``known(name)`` tells a name the harness grammar reads as its own (the registry's
    ``lookup``): without a prefix, such a name (``map``, ``ndcg``) is not trec_eval's."""
    m = _PREFIX.match(text)
    if m:
        tool, body = m.groups()
        spec = _PARSERS[tool](body, True)
        assert spec is not None  # explicit parsers raise instead
        return spec
    body = text.strip()
    refused = None
    if known is None or not known(body) or body == "recip_rank":
        try:
            spec = _trec_eval(body, False)
        except MetricDefinitionError as exc:  # unless another tool reads it (ranx: rbp.95)
            spec, refused = None, exc
        if spec is not None:
            return spec
    for parse in (_ir_measures, _ranx):
        try:
            spec = parse(body, False)
        except MetricDefinitionError:
            if known is not None and known(body):
                return None  # the registry's own name (rbp): the harness grammar reads it
            raise
        if spec is not None:
            return spec
    if refused is not None:
        raise refused
    return None


def _refuse(tool: str, text: str, why: str) -> MetricDefinitionError:
    return MetricDefinitionError(f"{tool} measure {text!r}: {why}")


# -- trec_eval ----------------------------------------------------------------------------
_TREC_LEVEL = re.compile(r"^(.*?)\s+-l\s*(\S+)$", re.S)
#: trec_eval's lines that are not a number per query of a run and its qrels
_TREC_NOT_METRIC = {
    "runid": "the run's name, not a measure (harness eval prints it)",
    "source:prefs": "it reads preference judgments: harness eval -R prefs (or -R qrels_prefs)",
    "source:jg": "it averages over judge groups (the qrels' iter column): "
                 "harness eval -R qrels_jg",
}


def _trec_eval(text: str, explicit: bool) -> Spec | None:
    """A trec_eval name read with the table ``harness eval -m`` reads
    (:mod:`harness.metrics.vocabulary.tool_names.trec_eval_measures`): as trec_eval prints a line
    (``P_5``, ``ndcg_cut_10``, ``iprec_at_recall_0.50``, ``gm_map``, ``11pt_avg``) or as
    ``-m`` names one (``P.5``, ``ndcg.1=3,2=9``)."""
    from harness.metrics.vocabulary.tool_names.trec_eval_measures import column

    if not explicit and re.split(r"[(@\s]", text, maxsplit=1)[0] in _IRM_NDEVAL:
        return None  # P_IA@5 is ir_measures', not trec_eval's P with a bad cut-off
    opts: dict[str, Any] = {"convention": "trec_eval"}
    m = _TREC_LEVEL.match(text)
    if m:
        text, level = m.group(1).strip(), m.group(2)
        if not level.isdigit() or int(level) < 1:
            raise _refuse("trec_eval", text, f"-l takes a relevance level >= 1, got {level!r}")
        opts["level"] = int(level)
        explicit = True
    if not explicit and not re.fullmatch(r"[\w.,=+\-]+", text):
        return None  # another tool's grammar
    try:
        col = column(text)
    except MetricDefinitionError as exc:
        message = str(exc)
        if not explicit and "unknown" in message:
            return None
        if message.startswith("trec_eval measure"):
            raise
        raise _refuse("trec_eval", text, message.split(": ", 1)[-1]) from None
    fam = col.family
    why = _TREC_NOT_METRIC.get(fam.name) or _TREC_NOT_METRIC.get(f"source:{fam.source}")
    if why is None and fam.measure is None:
        why = "trec_eval prints it per query as text"
    if why is not None:
        raise _refuse("trec_eval", text, why)
    assert fam.measure is not None  # refused just above otherwise
    return fam.measure, {**opts, **dict(fam.fixed), **col.options}


# -- ir_measures --------------------------------------------------------------------------
_IRM = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@\s*(\S+))?$", re.S)
from harness.metrics.vocabulary.tool_names.ir_measures_names import (
    IRM_CWL as _IRM_CWL,
    IRM_NAMES as _IRM_NAMES,
    IRM_NDEVAL as _IRM_NDEVAL,
    IRM_NO_CUTOFF as _IRM_NO_CUTOFF,
    IRM_OWN as _IRM_OWN,
    IRM_PARAMS as _IRM_PARAMS,
    IRM_TREC as _IRM_TREC,
)


def _ir_measures(text: str, explicit: bool) -> Spec | None:
    m = _IRM.match(text)
    if m is None or m.group(1) not in _IRM_NAMES:
        if explicit:
            raise _refuse("ir_measures", text, "unknown; known: " + ", ".join(_IRM_NAMES))
        return None
    name, params_text, cutoff = m.groups()
    params = _irm_params(text, params_text) if params_text else {}
    ordered = bool(params_text) and cutoff is not None  # ir_measures writes @k last
    if not (explicit or ordered or _IRM_OWN & params.keys()
            or (name == "IPrec" and cutoff is not None)
            or ((name == "Compat" or name in _IRM_NDEVAL)
                and params.keys() <= _IRM_PARAMS[name])):
        return None
    measure = _IRM_NAMES[name]
    opts: dict[str, Any] = {}
    if name in _IRM_TREC:  # pytrec_eval: trec_eval 9.x, scores compared as float32
        opts["convention"] = "trec_eval9"
    elif name == "ERR":  # gdeval: top grade 4, exact scores then docno descending
        opts.update(max_label=4, ties="docid")
    elif name == "Judged":  # ir_measures' own provider: exact scores then docid ascending
        opts["ties"] = "docid_ascending"
    elif name == "SDCG":  # cwl_eval: linear gain scaled by the top grade, ties kept in
        opts.update(gain="linear", ties="input")  # the order of the run (a stable sort)
    elif name == "RBP":  # cwl_eval too (it needs rel=: binary RBP), ties in run order
        opts["ties"] = "input"
    elif name in _IRM_CWL:  # cwl_eval: gains scaled by min_rel..max_rel, run order
        opts["ties"] = "input"
        if "max_rel" not in params:
            raise _refuse("ir_measures", text, f"{name} needs max_rel (the top grade its "
                          "gains are scaled by), e.g. " + name + "(max_rel=3)")
        if name == "NERR10":
            opts["p"] = 0.9  # ir_measures' default persistence of NERR10
    elif name == "Compat":  # ir_measures' own provider: scores then docid ascending
        opts.update(ties="docid_ascending", p=0.95)  # its default persistence
    elif name in _IRM_NDEVAL:  # pyndeval: scores, then docid ascending
        opts["ties"] = "docid_ascending"
        if name in ("NRBP", "nNRBP"):
            opts["p"] = 0.5  # ndeval's default beta (persistence)
        if name == "nNRBP":  # 0 / 0 for a query without a relevant subtopic
            opts["empty"] = "nan"
    if name == "NumRet" and "rel" in params:  # NumRet(rel=r) counts the relevant ones
        measure = _IRM_NAMES["NumRelRet"]
    if name in _IRM_PARAMS:
        extra = sorted(params.keys() - _IRM_PARAMS[name])
        if extra:
            raise _refuse("ir_measures", text, f"{name} takes no parameter "
                          f"{', '.join(map(repr, extra))} in ir_measures (its parameters: "
                          f"{', '.join(sorted(_IRM_PARAMS[name])) or 'none'})")
    if cutoff is not None and name in _IRM_NO_CUTOFF:
        raise _refuse("ir_measures", text, f"{name} takes no cut-off @k in ir_measures")
    if cutoff is not None:
        if name == "IPrec":
            opts["at_recall"] = _number(text, "IPrec@", cutoff)
        elif not cutoff.isdigit():
            raise _refuse("ir_measures", text, f"the cut-off after @ must be an int, got "
                          f"{cutoff!r}")
        else:
            opts["k"] = int(cutoff)
    for key, value in params.items():
        _irm_option(text, name, key, value, opts)
    if name == "SDCG" and opts.get("min_label", 0) >= opts.get("max_label", float("inf")):
        raise _refuse("ir_measures", text, "min_rel must be below max_rel")
    return opts.pop("_measure", measure), opts


def _irm_option(text: str, name: str, key: str, value: Any, opts: dict[str, Any]) -> None:
    if key == "rel" and name == "NumRel" and value != 1:
        raise _refuse("ir_measures", text, f"rel={value!r}: ir_measures computes NumRel only "
                      "at rel=1 (pytrec_eval, its provider, ignores the level in num_rel)")
    if key == "rel":
        opts["level"] = value
    elif key == "judged_only":  # unjudged documents leave the ranking
        if name in ("Judged", "SDCG", "ERR", "RBP"):
            raise _refuse("ir_measures", text, f"{name} takes no judged_only in ir_measures")
        if value not in (True, False, "True", "False"):
            raise _refuse("ir_measures", text, f"judged_only must be True or False, got "
                          f"{value!r}")
        if value in (True, "True"):
            opts["unjudged"] = "condensed"
    elif key == "dcg" and name in ("nDCG", "NDCG"):
        if value == "exp-log2":  # ir_measures computes it with gdeval, which compares the
            opts.update(gain="exp2", ties="docid")  # scores exactly: docno descending
        elif value != "log2":
            raise _refuse("ir_measures", text, f"dcg must be 'log2' or 'exp-log2', got "
                          f"{value!r}")
    elif key == "gains" and name in ("nDCG", "NDCG"):
        if not isinstance(value, dict):
            raise _refuse("ir_measures", text, f"gains must be a {{label: gain}} map, got "
                          f"{value!r}")
        opts["gain"] = value
    elif key == "max_rel" and name == "SDCG":
        opts["max_label"] = value
    elif key == "max_rel" and name in _IRM_CWL:
        opts["max_label"] = value
    elif key == "min_rel" and (name == "SDCG" or name in _IRM_CWL):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _refuse("ir_measures", text, f"min_rel must be an int >= 0, got {value!r}")
        if value and name == "SDCG":  # cwl_eval's gain (rel - min_rel) / (max_rel - min_rel)
            opts.update(min_label=value, gain=f"rel - {value}")  # over max_rel - min_rel
        elif value:
            opts["min_label"] = value
    elif key == "relative" and name == "SetP":
        if value not in (True, False):
            raise _refuse("ir_measures", text, f"relative must be True or False, got "
                          f"{value!r}")
        opts["_measure"] = "set_relative_p" if value else "set_p"
    elif key == "beta" and name == "SetF":
        opts["beta"] = value
    elif key == "beta" and name in ("NRBP", "nNRBP"):  # NRBP's persistence
        opts["p"] = value
    elif key == "alpha" and name in _IRM_NDEVAL:
        opts["alpha"] = value
    elif key == "T" and name in _IRM_CWL:
        opts["target"] = value
    elif key == "p" and name in ("RBP", "NERR10", "Compat"):
        opts["p"] = value
    elif key == "normalize" and name == "Compat":
        if value not in (True, False):
            raise _refuse("ir_measures", text, f"normalize must be True or False, got "
                          f"{value!r}")
        opts["normalize"] = value
    elif key == "cutoff":
        opts["k"] = value
    else:
        raise _refuse("ir_measures", text, f"parameter {key!r} is not supported for {name}")


def _irm_params(text: str, params_text: str) -> dict[str, Any]:

    out: dict[str, Any] = {}
    for part in split_top_level(params_text):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep:
            raise _refuse("ir_measures", text, f"expected key=value, got {part!r}")
        out[key] = _irm_value(text, value)
    return out


def _irm_value(text: str, value: str) -> Any:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if value in ("True", "False"):
        return value == "True"
    if value.startswith("{") and value.endswith("}"):
    
        table = {}
        for item in split_top_level(value[1:-1]):
            a, sep, b = item.partition(":")
            if not sep:
                raise _refuse("ir_measures", text, f"expected label:gain, got {item!r}")
            table[_number(text, "gains", a)] = _number(text, "gains", b)
        return table
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    try:
        return float(value)
    except ValueError:
        return value  # a bare word such as exp-log2


def _number(text: str, what: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise _refuse("ir_measures", text, f"{what} needs a number, got {value!r}") from None


# -- ranx ---------------------------------------------------------------------------------
# ranx 0.3.21's metric names (ranx.metrics.metric_switch, read by ranx.meta.evaluate's
# extract_metric_and_params): name[@k][-lN], rbp.P[-lN] or rbp@P[-lN]
_RANX = re.compile(r"^([a-z][a-z0-9_-]*?)(?:@(\d+)|\.(\d+))?(?:-l(\d+))?$")
_RANX_NAMES = {"ndcg": "ndcg", "ndcg_burges": "ndcg", "dcg": "dcg", "dcg_burges": "dcg",
               "map": "ap", "mrr": "rr", "precision": "precision", "recall": "recall",
               "hit_rate": "success", "hits": "hits", "r-precision": "rprec",
               "bpref": "bpref", "f1": "f1", "rbp": "rbp"}
_RANX_OWN = {"ndcg_burges", "dcg_burges", "hit_rate", "r-precision", "rbp"}
#: ranx's graded measures: its level suffix zeroes the labels below it (they keep their
#: grade above); on the binary ones it is the relevance level
_RANX_GRADED = {"ndcg", "ndcg_burges", "dcg", "dcg_burges"}


def _ranx(text: str, explicit: bool) -> Spec | None:
    m = _RANX.match(text)
    if m is None or m.group(1) not in _RANX_NAMES:
        if explicit:
            raise _refuse("ranx", text, "unknown; known: " + ", ".join(_RANX_NAMES))
        return None
    name, cutoff, persistence, level = m.groups()
    if not (explicit or name in _RANX_OWN or level is not None):
        return None
    opts: dict[str, Any] = {"convention": "ranx"}
    if name == "rbp":  # ranx reads rbp.95 and rbp@95 alike: p = 0.95; rbp takes no k
        digits = persistence if persistence is not None else cutoff
        if digits is None:
            raise _refuse("ranx", text, "rbp needs its persistence, e.g. rbp.95 (p=0.95)")
        opts["p"] = float("0." + digits)
    elif persistence is not None:
        raise _refuse("ranx", text, "only rbp takes a '.'; write the cut-off as @k")
    elif cutoff is not None and int(cutoff) > 0:  # ranx's @0 is the whole list
        opts["k"] = int(cutoff)  # (r-precision and bpref ignore k, as Metric does)
    if name in ("ndcg_burges", "dcg_burges"):
        opts["gain"] = "exp2"
    if name == "rbp":  # ranx weights each document by its label
        opts["graded"] = True
    if name == "bpref":  # ranx: no judged non-relevant document gives NaN
        opts["no_nonrelevant"] = "nan"
    if level is not None and int(level) == 0 and name not in _RANX_GRADED | {"rbp"}:
        raise _refuse("ranx", text, "-l0 makes every judged document relevant, label 0 "
                                    "included; no harness level expresses that")
    if level is not None and int(level) > 0:  # -l0 on a graded one: label 0 adds nothing
        opts["min_label" if name in _RANX_GRADED else "level"] = int(level)
    return _RANX_NAMES[name], opts


def _trec_eval9(text: str, explicit: bool) -> Spec | None:
    """A trec_eval name as trec_eval 9.x and pytrec_eval compute it (``trec_eval9:P.5``)."""
    spec = _trec_eval(text, explicit)
    return None if spec is None else (spec[0], {**spec[1], "convention": "trec_eval9"})


_PARSERS = {"trec_eval": _trec_eval, "trec_eval9": _trec_eval9, "ir_measures": _ir_measures,
            "ranx": _ranx}


def split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]
