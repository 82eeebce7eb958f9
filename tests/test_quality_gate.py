"""The quality gate: golden-question recall@k of a new version against the published one."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tessera.errors import QualityGateBlocked

from .conftest import Workspace

WORDS = [
    "amber",
    "basalt",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "jasper",
    "kelp",
    "lagoon",
    "meadow",
    "nickel",
    "onyx",
    "prairie",
    "quartz",
    "reef",
    "sierra",
    "tundra",
    "umber",
    "valley",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
]


def _corpus(ws: Workspace, seed: int = 3) -> dict[str, str]:
    rnd = random.Random(seed)
    files = {}
    for d in range(6):
        paras = []
        for p in range(6):
            sentences = [
                " ".join(rnd.choice(WORDS) for _ in range(10)).capitalize() + f" topic{d}x{p}y{s}."
                for s in range(3)
            ]
            paras.append(" ".join(sentences))
        files[f"doc{d}.md"] = f"# Document {d}\n\n" + "\n\n".join(paras) + "\n"
    ws.tenant("acme", files)
    return files


def _golden(ws: Workspace, files: dict[str, str]) -> Path:
    from .test_chunking_eval import write_questions

    path = ws.root / "golden.csv"
    rows = []
    for doc, text in sorted(files.items()):
        para = text.split("\n\n")[2]
        start = text.index(para)
        ref = {"content": para, "start_index": start, "end_index": start + len(para)}
        rows.append({"question": para, "references": json.dumps([ref]), "corpus_id": doc})
    write_questions(path, rows)
    ws.tenants["acme"]["quality"] = {"questions": str(path), "k": 2, "max_recall_drop": 0.05}
    return path


def test_gate_blocks_a_worse_configuration_and_passes_a_good_one(ws: Workspace) -> None:
    files = _corpus(ws)
    _golden(ws, files)
    ws.run("acme", "run-1")
    first = json.loads((ws.context("acme", "run-1").workspace / "quality_gate.json").read_text())
    assert first["status"] == "passed" and first["published_recall"] is None
    assert first["candidate_recall"] == pytest.approx(100.0)
    version, rows = ws.table("acme").version, ws.rows("acme")

    ws.chunking = {"strategy": "token", "max_tokens": 16, "target_tokens": 8, "overlap_tokens": 0}
    with pytest.raises(QualityGateBlocked, match="quality gate") as err:
        ws.run("acme", "run-2")
    result = err.value.result
    assert result["status"] == "blocked"
    assert isinstance(result["candidate_recall"], float) and isinstance(result["published_recall"], float)
    assert result["published_recall"] - result["candidate_recall"] > 5.0
    assert ws.table("acme").version == version and ws.rows("acme") == rows  # nothing published

    ws.chunking = {"max_tokens": 256, "target_tokens": 100, "overlap_tokens": 0}
    summary = ws.run("acme", "run-3")
    assert summary["publish"]["committed"]
    gate = json.loads((ws.context("acme", "run-3").workspace / "quality_gate.json").read_text())
    assert gate["status"] == "passed" and gate["published_recall"] is not None
    assert gate["published_recall"] - gate["candidate_recall"] <= 5.0


def test_a_stale_golden_set_blocks(ws: Workspace) -> None:
    files = _corpus(ws)
    _golden(ws, files)
    ws.run("acme", "run-1")
    src = ws.root / "corpus" / "acme" / "doc2.md"
    src.write_text("# Document 2\n\nRewritten from scratch.\n", encoding="utf-8")
    with pytest.raises(QualityGateBlocked, match="golden set"):
        ws.run("acme", "run-2")


def test_without_golden_questions_the_gate_is_skipped(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Skipped without reading the staged chunks (all of them at once: 1.2 GB at 400,000);
    with golden questions it reads them."""
    import tessera.pipeline.publish as publish

    files = _corpus(ws)
    reads: list[int] = []
    real = publish.staged_chunks

    def counting(rc: object) -> object:
        reads.append(1)
        return real(rc)  # type: ignore[arg-type]

    monkeypatch.setattr(publish, "staged_chunks", counting)
    ws.run("acme", "run-1")
    gate = json.loads((ws.context("acme", "run-1").workspace / "quality_gate.json").read_text())
    assert gate["status"] == "skipped" and reads == []
    _golden(ws, files)
    (ws.root / "corpus" / "acme" / "doc1.md").write_text(files["doc1.md"] + "\nMore.\n", encoding="utf-8")
    ws.run("acme", "run-2")
    gate = json.loads((ws.context("acme", "run-2").workspace / "quality_gate.json").read_text())
    assert gate["status"] == "passed" and reads == [1]


@pytest.mark.scenario("D2")
def test_dagster_blocking_check_stops_the_publish(ws: Workspace) -> None:
    from dagster import DagsterInstance, materialize

    from assets import INDEXING_ASSETS, INDEXING_CHECKS

    from .test_dagster import _resources

    files = _corpus(ws)
    _golden(ws, files)
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])
    everything = [*INDEXING_ASSETS, *INDEXING_CHECKS]
    first = materialize(
        everything, partition_key="acme", instance=instance, resources=_resources(str(cfg.path))
    )
    assert first.success
    version = ws.table("acme").version
    ws.chunking = {"strategy": "token", "max_tokens": 16, "target_tokens": 8, "overlap_tokens": 0}
    ws.config()  # rewrites the same tessera.yaml
    second = materialize(
        everything,
        partition_key="acme",
        instance=instance,
        resources=_resources(str(cfg.path)),
        raise_on_error=False,
    )
    assert not second.success
    checks = {c.check_name: c for c in second.get_asset_check_evaluations()}
    assert checks["quality_gate"].passed is False
    assert checks["quality_gate"].metadata["status"].value == "blocked"
    assert not second.asset_materializations_for_node("published_index")
    assert ws.table("acme").version == version


def test_chunking_evaluation_asset(ws: Workspace, tmp_path: Path) -> None:
    from dagster import materialize

    from assets import EVALUATION_ASSETS

    from .test_chunking_eval import _corpus as eval_corpus
    from .test_dagster import _resources

    _corpus(ws)
    cfg = ws.config()
    data = eval_corpus(tmp_path / "data")
    run_config = {
        "ops": {
            "chunking_evaluation": {
                "config": {"corpus": str(data), "out": str(tmp_path / "out"), "sizes": []}
            }
        }
    }
    result = materialize(EVALUATION_ASSETS, resources=_resources(str(cfg.path)), run_config=run_config)
    meta = result.asset_materializations_for_node("chunking_evaluation")[0].metadata
    assert 0 <= meta["dense_iou"].value <= meta["dense_recall"].value <= 100
    assert meta["profiles"].value == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["rows"][0]["name"] == "configured"


def test_cutover_to_a_worse_model_is_refused_by_the_gate(ws: Workspace) -> None:
    from tessera.embedding.fake import HashEmbedder
    from tessera.store.active import ActivePointer

    files = _corpus(ws)
    _golden(ws, files)
    ws.tenants["acme"]["quality"]["mode"] = "dense"
    old, worse, same = (
        HashEmbedder(64, version="1"),
        HashEmbedder(2, version="tiny"),
        HashEmbedder(64, version="2"),
    )
    assert ws.run("acme", "r1", embedder=old)["cutover"]["moved"]

    blind = ws.run("acme", "r2", embedder=worse)  # no way to query the active model: no cutover
    assert not blind["cutover"]["moved"] and "embedding.previous" in blind["cutover"]["reason"]
    refused = ws.run("acme", "r3", embedder=worse, serving=(old,))
    gate = refused["cutover"]["quality_gate"]
    assert not refused["cutover"]["moved"] and refused["cutover"]["reason"].startswith("quality gate")
    assert gate["status"] == "blocked" and gate["published_recall"] - gate["candidate_recall"] > 5.0
    db = ws.context("acme").db
    assert ActivePointer(db, "acme").get().model_key == old.identity.key  # type: ignore[union-attr]

    accepted = ws.run("acme", "r4", embedder=same, serving=(old,))  # as good: it cuts over
    assert accepted["cutover"]["moved"] and accepted["cutover"]["active"] == same.identity.key
