"""pytest plugin: under CI (``CI`` set), a skipped test fails the session.

The project's rule is that no test is skipped in CI; this makes a skip visible as a failure
instead of a line in the summary.
"""

from __future__ import annotations

import os

import pytest

_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skipped and os.environ.get("CI") and exitstatus == 0:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"CI: {len(_skipped)} test(s) skipped, which CI does not "
                                f"allow: {', '.join(_skipped[:5])}", red=True)
        session.exitstatus = 1
