"""The MLflow run descriptions (``mlflow.note.content``) as MLflow's run page renders them:
Markdown tables, read back with markdown-it-py's CommonMark + GFM-table parser (the rules
MLflow's renderer follows for tables), not with the code that wrote them."""

from __future__ import annotations

import pandas as pd
from markdown_it import MarkdownIt

from harness.app.notes import NOTE_LIMIT, ranker_description, study_description
from harness.metrics import parse_metric


def _tables(text: str) -> list[list[list[str]]]:
    """Every table of ``text`` as rows of cell texts (header row first)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for i, tok in enumerate(tokens):
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type in ("th_open", "td_open"):
            inline = tokens[i + 1]
            assert row is not None
            row.append(inline.content if inline.type == "inline" else "")
        elif tok.type == "tr_close":
            assert row is not None
            tables[-1].append(row)
    return tables


def _summary(means: dict[str, float], n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"mean": list(means.values()), "ci_low": [v - 0.01 for v in means.values()],
                         "ci_high": [v + 0.01 for v in means.values()],
                         "n_queries": [n] * len(means)}, index=list(means))


METRICS = [parse_metric(t) for t in ("ndcg@10", "ndcg@10(ties=input)", "P@10")]


def test_the_job_description_is_a_table_with_the_result_first() -> None:
    names = [m.display_name for m in METRICS]
    summaries = {"a|b": _summary(dict(zip(names, [0.5, 0.7, 0.2]))),
                 "oracle": _summary(dict(zip(names, [0.9, 0.7, 0.1])))}
    note = study_description(summaries, METRICS, study="s", dataset="d", title="ranker=x")
    # the first line is all MLflow's collapsed description box shows sharply: the result
    assert note.splitlines()[0] == ("**Best on nDCG@10: oracle 0.9000** · the best means of the "
                                    "3 variants: a\\|b 2, oracle 2")
    (table,) = _tables(note)
    header, *rows = table
    # three columns: the escaped pipe in the ranker's name stays inside its cell
    assert [h.replace("&emsp;", "") for h in header] == ["variant", "a|b", "oracle"]
    assert rows == [["`nDCG@10`", "0.5000", "**0.9000**"],
                    ["`nDCG@10(ties=input)`", "**0.7000**", "**0.7000**"],  # a tie: both
                    ["`P@10`", "**0.2000**", "0.1000"]]
    html = MarkdownIt("commonmark").enable("table").render(note)
    # a number column is right-aligned; an em space keeps the headers apart
    assert '<th style="text-align:right">a|b\u2003</th>' in html


def test_the_ranker_description_leads_with_its_headline_mean() -> None:
    names = [m.display_name for m in METRICS]
    note = ranker_description("oracle", _summary(dict(zip(names, [0.9, 0.7, 0.1]))), METRICS,
                              study="s", dataset="d")
    assert note.splitlines()[0] == "**oracle: nDCG@10 0.9000 [0.890, 0.910]** over 40 queries"
    (table,) = _tables(note)
    assert table[1] == ["`nDCG@10`", "0.9000", "[0.8900, 0.9100]", "40"]
    assert len(table) == 1 + len(METRICS)


def test_a_long_description_is_cut_at_a_row_and_says_so() -> None:
    """MLflow keeps 8,000 characters of a tag: 48 variants x 20 rankers would lose the end
    of the table (and the defaults line) silently."""
    metrics = [parse_metric(f"ndcg@{k}(gain={g},ties={t})") for k in range(1, 25)
               for g in ("exp2", "linear") for t in ("average",)]
    names = [m.display_name for m in metrics]
    summaries = {f"ranker_{i:02d}": _summary({n: 0.5 + i / 100 for n in names})
                 for i in range(20)}
    note = study_description(summaries, metrics, study="s", dataset="d", title="")
    assert len(note) <= NOTE_LIMIT
    (table,) = _tables(note)
    shown = len(table) - 2  # less the header and the "more rows" row
    assert 0 < shown < len(metrics)
    assert table[-1][0] == f"… {len(metrics) - shown} more rows: summary.csv"
    assert note.rstrip().splitlines()[-1].startswith("A variant's name lists only")
