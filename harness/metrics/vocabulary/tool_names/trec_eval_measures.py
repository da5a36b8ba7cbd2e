"""trec_eval's measures as ``-m`` names them: each family, its parameters, and the harness
:class:`~harness.Metric` every printed line stands for.

A family (``P``, ``ndcg_cut``, ``utility``, ...) expands into printed columns the way
trec_eval's ``init_meas`` does: integer cut-offs are sorted and printed ``P_5``; fractional
cut-offs are sorted and printed ``%3.2f`` (``iprec_at_recall_0.10``); other parameters are
printed as written (``utility_2,-1,0,0``, ``ndcg_1=3,2=9``), and only when given.
Families appear in trec_eval's own order (``measures.c``), whatever order ``-m`` names
them in. Every metric uses ``convention="trec_eval"`` (linear gain, ties by docno).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.errors import MetricDefinitionError

__all__ = ["Family", "Column", "FAMILIES", "NICKNAMES", "ADDED_IN_10", "expand", "select",
           "column"]

#: How a family's parameters are read (trec_eval's init_meas kinds).
SINGLE, LONG_CUTS, DOUBLE_CUTS, DOUBLE_PARAMS, PAIRS, OWN = (
    "single", "long_cuts", "double_cuts", "double_params", "pairs", "own")
_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_LEVELS = tuple(i / 10 for i in range(11))


@dataclass(frozen=True)
class Family:
    """One trec_eval measure: ``name`` (as ``-m`` writes it), how its parameters read,
    its default parameters, the harness measure and which option the parameters set."""

    name: str
    kind: str = SINGLE
    measure: str | None = None
    option: str | None = None  # "k", "at_recall", "mult", "weights", "levels", "gain", ...
    defaults: tuple[Any, ...] = ()
    integer: bool = False  # printed as a count (%ld)
    per_query: bool = True  # printed per query (-q)
    summary: bool = True  # printed in the summary
    source: str = "qrels"  # "qrels", "prefs" (-R prefs / qrels_prefs) or "jg" (qrels_jg)
    fixed: tuple[tuple[str, Any], ...] = ()  # options trec_eval sets (rbp: p=0.9, ...)
    judged_count: bool = False  # a count over the qrels: kept for a query the run lacks (-c)


@dataclass(frozen=True)
class Column:
    """One printed line of a family: its name and what computes it."""

    name: str
    family: Family
    options: dict[str, Any] = field(default_factory=dict)  # the Metric's options


def _f(name: str, kind: str = SINGLE, measure: str | None = None, option: str | None = None,
       defaults: tuple[Any, ...] = (), **kw: Any) -> Family:
    return Family(name, kind, measure, option, defaults, **kw)


_PREFS = ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
          "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret",
          "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp",
          "prefs_pair_imp", "prefs_avgjg_imp")

#: Every family, in trec_eval's order (the order lines are printed in).
FAMILIES: dict[str, Family] = {f.name: f for f in (
    _f("runid", OWN, per_query=False),
    _f("num_q", OWN, "query_count", integer=True, per_query=False),
    _f("num_ret", measure="num_ret", integer=True),
    _f("num_rel", measure="num_rel", integer=True, judged_count=True),
    _f("num_rel_ret", measure="num_rel_ret", integer=True),
    _f("map", measure="ap"),
    _f("gm_map", measure="gm_ap", per_query=False),
    _f("Rprec", measure="rprec"),
    _f("bpref", measure="bpref"),
    _f("recip_rank", measure="rr"),
    _f("iprec_at_recall", DOUBLE_CUTS, "iprec", "at_recall", _RECALL_LEVELS),
    _f("P", LONG_CUTS, "precision", "k", _CUTS),
    _f("relstring", OWN, option="length", defaults=(10.0,), summary=False),
    _f("recall", LONG_CUTS, "recall", "k", _CUTS),
    _f("infAP", measure="infap"),
    _f("gm_bpref", measure="gm_bpref", per_query=False),
    _f("Rprec_mult", DOUBLE_CUTS, "rprec_mult", "mult",
       tuple(i / 5 for i in range(1, 11))),
    _f("utility", DOUBLE_PARAMS, "utility", "weights", (1.0, -1.0, 0.0, 0.0)),
    _f("11pt_avg", DOUBLE_PARAMS, "iprec_avg", "levels", _RECALL_LEVELS),
    _f("binG", measure="bin_g"),
    _f("G", PAIRS, "g", "gain"),
    _f("dcg", PAIRS, "dcg", "gain"),
    _f("ndcg", PAIRS, "ndcg", "gain"),
    _f("ndcg_rel", PAIRS, "ndcg_rel", "gain"),
    _f("Rndcg", PAIRS, "rndcg", "gain"),
    _f("ndcg_cut", LONG_CUTS, "ndcg", "k", _CUTS),
    _f("map_cut", LONG_CUTS, "ap", "k", _CUTS),
    _f("relative_P", LONG_CUTS, "relative_precision", "k", _CUTS),
    _f("success", LONG_CUTS, "success", "k", (1, 5, 10)),
    _f("set_P", measure="set_p"),
    _f("set_relative_P", measure="set_relative_p"),
    _f("set_recall", measure="set_recall"),
    _f("set_map", measure="set_ap"),
    _f("set_F", DOUBLE_PARAMS, "set_f", "beta", (1.0,)),
    _f("num_nonrel_judged_ret", measure="num_nonrel_judged_ret", integer=True),
    *(_f(name, integer=name.startswith("prefs_num"), source="prefs") for name in _PREFS),
    _f("map_avgjg", measure="ap", source="jg"),
    _f("P_avgjg", LONG_CUTS, "precision", "k", _CUTS, source="jg"),
    _f("Rprec_mult_avgjg", DOUBLE_CUTS, "rprec_mult", "mult",
       tuple(i / 5 for i in range(1, 11)), source="jg"),
    _f("rbp", PAIRS, "rbp_scaled", "p", fixed=(("p", 0.9),)),
    _f("rbp_resid", PAIRS, "rbp_resid", "p", fixed=(("p", 0.9),)),
    _f("unj", LONG_CUTS, "unj", "k", (5, 10, 20)),
)}

#: trec_eval's nicknames for sets of families (measures.c).
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
                 "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
                 "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "relstring",
                 "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility",
                 "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall",
                 "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
            "set_recall", "set_relative_P", "set_map", "set_F"),
    "all_prefs": ("runid", "num_q", *_PREFS[:3], *_PREFS[3:]),
    "prefs": ("runid", "num_q", *_PREFS[:8]),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}


def _refuse(text: str, why: str) -> MetricDefinitionError:
    return MetricDefinitionError(f"-m {text}: {why}")


#: Families trec_eval 10.0 added to its sets (``all_trec``): 9.x's sets lack them.
ADDED_IN_10: tuple[str, ...] = ("rbp", "rbp_resid", "unj")


def select(specs: list[str], *, version: int = 10) -> dict[str, str | None]:
    """The families ``-m`` arguments ask for: ``{family: parameter text or None}``, in
    trec_eval's order. A nickname marks its families (``version=9``: as trec_eval 9.x's
    sets, without :data:`ADDED_IN_10`); ``name.params`` sets parameters (as in trec_eval,
    the first parameters given for a family win)."""
    chosen: dict[str, str | None] = {}
    for spec in specs:
        name, dot, params = spec.partition(".")
        if dot and not params:
            raise _refuse(spec, "no parameters after '.'")
        if name in NICKNAMES and not dot:
            for fam in NICKNAMES[name]:
                if version >= 10 or fam not in ADDED_IN_10:
                    chosen.setdefault(fam, None)
            continue
        if name not in FAMILIES:
            raise _refuse(spec, f"unknown trec_eval measure {name!r}; measures: "
                          f"{', '.join(FAMILIES)}; sets: {', '.join(NICKNAMES)}")
        if dot and chosen.get(name) is None:
            chosen[name] = params
        else:
            chosen.setdefault(name, None)
    return {name: chosen[name] for name in FAMILIES if name in chosen}


def _number(text: str, item: str) -> float:
    try:
        return float(item)
    except ValueError:
        raise _refuse(text, f"parameter {item!r} is not a number") from None


def _atol(item: str) -> int:
    """C's atol: the leading integer of ``item`` (``23.4`` -> 23), 0 if none."""
    digits = ""
    for i, ch in enumerate(item.strip()):
        if ch.isdigit() or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


def expand(name: str, params: str | None) -> list[Column]:
    """The printed columns of family ``name`` with ``params`` (None: its defaults)."""
    fam = FAMILIES[name]
    text = f"{name}.{params}" if params is not None else name
    items = params.split(",") if params is not None else None
    if fam.kind == LONG_CUTS:
        assert fam.option is not None  # a family with parameters names the option they set
        cuts = sorted(_atol(i) for i in items) if items else list(fam.defaults)
        if cuts[0] <= 0:
            raise _refuse(text, "cut-offs must be positive")
        if len(set(cuts)) != len(cuts):
            raise _refuse(text, "duplicate cut-offs")
        return [Column(f"{name}_{k}", fam, {fam.option: k}) for k in cuts]
    if fam.kind == DOUBLE_CUTS:
        assert fam.option is not None
        cuts = sorted(_number(text, i) for i in items) if items else list(fam.defaults)
        if len(set(cuts)) != len(cuts):
            raise _refuse(text, "duplicate cut-offs")
        return [Column(f"{name}_{c:3.2f}", fam, {fam.option: c}) for c in cuts]
    printed = f"{name}_{params}" if params is not None else name
    if fam.kind == DOUBLE_PARAMS or (fam.kind == OWN and fam.option):
        assert fam.option is not None
        values = tuple(_number(text, i) for i in items) if items else fam.defaults
        if fam.option in ("beta",):
            return [Column(printed, fam, {fam.option: values[0]})]
        return [Column(printed, fam, {fam.option: values})]
    if fam.kind == PAIRS:
        return [Column(printed, fam, _pairs(fam, text, params) if params else {})]
    if params is not None:
        raise _refuse(text, f"{name} takes no parameters")
    return [Column(name, fam)]


def _pairs(fam: Family, text: str, params: str) -> dict[str, Any]:
    table: dict[float, float] = {}
    for item in params.split(","):
        label, eq, value = item.partition("=")
        if not eq:
            raise _refuse(text, f"malformed pair parameters (label=value): {item!r}")
        if fam.option == "p":  # rbp.p=0.95
            if label.strip() != "p":
                raise _refuse(text, f"{fam.name} takes p=<persistence>, got {item!r}")
            return {"p": _number(text, value)}
        table[_number(text, label)] = _number(text, value)
    return {"gain": table}


def column(text: str) -> Column:
    """The one printed line a name stands for, read with this module's table: a name as
    trec_eval prints it (``P_5``, ``ndcg_cut_10``, ``iprec_at_recall_0.50``,
    ``utility_2,-1,0,0``, ``map``) or as ``-m`` writes one line (``P.5``,
    ``ndcg.1=3,2=9``, ``iprec_at_recall..5``, ``relstring.20``).

    Raises :class:`MetricDefinitionError` for a name of no family, for a family's name
    that stands for several lines (``P``: P_5 ... P_1000) and for bad parameters."""
    name = text.strip()
    family = max((f for f in FAMILIES if name == f or name.startswith((f + "_", f + "."))),
                 key=len, default=None)
    if family is None:
        if name in NICKNAMES:
            raise MetricDefinitionError(f"trec_eval measure {text!r}: a set of measures "
                                        f"({', '.join(NICKNAMES[name])}), not one")
        raise MetricDefinitionError(f"trec_eval measure {text!r}: unknown; measures: "
                                    f"{', '.join(FAMILIES)}")
    rest = name[len(family) + 1:]
    if name[len(family):len(family) + 1] == "." and not rest:
        raise _refuse(text, "no parameters after '.'")
    columns = expand(family, rest if rest else None)
    if len(columns) != 1:
        first = columns[0].name.rpartition("_")[2]
        raise MetricDefinitionError(
            f"trec_eval measure {text!r}: prints {len(columns)} lines ({columns[0].name} ... "
            f"{columns[-1].name}); name one, e.g. {family}.{first} or {columns[0].name}")
    return columns[0]
