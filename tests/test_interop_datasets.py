"""``dataset=ir_datasets`` (issue 39): qrels read through ir_datasets from its cache, offline.
The test registers a dataset of the shared CAsT 2021 qrels with ir_datasets' own local-file
classes (nothing is downloaded), and one whose qrels are neither cached nor reachable."""

from __future__ import annotations

import uuid
from pathlib import Path

import ir_datasets
import pandas as pd
import pytest
from ir_datasets.formats import TrecQrels
from ir_datasets.util import Download, LocalDownload, RequestsDownload

from harness.data.trec import read_qrels
from harness.datasets import load_dataset
from harness.errors import InputError
from harness.interop.ir_datasets_qrels import read_ir_dataset


def _register(qrels: object) -> str:
    """A new id in ir_datasets' registry (the registry refuses a name twice)."""
    dataset_id = f"harness-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(dataset_id, ir_datasets.Dataset(TrecQrels(qrels, {})))
    return dataset_id


@pytest.fixture(scope="module")
def cast(shared_data: Path) -> dict[str, Path]:
    folder = shared_data / "trec_cast_2021"
    return {"qrels": folder / "trec-cast-qrels-docs.2021.qrel",
            "run": folder / "org_manual_bm25.run",
            "id": _register(LocalDownload(folder / "trec-cast-qrels-docs.2021.qrel",
                                          mkdir=False))}


def test_qrels_read_through_ir_datasets_are_the_qrels_file(cast: dict[str, Path]) -> None:
    got = read_ir_dataset(str(cast["id"]))
    pd.testing.assert_frame_equal(got, read_qrels(cast["qrels"]), check_exact=True)


def test_the_dataset_kind_is_the_trec_kind_with_qrels_from_ir_datasets(
        cast: dict[str, Path]) -> None:
    ours = load_dataset("ir_datasets", name="cast", id=str(cast["id"]),
                        run_path=str(cast["run"]))
    trec = load_dataset("trec", name="cast", qrels_path=str(cast["qrels"]),
                        run_path=str(cast["run"]))
    pd.testing.assert_frame_equal(ours.docs, trec.docs, check_exact=True)
    pd.testing.assert_frame_equal(ours.qrels, trec.qrels, check_exact=True)
    assert ours.kind == "ir_datasets" and ours.digest == trec.digest
    assert ours.source == f"ir_datasets:{cast['id']};{cast['run']}"


def test_qrels_neither_cached_nor_reachable_say_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    # port 9 (discard) on this machine: nothing listens, the connection is refused at once
    unreachable = Download([RequestsDownload("http://127.0.0.1:9/qrels.txt", tries=1)],
                           cache_path=str(tmp_path / "home" / "qrels.txt"))
    dataset_id = _register(unreachable)
    with pytest.raises(InputError) as info:
        read_ir_dataset(dataset_id)
    message = str(info.value)
    assert "\n" not in message and dataset_id in message
    assert str(tmp_path / "home") in message and "IR_DATASETS_HOME" in message
    assert info.value.key == "dataset.id"


def test_an_unknown_id_is_named() -> None:
    with pytest.raises(InputError, match="ir_datasets knows no dataset 'no-such/set'"):
        read_ir_dataset("no-such/set")


def test_a_study_reads_the_dataset_from_a_yaml_of_the_users_config_folder(
        cast: dict[str, Path], tmp_path: Path) -> None:
    """docs/interop.md's YAML, in a config folder of the user's (Hydra's search path): the
    study's per-query values are those of the kind ``trec`` on the same files."""
    from hydra import compose, initialize_config_dir

    import harness
    import harness.paths
    from harness.app.config import register_configs
    from harness.app.study import run_study

    (tmp_path / "conf" / "dataset").mkdir(parents=True)
    (tmp_path / "conf" / "dataset" / "cast_ir.yaml").write_text(
        "defaults:\n  - /schema/dataset/ir_datasets@_here_\n  - _self_\n"
        f"name: cast_ir\nid: {cast['id']}\nrun_path: {cast['run']}\n")
    register_configs()
    conf = Path(harness.paths.PROJECT_ROOT) / "conf"
    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        cfg = compose("config", overrides=[
            f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "dataset=cast_ir",
            "ranker=feature", "metric=ndcg10", "tracking=off", "tracking.figures=off",
            "check.sklearn=off", f"cache_dir={tmp_path / 'cache'}"])
    result = run_study(cfg, tmp_path / "job")
    assert result.dataset.kind == "ir_datasets"
    (table,) = [r.per_query for r in result.rankers.values()]
    run = pd.read_csv(cast["run"], sep=" ", header=None, names=["qid", "q0", "docid", "rank",
                                                                "score", "tag"], dtype=str)
    run["score"] = run["score"].astype(float)
    qrels = read_qrels(cast["qrels"])
    expected = harness.evaluate(run[run["qid"].isin(set(qrels["qid"]))], qrels, ["nDCG@10"])
    assert table["nDCG@10"].to_dict() == expected["nDCG@10"].to_dict()
