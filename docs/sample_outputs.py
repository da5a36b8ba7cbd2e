"""The sample outputs quoted in README.md and docs/workflows.md, produced by running their
commands, so that no quoted number goes stale.

A quoted output sits between ``<!-- sample-output: NAME -->`` and ``<!-- /sample-output -->``
(a fenced block, or a Markdown table); NAME is one of :data:`PRODUCERS`, each of which runs
the command the text shows (the default study with tracking off, ``harness compare`` on the
TREC CAsT 2021 runs) and returns the block as the document quotes it. Run
``python docs/sample_outputs.py`` to rewrite the blocks in place, ``--check`` to exit 1 if
any differs (tests/test_sample_outputs.py does the same). Reference data: ``--shared``,
else ``$HARNESS_SHARED_DATA``, else ``../shared/data``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "docs" / "workflows.md"]
BLOCK = re.compile(r"(<!-- sample-output: ([\w-]+) -->\n)(.*?)(<!-- /sample-output -->)", re.S)
WIDTH = "100"  # the terminal width the commands print for
CAST = "trec_cast_2021"
#: The variants of "A real result" (docs/workflows.md), in its order.
REAL_RESULT = ["nDCG@10", "nDCG@10(gain=linear)", "nDCG@10(ties=input)", "nDCG@5", "nDCG",
               "AP@10", "P@10", "RR", "ERR@10"]


def _run(args: list[str], cwd: Path) -> str:
    """stdout of ``python -m harness ARGS`` in ``cwd``, printed for a 100-column terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env |= {"COLUMNS": WIDTH, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1):  # 1: a gate that fails, as the text shows
        raise RuntimeError(f"harness {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return proc.stdout


@cache
def _default_study() -> tuple[str, pd.DataFrame]:
    """The default study (``make run``) with tracking and figures off: its closing summary
    and its summary.csv."""
    with tempfile.TemporaryDirectory() as tmp:
        out = _run(["tracking=off", "tracking.figures=off", f"hydra.run.dir={tmp}/out",
                    f"cache_dir={tmp}/cache"], ROOT)
        return out, pd.read_csv(Path(tmp) / "out" / "summary.csv")


def default_study_summary(shared: Path) -> str:
    """README: the first block of the default study's closing table, random and top_grades
    rows (the job's folder, run ids and commands are an example's)."""
    out, _ = _default_study()
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Study "))
    head = re.sub(r"done in [\d.]+s", "done in …s", "\n".join(lines[start:start + 2]))
    table = lines[start + 3:]
    header = table[:2]
    rows = {line.split()[0]: line for line in table[2:7]}
    return "\n".join([
        "```text", head, "", *header, rows["random"], "  ...", rows["top_grades"], "  ...",
        "Files: runs/hydra/synthetic/2026-11-24_20-05-13_b0c8ee",
        "MLflow: sqlite:///…/runs/mlflow.db, experiment 'synthetic' (id 1)",
        "  job run        87b81e6bc0364aa58bf273f1f69f84a3",
        "  top_grades     0e0ac00c71894c9ca453e2d0ba92cb37",
        "Next:",
        "  harness compare 87b81e6bc0364aa58bf273f1f69f84a3 --baseline random",
        "  harness reproduce 52d345b93e2a488b88179c675b89e771",
        "  make ui    # then open http://127.0.0.1:5000/#/experiments/1/runs/"
        "87b81e6bc0364aa58bf273f1f69f84a3?workflowType=machine_learning",
        "```", ""])


def real_result(shared: Path) -> str:
    """docs/workflows.md: the default study's means with their 95% CI, a row per variant of
    :data:`REAL_RESULT`, the best of each row in bold and its ranker."""
    _, summary = _default_study()
    names = list(dict.fromkeys(summary["ranker"]))
    rows = ["| variant | " + " | ".join(names) + " | winner |",
            "|" + "---|" * (len(names) + 2)]
    for variant in REAL_RESULT:
        part = summary[summary["variant"] == variant].set_index("ranker").loc[names]
        best = part["mean"].max()
        cells = [f"{r['mean']:.4f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                 for _, r in part.iterrows()]
        cells = [f"**{c}**" if m == best else c for c, m in zip(cells, part["mean"])]
        winner = ", ".join(n for n, m in zip(names, part["mean"]) if m == best)
        rows.append(f"| `{variant}` | " + " | ".join(cells) + f" | {winner} |")
    return "\n".join(rows) + "\n"


def cast_readme(shared: Path) -> str:
    """README: two CAsT runs compared on the command line."""
    cast = shared / CAST
    out = _run(["compare", "--qrels", str(cast / "trec-cast-qrels-docs.2021.qrel"),
                str(cast / "org_manual_bm25.run"), str(cast / "org_manual_ance.run"),
                "-m", "trec_eval:ndcg", "-m", "trec_eval:P.5", "--baseline",
                "org_manual_bm25"], ROOT)
    return "```text\n" + "\n".join(out.splitlines()[:3]) + "\n```\n"


def cast_api(shared: Path) -> str:
    """docs/workflows.md: ``print(c)`` of the Python example."""
    import harness

    cast = str(shared / CAST) + "/"
    c = harness.compare(cast + "trec-cast-qrels-docs.2021.qrel",
                        [cast + "org_manual_bm25.run", cast + "org_manual_ance.run"],
                        ["trec_eval:ndcg", "trec_eval:map", "trec_eval:recip_rank",
                         "trec_eval:P.5"], baseline="org_manual_bm25")
    width = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # print(c) fits the terminal, as the commands do
    try:
        text = str(c)
    finally:
        if width is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = width
    return "```text\n" + text.rstrip("\n") + "\n```\n"


def cast_gate(shared: Path) -> str:
    """docs/workflows.md: the gate on files, BM25 against ANCE (exit 1)."""
    out = _run(["compare", "--qrels", "trec-cast-qrels-docs.2021.qrel", "org_manual_bm25.run",
                "org_manual_ance.run", "-m", "trec_eval:ndcg", "--baseline",
                "org_manual_ance", "--margin", "trec_eval:ndcg=0.01", "--gate"],
               shared / CAST)
    return "```text\n" + out + "```\n"


PRODUCERS: dict[str, Callable[[Path], str]] = {
    "default-study-summary": default_study_summary, "real-result": real_result,
    "cast-readme": cast_readme, "cast-api": cast_api, "cast-gate": cast_gate}


def rendered(text: str, shared: Path) -> str:
    """``text`` with every marked block replaced by what its producer prints now."""
    def fill(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in PRODUCERS:
            raise KeyError(f"no producer for sample output {name!r}: one of {list(PRODUCERS)}")
        return match.group(1) + PRODUCERS[name](shared) + match.group(4)

    return BLOCK.sub(fill, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a quoted block differs; write nothing")
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get(
        "HARNESS_SHARED_DATA", ROOT.parent / "shared" / "data")))
    args = parser.parse_args(argv)
    stale = []
    for path in DOCUMENTS:
        text = path.read_text()
        new = rendered(text, args.shared)
        if new != text:
            stale.append(path.name)
            if not args.check:
                path.write_text(new)
    if stale:
        print(("stale: " if args.check else "rewritten: ") + ", ".join(stale))
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
