"""pytest plugin: how ``pytest -n`` shares the suite's expensive setup between its workers.

``pytest -n N`` (``make test``) is run with ``--dist loadgroup`` (set here, see
:func:`pytest_configure`, unless ``--dist`` is given). Under xdist's default ``--dist load``,
xdist hands tests to the workers one by one, so the tests of one module fixture (the
README's commands, benchmarks/bench_scale.py, the small sweep of tests/test_compare.py, ...)
land on both workers and each worker builds that fixture: a minute of CPU paid twice.

Here every test that uses a module-, class-, package- or session-scoped fixture of
``tests/`` (other than tests/conftest.py's, which are cheap) gets an ``xdist_group`` named
after that fixture; tests linked through fixtures they share land in one group, so each
fixture is built once, on one worker. xdist hands out the largest groups first.

The other tests are handed out one at a time in collection order; the modules listed in
:data:`FIRST` (in its order) and then those with a test marked ``slow`` are moved to the
front (whole modules, so a module's tests stay together), so that no test of tens of seconds
starts last while the other worker idles.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

# modules of tests that each take 10+ s of one core (a subprocess study, a sweep, signals).
# Not here: the modules whose first ranx call was slow only because numba compiled it. The
# group of tests/test_ranx_names.py, handed out first, compiles every ranx metric into
# numba's cache (ranx's cache=True); run later, those modules load it instead of compiling
# it again at the same time on the other worker.
FIRST = ("test_walkthrough.py", "test_sweep_signals.py", "test_kill_resume.py",
         "test_journeys.py", "test_ci_gate.py", "test_notebook.py", "test_datasets.py",
         "test_judged_share.py", "test_reproduce.py", "test_app_speed.py",
         "test_command_line.py", "test_explain.py", "test_docid_codes.py",
         "test_measure_registry.py", "test_properties.py", "test_stream.py")
_SHARED = ("module", "class", "package", "session")


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """The names (``module.function``) of the non-function-scoped fixtures of tests/ that
    ``item`` uses."""
    info = getattr(item, "_fixtureinfo", None)
    out = []
    for name in getattr(item, "fixturenames", ()):
        defs = info.name2fixturedefs.get(name) if info else None
        if not defs or defs[-1].scope not in _SHARED:
            continue
        func = defs[-1].func
        where = getattr(func, "__module__", "") or ""
        if where.startswith("tests.") and where != "tests.conftest":
            out.append(f"{where}.{getattr(func, '__name__', name)}")
    return out


def _groups(items: list[pytest.Item]) -> dict[pytest.Item, str]:
    """Each item using shared fixtures -> its group: fixtures used by one test join one
    group (union-find), named by the group's first fixture in sorted order."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    used = {item: _shared_fixtures(item) for item in items}
    for keys in used.values():
        for key in keys[1:]:
            a, b = sorted((root(keys[0]), root(key)))
            parent[b] = a
    return {item: root(keys[0]) for item, keys in used.items() if keys}


def _rank(items: list[pytest.Item]) -> dict[object, int]:
    """Each module's place: those of FIRST in its order, then those with a test marked
    ``slow``, then the rest."""
    rank = {item.path: len(FIRST) + 1 for item in items}
    for item in items:
        if item.path.name in FIRST:
            rank[item.path] = FIRST.index(item.path.name)
        elif item.get_closest_marker("slow"):
            rank[item.path] = len(FIRST)
    return rank


def pytest_configure(config: pytest.Config) -> None:
    """``-n N`` without ``--dist`` means ``--dist load`` to xdist: here ``loadgroup``. (Not an
    ``addopts`` entry: ``-p no:xdist`` would then fail on the unknown option.) xdist picks its
    scheduler at the session's start, after this. A worker parses the command line again,
    without the change: its controller tells it (:func:`pytest_configure_node`)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        if workerinput.get("harness_loadgroup"):
            config.option.loadgroup = True  # what xdist's own hook reads on a worker
        return
    given = any(str(a).startswith("--dist") or a == "-d" for a in config.invocation_params.args)
    if getattr(config.option, "dist", "no") == "load" and not given:
        config.option.dist = "loadgroup"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    node.workerinput["harness_loadgroup"] = node.config.getoption("dist") == "loadgroup"


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config,
                                  items: list[pytest.Item]) -> Generator[None, None, None]:
    # an xdist worker runs with dist "no" and loadgroup set; the controller with dist set
    distributed = (getattr(config.option, "loadgroup", False)
                   or config.getoption("dist", "no") == "loadgroup")
    if distributed:  # before xdist's own hook, which reads the marks
        for item, group in _groups(items).items():
            item.add_marker(pytest.mark.xdist_group(group))
    result = yield
    if distributed:  # after pytest's fixture ordering; a stable sort keeps each module whole
        rank = _rank(items)
        items.sort(key=lambda item: rank[item.path])
    return result
