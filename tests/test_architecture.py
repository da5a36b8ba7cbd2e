"""The package's shape, read from its own source: no import circles, packages that import
only downward (the layers docs/architecture.md draws), modules of at most
about 400 lines, and one home per command."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

import harness

ROOT = Path(harness.__file__).resolve().parent
#: Packages holding only a ``python -m harness.<name>`` entry point (``__main__.py``, a few
#: lines handing over to harness.commands); compare, explain and reproduce hold theirs beside
#: their library code.
ENTRY_PACKAGES = ("sync", "cluster", "scored_run", "eval", "judgments")
#: Packages (and top-level modules) by layer; a layer imports only the layers below it.
LAYERS = (
    ("errors", "paths", "version", "progress", "allocator", "lazy"),
    ("metrics", "data"),
    ("interop",),
    ("engines", "datasets", "explain", "reporting", "tracking"),
    ("rankers",),
    ("app", "compare"),
    ("reproduce",),
    ("commands", ""),  # "" is harness/__init__.py: the public API
)
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_entry(name: str) -> bool:
    return name.endswith(".__main__") or name in {f"harness.{s}" for s in ENTRY_PACKAGES}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Line numbers of imports under ``if TYPE_CHECKING:`` (never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(n.lineno for n in ast.walk(inner) if hasattr(n, "lineno"))
    return lines


def _resolve(name: str) -> str:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str) -> set[str]:
    """The harness modules ``module`` imports at run time, at any depth of its code (a
    function-level import is as much a dependency as a top-level one)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {_resolve(a.name) for a in node.names if a.name.startswith("harness")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base.startswith("harness"):
                out |= {_resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in MODULES
                        else _resolve(base) for a in node.names}
    out.discard(module)
    return out


GRAPH = {m: _imports(m) for m in MODULES if not _is_entry(m)}


def _package(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_the_imports_it_must_see() -> None:
    """The checks below are only as good as the import walk: known edges, including a
    function-level one, are found, and a TYPE_CHECKING-only one is not."""
    assert "harness.metrics.kernels" in GRAPH["harness.metrics.evaluate"]
    assert "harness.app.study" in GRAPH["harness.app.main"]  # imported inside a function
    assert "harness.metrics.prepared" not in GRAPH["harness.metrics.ranking"]  # types only
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_back() -> None:
    assert _cycles(GRAPH) == []


def test_packages_import_only_downward() -> None:
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    assert set(layer) >= {_package(m) for m in MODULES if not _is_entry(m)}, \
        "a new package or top-level module needs a place in LAYERS (and docs/architecture.md)"
    upward = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                    if _package(t) != _package(m) and layer[_package(t)] >= layer[_package(m)])
    assert upward == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_short(module: str) -> None:
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it along its concepts"


def test_every_command_has_one_home_and_one_entry_point() -> None:
    from harness.commands.dispatch import COMMANDS, STUDY

    commands = sorted(p.stem for p in (ROOT / "commands").glob("*.py")
                      if p.stem not in ("__init__", "base", "dispatch"))
    assert commands == ["cluster", "compare", "eval", "explain", "judgments", "reproduce",
                        "scored_run", "sync"]
    # ``harness <command>``: each command's module, and the study (Hydra) as ``run``
    assert {name: c.module for name, c in COMMANDS.items()} == {
        STUDY: "harness.app.main",
        **{name.replace("_", "-"): f"harness.commands.{name}" for name in commands}}
    for name in commands:
        source = MODULES[f"harness.commands.{name}"].read_text()
        assert "def main(argv: list[str] | None = None) -> int:" in source
        assert f'prog="harness {name.replace("_", "-")}"' in source
        entry = ROOT / name / "__main__.py"  # ``python -m harness.<name>``
        text = entry.read_text()
        assert f"from harness.commands.{name} import main" in text
        assert len(text.splitlines()) <= 12, f"{entry} should only hand over to the command"
    for name in ENTRY_PACKAGES:  # nothing but the entry point
        assert ast.parse(MODULES[f"harness.{name}"].read_text()).body[1:] == []
    # ``python -m harness`` and the ``harness`` console script are the dispatcher
    assert "from harness.commands.dispatch import main" in (ROOT / "__main__.py").read_text()
    pyproject = (ROOT.parent / "pyproject.toml").read_text()
    assert 'harness = "harness.commands.dispatch:main"' in pyproject


def test_no_two_modules_share_a_file_name() -> None:
    """A file name says what the module holds, once: ``sync.py`` in three packages would
    say it three times about three things. Only ``__init__.py`` and ``__main__.py`` recur."""
    homes = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            homes[path.name].append(str(path.relative_to(ROOT.parent)))
    assert {name: paths for name, paths in homes.items() if len(paths) > 1} == {}


#: The tables of other tools' measure names (trec_eval, ir_measures, ranx): they spell every
#: measure, by design.
TOOL_NAME_TABLES = ("harness/metrics/names.py", "harness/metrics/tool_names/")
#: Words that are a measure's name and also something else, with where that else lives:
#: ``judged`` is a value of the ``ideal`` option (and of the rows' "is it judged" flag);
#: ``f1`` is LightGBM's first feature column; ``g`` (trec_eval's G) is the number format of
#: f-strings (``f"{x:g}"``).
SAME_WORD_OTHER_CONCEPT = {"judged", "f1", "g"}


def test_each_measure_is_named_in_one_module() -> None:
    """A measure is one declaration: its name, as a string, appears in the module that
    declares it and nowhere else in harness/ (but the tables of other tools' names).
    Adding or changing a measure touches one file."""
    from harness.metrics.definition import METRIC_NAMES
    from harness.metrics.registry import measures

    names = {m.name for m in measures() if m.builtin}
    assert set(METRIC_NAMES) <= names
    homes: dict[str, set[str]] = defaultdict(set)
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT.parent))
        if rel.startswith(TOOL_NAME_TABLES):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                homes[node.value].add(rel)
    spread = {name: sorted(paths) for name, paths in homes.items()
              if len(paths) > 1 and name not in SAME_WORD_OTHER_CONCEPT}
    assert spread == {}, "measure names outside their declaration's module"
    for name in names - SAME_WORD_OTHER_CONCEPT:
        assert len(homes[name]) == 1 and next(iter(homes[name])).startswith(
            "harness/metrics/measures/"), (name, homes[name])
