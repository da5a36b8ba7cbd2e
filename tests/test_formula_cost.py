"""A formula is checked in time linear in its size: every subtree is compiled once, even
in a tower of powers whose exponents are each bounded (``1**1**...**1``), which was
checked in exponential time (21 levels: tens of seconds)."""

from __future__ import annotations

import pytest

from harness.errors import FormulaError
from harness.metrics.vocabulary import formula
from harness.metrics.vocabulary.definition import parse_metric


@pytest.mark.parametrize("levels", [5, 12, 21])
def test_power_tower_compiles_each_node_once(levels, monkeypatch):
    calls = []
    visit = formula._Compiler.visit

    def counted(self, node):
        calls.append(node)
        return visit(self, node)

    monkeypatch.setattr(formula._Compiler, "visit", counted)
    text = "**".join(["1"] * levels)
    compiled = formula.compile_formula(text, "rel")
    assert float(compiled([0.0])[0]) == 1.0
    assert len(calls) == 2 * levels - 1  # levels constants + (levels - 1) powers


def test_power_tower_through_a_metric_name():
    metric = parse_metric("ndcg@10(gain=" + "**".join(["1"] * 21) + ")")
    assert metric.gain.startswith("1 ** 1")


def test_bounded_exponent_still_refused_in_a_tower():
    with pytest.raises(FormulaError, match="exceeds the bound"):
        formula.compile_formula("2**2**2**2**2", "rel")
