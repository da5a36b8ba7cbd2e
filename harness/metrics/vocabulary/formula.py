"""A small, allowlisted evaluator for gain and discount formulas.

A formula is a Python-syntax arithmetic expression over one variable (``rel`` for gains,
``rank`` for discounts, 1-based). It is parsed with :mod:`ast` and compiled into a tree of
numpy operations; nothing is ever passed to ``eval``. Allowed:

- numbers, the variable, ``+ - * / **`` and unary ``-``/``+``;
- the functions ``log(x)`` / ``log(x, base)``, ``log2``, ``log10``, ``exp``, ``sqrt``,
  ``pow(x, y)``, ``min(a, b, ...)``, ``max(a, b, ...)``, ``abs``;
- the constants ``e`` and ``pi``.

Limits keep a hostile formula cheap to reject: at most 200 characters and 64 syntax nodes,
exponents that do not involve the variable at most 64 in absolute value. Values are computed in float64, so a
formula cannot allocate big integers; results that overflow are reported by the caller.

:func:`gain_formula` and :func:`discount_formula` refuse formulas that cannot be a gain or a
discount: a gain 0 at every label (every ideal DCG 0), a discount not > 0 at rank 1 or
growing with the rank.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness.errors import FormulaError

__all__ = ["Formula", "compile_formula", "gain_formula", "discount_formula"]

MAX_CHARS = 200
MAX_NODES = 64
MAX_CONST_EXPONENT = 64.0

_Fn = Callable[[np.ndarray], np.ndarray]

_UNARY_FUNCS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "log2": np.log2,
    "log10": np.log10,
    "exp": np.exp,
    "sqrt": np.sqrt,
    "abs": np.abs,
}
_CONSTANTS = {"e": math.e, "pi": math.pi}
_BINOPS: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
}
ALLOWED_FUNCTIONS = ("log", "pow", "min", "max", *_UNARY_FUNCS)


@dataclass(frozen=True)
class Formula:
    """A compiled formula: ``source`` is the canonical text, ``variable`` its one name."""

    source: str
    variable: str
    _fn: _Fn

    def __call__(self, values: np.ndarray) -> np.ndarray:
        x = np.asarray(values, dtype=np.float64)
        with np.errstate(all="ignore"):
            out = self._fn(x)
        return np.broadcast_to(np.asarray(out, dtype=np.float64), x.shape).copy()


def compile_formula(source: str, variable: str) -> Formula:
    """Parse ``source`` as a formula over ``variable`` and return a :class:`Formula`.

    Raises
    ------
    FormulaError
        Naming the offending construct, when the text is too long, not an expression,
        uses a name, attribute, call or operator outside the allowlist, has too many nodes
        or a constant exponent above the bound.
    """
    if not isinstance(source, str):
        raise FormulaError(f"a formula must be a string, got {type(source).__name__}")
    text = source.strip()
    if not text:
        raise FormulaError("empty formula")
    if len(text) > MAX_CHARS:
        raise FormulaError(f"formula is {len(text)} characters long; the limit is {MAX_CHARS}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"formula {text!r} is not an arithmetic expression: {exc.msg}") from None
    n_nodes = sum(1 for _ in ast.walk(tree))
    if n_nodes > MAX_NODES:
        raise FormulaError(f"formula {text!r} has {n_nodes} syntax nodes; the limit is {MAX_NODES}")
    fn = _Compiler(text, variable).visit(tree.body)
    return Formula(source=ast.unparse(tree), variable=variable, _fn=fn)


class _Compiler:
    def __init__(self, text: str, variable: str) -> None:
        self.text = text
        self.variable = variable

    def fail(self, what: str) -> FormulaError:
        return FormulaError(
            f"formula {self.text!r}: {what} is not allowed; use numbers, {self.variable!r}, "
            f"+ - * / **, and the functions {', '.join(ALLOWED_FUNCTIONS)}"
        )

    def visit(self, node: ast.AST) -> _Fn:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise self.fail(f"the constant {node.value!r}")
            const = np.asarray(float(node.value))  # 0-d: Formula broadcasts it
            return lambda x: const
        if isinstance(node, ast.Name):
            if node.id == self.variable:
                return lambda x: x
            if node.id in _CONSTANTS:
                named = np.asarray(_CONSTANTS[node.id])
                return lambda x: named
            raise self.fail(f"the name {node.id!r}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.visit(node.operand)
            if isinstance(node.op, ast.USub):
                return lambda x: np.negative(inner(x))
            return inner
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            op = _BINOPS[type(node.op)]
            left, right = self.visit(node.left), self.visit(node.right)
            if isinstance(node.op, ast.Pow):
                self._check_exponent(node.right, right)
            return lambda x: op(left(x), right(x))
        if isinstance(node, ast.Call):
            return self._call(node)
        raise self.fail(f"the syntax {type(node).__name__}")

    def _check_exponent(self, node: ast.AST, compiled: _Fn) -> None:
        """An exponent that does not involve the variable must stay within the bound; it is
        evaluated in float64 (never as a Python int) from its compiled form, so each
        subtree is compiled once and checking a tower of powers costs linear time."""
        if any(isinstance(n, ast.Name) and n.id == self.variable for n in ast.walk(node)):
            return
        with np.errstate(all="ignore"):
            value = float(np.asarray(compiled(np.zeros(1))).reshape(-1)[0])
        if not math.isfinite(value) or abs(value) > MAX_CONST_EXPONENT:
            text = ast.unparse(node)
            shown = text if text.lstrip("-").replace(".", "", 1).isdigit() else \
                f"{text} (= {value:g})"
            raise FormulaError(
                f"formula {self.text!r}: the exponent {shown} exceeds the bound of "
                f"{MAX_CONST_EXPONENT:g}"
            )

    def _call(self, node: ast.Call) -> _Fn:
        if not isinstance(node.func, ast.Name):
            raise self.fail("calling anything but a plain function name")
        name = node.func.id
        if node.keywords:
            raise self.fail(f"keyword arguments to {name}()")
        args = [self.visit(a) for a in node.args]
        if name in _UNARY_FUNCS:
            if len(args) != 1:
                raise FormulaError(f"formula {self.text!r}: {name}() takes 1 argument")
            f, (a,) = _UNARY_FUNCS[name], args
            return lambda x: f(a(x))
        if name == "log":
            if len(args) == 1:
                (a,) = args
                return lambda x: np.log(a(x))
            if len(args) == 2:
                a, b = args
                return lambda x: np.log(a(x)) / np.log(b(x))
            raise FormulaError(f"formula {self.text!r}: log() takes 1 or 2 arguments")
        if name == "pow":
            if len(args) != 2:
                raise FormulaError(f"formula {self.text!r}: pow() takes 2 arguments")
            self._check_exponent(node.args[1], args[1])
            a, b = args
            return lambda x: np.power(a(x), b(x))
        if name in ("min", "max"):
            if len(args) < 2:
                raise FormulaError(f"formula {self.text!r}: {name}() takes 2 or more arguments")
            reduce = np.minimum if name == "min" else np.maximum

            def fold(x: np.ndarray, args: list[_Fn] = args) -> np.ndarray:
                out = args[0](x)
                for g in args[1:]:
                    out = reduce(out, g(x))
                return out

            return fold
        raise self.fail(f"the function {name!r}")


#: Labels a gain formula is tried at: one that is 0 at all of them gives every query an
#: ideal DCG of 0, so nDCG would be its ``empty`` value everywhere.
_PROBE_LABELS = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 100.0, 1e3, 1e6])
#: Ranks a discount formula is tried at (1-based): it must be > 0 at rank 1 and never grow.
_PROBE_RANKS = np.arange(1.0, 10_001.0)


def gain_formula(formula: Formula) -> str:
    """A gain formula's canonical text, refused when it is 0 at every label probed."""
    gains = formula(_PROBE_LABELS)
    if np.all(gains == 0):
        raise FormulaError(f"gain {formula.source!r} is 0 at every label tried (0.5 .. 1e6): "
                           "every ideal DCG would be 0 and nDCG undefined")
    return formula.source


def discount_formula(formula: Formula) -> str:
    """A discount formula's canonical text, refused unless it is > 0 at rank 1 and never
    grows with the rank (over ranks 1 .. 10,000; a rank where it is not finite is named
    where the data reach it)."""
    d = formula(_PROBE_RANKS)
    if math.isfinite(d[0]) and not d[0] > 0:
        raise FormulaError(f"discount {formula.source!r} is {d[0]:g}, not > 0 at rank 1: "
                           "every DCG would be 0")
    finite = np.isfinite(d[:-1]) & np.isfinite(d[1:])
    grows = np.flatnonzero(finite & (d[1:] > d[:-1] * (1 + 1e-12)))
    if len(grows):
        i = int(grows[0])
        raise FormulaError(f"discount {formula.source!r} grows with the rank ({d[i]:g} at "
                           f"rank {i + 1}, {d[i + 1]:g} at rank {i + 2}); a discount must not "
                           "grow (e.g. 1/log2(rank + 1))")
    return formula.source
