"""The package's shape, read from its own source: no import circles (imports for type
checking included), packages that import only downward (the layers docs/architecture.md
draws), no private name imported from another module, and one home per command."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import harness

ROOT = Path(harness.__file__).resolve().parent
#: Packages (and top-level modules) by layer; a layer imports only the layers below it.
LAYERS = (
    ("errors", "paths", "version", "progress", "allocator", "lazy", "arrow_arrays", "forked"),
    ("metrics", "data"),
    ("interop",),
    ("engines", "datasets", "explain", "reporting", "tracking"),
    ("rankers",),
    ("app", "compare"),
    ("reproduce",),
    ("commands", ""),  # "" is harness/__init__.py: the public API
)


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
    return name.endswith(".__main__")


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


def _imports(module: str, *, typing: bool = False) -> set[str]:
    """The harness modules ``module`` imports at run time, at any depth of its code (a
    function-level import is as much a dependency as a top-level one); with ``typing``,
    those imported for type checking only as well."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    skip = set() if typing else _type_checking_only(tree)
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
#: The same with the imports made for type checking only: a circle there is a circle too.
TYPED = {m: _imports(m, typing=True) for m in MODULES if not _is_entry(m)}


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
    assert "harness.metrics.engine.kernels" in GRAPH["harness.metrics.engine.evaluate"]
    assert "harness.app.study" in GRAPH["harness.app.main"]  # imported inside a function
    top_grade = "harness.metrics.measures.top_grade"  # it imports Prepared for its types
    assert "harness.metrics.layout.prepared" not in GRAPH[top_grade]
    assert "harness.metrics.layout.prepared" in TYPED[top_grade]
    assert "harness.metrics.measures" in GRAPH["harness.metrics.vocabulary.registry"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_back() -> None:
    assert _cycles(TYPED) == []


def test_packages_import_only_downward() -> None:
    layer = {name: i for i, names in enumerate(LAYERS) for name in names}
    assert set(layer) >= {_package(m) for m in MODULES if not _is_entry(m)}, \
        "a new package or top-level module needs a place in LAYERS (and docs/architecture.md)"
    upward = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                    if _package(t) != _package(m) and layer[_package(t)] >= layer[_package(m)])
    assert upward == []


def _private_imports(module: str, source: str | None = None) -> list[str]:
    """``from harness.x import _name`` in ``module`` (or in ``source`` as if it were
    ``module``'s): a private name of another module."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source if source is not None else path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out += [f"{base}.{a.name}" for a in node.names if base.startswith("harness")
                    and a.name.startswith("_") and not a.name.startswith("__")
                    and f"{base}.{a.name}" not in MODULES]
    return out


def test_no_private_name_crosses_modules() -> None:
    """A module is one concept: what another module needs of it is public (in its
    ``__all__``), not reached for behind an underscore."""
    crossing = {m: names for m in MODULES if (names := _private_imports(m))}
    assert crossing == {}
    seen = _private_imports("harness.app.study", "from harness.app.notes import _x, __all__\n"
                            "from harness.metrics import layout\nfrom . import _y")
    assert seen == ["harness.app.notes._x", "harness.app._y"]


def test_every_command_has_one_home_and_one_entry_point() -> None:
    from harness.commands.dispatch import COMMANDS, STUDY

    commands = sorted(p.stem for p in (ROOT / "commands").glob("*.py")
                      if p.stem not in ("__init__", "base", "dispatch"))
    assert "compare" in commands and "eval" in commands  # the walk found them
    # ``harness <command>``: each command's module, and the study (Hydra) as ``run``
    assert {name: c.module for name, c in COMMANDS.items()} == {
        STUDY: "harness.app.main",
        **{name.replace("_", "-"): f"harness.commands.{name}" for name in commands}}
    for name in commands:
        source = MODULES[f"harness.commands.{name}"].read_text()
        assert "def main(argv: list[str] | None = None) -> int:" in source
        assert f'prog="harness {name.replace("_", "-")}"' in source
    # ``python -m harness <command>`` and the ``harness`` console script are the one entry
    # point: no package has a ``__main__`` of its own
    assert sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("__main__.py")) == \
        ["__main__.py"]
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
TOOL_NAME_TABLES = ("harness/metrics/vocabulary/names.py", "harness/metrics/vocabulary/tool_names/")
#: Words that are a measure's name and also something else, with where that else lives:
#: ``judged`` is a value of the ``ideal`` option (and of the rows' "is it judged" flag);
#: ``f1`` is LightGBM's first feature column; ``g`` (trec_eval's G) is the number format of
#: f-strings (``f"{x:g}"``).
SAME_WORD_OTHER_CONCEPT = {"judged", "f1", "g"}


def test_each_measure_is_named_in_one_module() -> None:
    """A measure is one declaration: its name, as a string, appears in the module that
    declares it and nowhere else in harness/ (but the tables of other tools' names).
    Adding or changing a measure touches one file."""
    from harness.metrics.vocabulary.definition import METRIC_NAMES
    from harness.metrics.vocabulary.registry import measures

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
