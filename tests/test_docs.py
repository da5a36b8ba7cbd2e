"""The README stays a newcomer's page and every link of it and of docs/ leads somewhere.

README.md holds what a newcomer needs (at most 400 lines); the details live in docs/*.md.
Every relative link in README.md and docs/*.md must point to a file of the repository, and
a link with an anchor (``docs/measures.md#why-two-tools-disagree-the-convention-diff``,
``#where-results-land``) to a heading of that Markdown file, with GitHub's heading ids.
docs/measures.md's options table has a row for every declared option (its measure table is
generated from the declarations: tests/test_measure_registry.py).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

import harness.paths

PROJECT = Path(harness.paths.PROJECT_ROOT)
README = PROJECT / "README.md"
DOCS = PROJECT / "docs"
MAX_README_LINES = 400

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def documents() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _prose(text: str) -> str:
    """The text without code blocks and inline code (where brackets are not links)."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's id of a heading: its text without Markdown marks, lower case, punctuation
    dropped (hyphens and underscores kept), spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").replace("*", "").lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading id of a Markdown file (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def relative_links(path: Path) -> list[str]:
    return [target for target in _LINK.findall(_prose(path.read_text()))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)]  # http:, mailto:, ...


def test_the_readme_is_short() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move details to docs/"


def test_the_docs_folder_exists_and_the_readme_links_each_of_its_files() -> None:
    docs = sorted(DOCS.glob("*.md"))
    assert docs
    linked = {(README.parent / unquote(t.split("#")[0])).resolve()
              for t in relative_links(README) if t.split("#")[0]}
    assert [p.name for p in docs if p.resolve() not in linked] == []


def test_the_slug_follows_github() -> None:
    assert slug("Evidence (all in `make test`, nothing skipped)") == \
        "evidence-all-in-make-test-nothing-skipped"
    assert slug("Why two tools disagree: the convention diff") == \
        "why-two-tools-disagree-the-convention-diff"
    assert slug("Issue 9's targets, measured 2026-11-23") == "issue-9s-targets-measured-2026-11-23"
    assert slug("Scaling: the three engines from 100k to 110M rows") == \
        "scaling-the-three-engines-from-100k-to-110m-rows"


def test_links_are_found_outside_code_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("See [the docs](docs/a.md#b), [web](https://x.org) and ![f](f.png).\n"
                    "`[not](a-link.md)`\n```text\n[not](either.md)\n```\n## A B\n")
    assert relative_links(page) == ["docs/a.md#b", "f.png"]
    assert anchors(page) == {"a-b"}
    assert "docs/measures.md" in relative_links(README)


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(PROJECT)))
def test_every_relative_link_points_to_an_existing_file_and_heading(path: Path) -> None:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(PROJECT)}")
        elif anchor and dest.suffix != ".md":
            broken.append(f"{target}: an anchor into a file that is not Markdown")
    assert broken == []


def test_the_options_table_lists_every_declared_option() -> None:
    """Every option of a metric definition (harness.metrics.vocabulary.options.OPTIONS) has its row,
    between the table's marker lines; a new option without a row fails here."""
    from harness.metrics.vocabulary.options import OPTIONS

    text = (DOCS / "measures.md").read_text()
    assert text.count("<!-- options:begin -->") == 1 and text.count("<!-- options:end -->") == 1
    table = text.split("<!-- options:begin -->")[1].split("<!-- options:end -->")[0]
    rows = [line for line in table.strip().splitlines()]
    assert rows[0].startswith("| option | values | meaning | matches |")
    assert all(line.startswith("|") for line in rows)
    options = {re.match(r"\| `(\w+)` \|", line).group(1) for line in rows
               if re.match(r"\| `(\w+)` \|", line)}
    assert options >= {"name", "k", "convention", *OPTIONS}


def test_the_your_own_measure_example_runs_as_written() -> None:
    """docs/measures.md's example, executed as the page shows it (it once registered the
    built-in ``hits`` and failed)."""
    import harness

    text = (DOCS / "measures.md").read_text()
    section = text.split("## Your own measure", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    try:
        namespace: dict = {}
        exec(compile(code, "docs/measures.md", "exec"), namespace)
        table = namespace["harness"].evaluate(namespace["run"], namespace["qrels"],
                                              ["relevant_found@2"])
        assert table["RelevantFound@2"].tolist() == [1.0]  # a (label 1) in the top 2
    finally:
        harness.unregister_measure("relevant_found")


# -- numbers quoted from a command's output (issue 41: they went stale) ---------------------


def test_sample_outputs_quote_no_timings() -> None:
    """A run's duration changes from machine to machine: a sample output elides it (``done in
    …s``) instead of quoting a number nothing checks ("done in 2.4s" did)."""
    for path in documents():
        for block in _FENCE.findall(path.read_text()):
            assert not re.search(r"\bdone in \d", block), (path.name, block[:200])


def test_the_default_grids_variant_count_is_the_one_quoted() -> None:
    """The README's "32 metric variants" and its sample output's "x 32 variant(s)" are the
    default config's metric grid, composed as the app composes it."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from harness.app.config import register_configs
    from harness.app.plan import build_metrics

    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(PROJECT / "conf")):
        cfg = compose("config")
    count = len(build_metrics(OmegaConf.to_container(cfg.metric, resolve=True)))
    text = README.read_text()
    quoted = {int(n) for n in re.findall(r"(\d+) metric variants", text)}
    quoted |= {int(n) for n in re.findall(r"x (\d+) variant\(s\) x 400 queries", text)}
    assert quoted == {count}, (quoted, count)
    # docs/workflows.md's default study, as `harness compare` prints it, holds no stale count
    assert not re.search(rf"default study \(\d+ rankers × (?!{count} )\d+ variants",
                         (DOCS / "workflows.md").read_text())
