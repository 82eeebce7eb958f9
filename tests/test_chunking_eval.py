"""The chunking evaluation: span metrics, corpus loading, frontier, and a small real sweep."""

from __future__ import annotations

import csv
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from tessera.chunking.headings import document_headings, wiki_headings
from tessera.chunking.profile import AdaptiveConfig, parse_chunking
from tessera.chunking.tokens import HFTokenCounter
from tessera.config import ChunkingConfig
from tessera.embedding.fake import HashEmbedder
from tessera.errors import EvaluationError
from tessera.evaluation.chunking import frontier
from tessera.evaluation.chunking.cli import table
from tessera.evaluation.chunking.corpus import load_corpus
from tessera.evaluation.chunking.harness import code_points, locate
from tessera.evaluation.chunking.recommended import RECOMMENDED
from tessera.evaluation.chunking.sweep import Embedding, SweepSettings, run_sweep
from tessera.golden.metrics import Span, intact, merge, precision_omega, score
from tessera.offsets import OffsetMap
from tessera.search.query import PRODUCT_FUSION
from tessera.store.db import connect
from tessera.store.embedding_cache import EmbeddingCache
from tessera.types import Block, ParsedDocument

ROOT = Path(__file__).resolve().parent.parent


def test_scores_match_hand_computed_values() -> None:
    refs = [Span("a", 10, 20), Span("a", 40, 50)]
    got = [Span("a", 0, 15), Span("a", 12, 30), Span("b", 0, 100)]
    s = score(got, refs)
    # hit = [10, 20) = 10 chars of 20; retrieved sum = 15 + 18 + 100 (overlap and other corpus count)
    assert s.recall == pytest.approx(0.5)
    assert s.precision == pytest.approx(10 / 133)
    assert s.iou == pytest.approx(10 / (133 + 10))
    assert score([], refs).recall == 0.0


def test_precision_omega_and_intact() -> None:
    chunks = [Span("a", 0, 25), Span("a", 25, 60), Span("a", 60, 90)]
    refs = [Span("a", 10, 20), Span("a", 40, 50)]
    assert precision_omega(chunks, refs) == pytest.approx(20 / 60)
    assert intact(chunks, refs[0]) and not intact(chunks, Span("a", 20, 30))
    assert merge([(5, 9), (0, 3), (3, 4), (8, 12)]) == [(0, 4), (5, 12)]


def test_code_points_and_locate() -> None:
    text = "héllo — wörld ✓ end"
    at = code_points(text.encode())
    b = text.encode().index("wörld".encode())
    assert text[at(b) : at(b) + 5] == "wörld"
    with pytest.raises(EvaluationError):
        at(2)  # inside "é"
    assert locate("ab ab cd", ["ab", "ab", "cd"]) == [(0, 2), (3, 5), (6, 8)]
    with pytest.raises(EvaluationError):
        locate("abc", ["zz"])


def test_frontier_counts_only_points_above_the_peers_curve() -> None:
    peers = [(9.0, 82.0), (6.0, 86.0), (4.0, 91.0)]
    assert frontier.pareto([*peers, (5.0, 80.0)]) == sorted(peers)
    assert frontier.frontier_recall(peers, 7.5) == pytest.approx(84.0)
    assert frontier.frontier_recall(peers, 12.0) == 82.0  # right of the peers: the best-IoU peer's recall
    assert frontier.frontier_recall(peers, 2.0) == 91.0
    rows = [
        {"name": "along", "m": {"iou": 7.5, "recall": 84.0}},  # on the curve: no gain
        {"name": "above", "m": {"iou": 8.0, "recall": 88.0}},
    ]
    peer_rows = [{"m": {"iou": x, "recall": y}} for x, y in peers]
    best = frontier.recommend(rows, peer_rows, ["m"])
    assert best is not None and best["name"] == "above" and best["beats_frontier"]
    assert frontier.margins(rows[0], peer_rows, ["m"])["m"] == pytest.approx(0.0)
    assert frontier.targets_met(rows[1], {"m": {"recall": 88.0, "iou": 8.0}}) == {"m": True}


def test_wiki_headings_become_sections() -> None:
    text = " = Alpha = \n intro .\n = = Beta = = \n body .\n== Gamma ==\nx = y =\n"
    heads = wiki_headings(text)
    assert [(h.level, h.title) for h in heads] == [(1, "Alpha"), (2, "Beta"), (2, "Gamma")]
    parsed = ParsedDocument(
        "d",
        text,
        (Block("heading", 0, 3, level=1, title="Real"),),
        OffsetMap(len(text), ((0, 0, 0),)),
        "p",
        "1",
    )
    assert [h.title for h in document_headings(parsed)] == ["Real"]  # the parser's headings win


def _corpus(root: Path, seed: int = 7) -> Path:
    rnd = random.Random(seed)
    words = [
        "river",
        "stone",
        "forest",
        "lantern",
        "copper",
        "violet",
        "harbor",
        "engine",
        "meadow",
        "signal",
        "garden",
        "ember",
    ]
    rows = []
    (root / "corpora").mkdir(parents=True)
    for name in ("alpha", "beta"):
        paras = []
        for p in range(12):
            sent = [
                " ".join(rnd.choice(words) for _ in range(9)).capitalize() + f" {name}{p}s{s}."
                for s in range(4)
            ]
            paras.append(" ".join(sent))
        text = f" = {name.title()} = \n\n" + "\n\n".join(paras) + "\n"
        (root / "corpora" / f"{name}.md").write_text(text, encoding="utf-8")
        for p in (1, 5, 9):
            content = paras[p].split(". ")[1] + "."
            start = text.index(content)
            ref = {"content": content, "start_index": start, "end_index": start + len(content)}
            rows.append(
                {"question": f"{content} {name}{p}", "references": json.dumps([ref]), "corpus_id": name}
            )
    write_questions(root / "questions_df.csv", rows)
    return root


def write_questions(path: Path, rows: list[dict[str, str]]) -> None:
    """A questions file in the Chroma format: ``question,references(JSON),corpus_id``."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, ["question", "references", "corpus_id"])
        w.writeheader()
        w.writerows(rows)


def test_corpus_references_are_validated(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    corpus = load_corpus(root)
    assert len(corpus.questions) == 6 and set(corpus.texts) == {"alpha", "beta"}
    with (root / "questions_df.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    ref = json.loads(rows[0]["references"])[0]
    rows[0]["references"] = json.dumps([{**ref, "start_index": ref["start_index"] + 1}])
    write_questions(root / "questions_df.csv", rows)
    with pytest.raises(EvaluationError, match="does not match"):
        load_corpus(root)
    with pytest.raises(EvaluationError, match="does not exist"):
        load_corpus(tmp_path / "missing")


def test_sweep_reports_every_profile_and_reuses_the_cache(
    tmp_path: Path, counter: HFTokenCounter, model_path: Path
) -> None:
    corpus = load_corpus(_corpus(tmp_path / "data"))
    embedder = HashEmbedder(dimension=128)
    embedding = Embedding(
        embedder, EmbeddingCache(connect(str(tmp_path / "cache")), "eval", embedder.identity)
    )
    settings = SweepSettings(
        strategies=("token", "recursive", "structural"), sizes=(32, 64), overlaps=(0, 50), peers=(), k=3,
        fusion_study=True,
        extra=(("adaptive-32/64@40", ChunkingConfig(strategy="adaptive", target_tokens=32,
                                                    adaptive=AdaptiveConfig(40, 64, 0))),),
    )  # fmt: skip
    report = run_sweep(corpus, embedding, counter, model_path, settings)
    rows = report["rows"]
    assert [r["name"] for r in rows] == [n for n, _ in settings.profiles()]
    assert len({r["config_hash"] for r in rows}) == len(rows)  # each profile versioned apart
    for r in rows:
        for mode in ("dense", "hybrid"):
            assert 0 <= r[mode]["iou"] <= r[mode]["recall"] <= 100
            assert 0 <= r[mode]["token_iou"] <= r[mode]["token_recall"] <= 100
            assert r[mode]["retrieved_tokens"] <= 3 * r["max_tokens_seen"]
            per = r["per_corpus"]
            assert set(per) == {"alpha", "beta"} and sum(per[c][mode]["n"] for c in per) == 6
    token_rows = {r["name"]: r for r in rows if r["strategy"] == "token"}
    assert token_rows["token-32-50"]["indexed_tokens"] > token_rows["token-32-0"]["indexed_tokens"]
    assert report["recommended"]["name"] in {r["name"] for r in rows}
    sel = report["selection"]
    assert [f["held_out"] for f in sel["folds"]] == ["alpha", "beta"]
    assert sel["recommended"] == report["recommended"]["name"]
    assert "bootstrap" not in sel  # it compares with peers, and this run has none
    assert not any("_questions" in r for r in [*rows, *report["ablation"]])  # kept out of the report
    # the ablation: the recommended profile again, with sentence vectors on (probes, their cost)
    [ablation] = report["ablation"]
    assert ablation["name"] == f"{report['recommended']['name']} sentence_vectors=True"
    assert ablation["sentence_probes"] > 0 and ablation["config"]["sentence_vectors"] is True
    assert ablation["cost"]["embedded_tokens"] > ablation["indexed_tokens"]
    fusion = report["fusion_study"]  # the product's fusion against its variants, on the same chunks
    assert set(fusion["variants"]) == {
        "depth-k", "bm25-on-text", "lancedb-hybrid", "rrf-60-equal", "rrf-20-equal", "rrf-40-bm25x1.25",
        "rrf-20-bm25x1.5",
    }  # fmt: skip
    assert fusion["variants"]["depth-k"]["fusion"]["depth"] == settings.k
    assert fusion["variants"]["depth-k"]["fusion"]["lexical_weight"] == PRODUCT_FUSION.lexical_weight
    assert (
        fusion["variants"]["rrf-60-equal"]["fusion"] | {"rrf_k": 60, "lexical_weight": 1.0}
        == (fusion["variants"]["rrf-60-equal"]["fusion"])
    )
    md = table(report)  # report.md lists the fusion study and its held-out choice
    assert "| **product** |" in md and "| rrf-60-equal |" in md and "Fusion chosen on the other corpora" in md
    chosen = fusion["selection"]  # leave-one-corpus-out among the product and the variants
    assert [f["held_out"] for f in chosen["folds"]] == ["alpha", "beta"]
    for f in chosen["folds"]:
        scores = fusion["product"] if f["choice"] == "product" else fusion["variants"][f["choice"]]
        assert f["recall"] == scores["per_corpus"][f["held_out"]]["recall"]
        assert f["product_recall"] == fusion["product"]["per_corpus"][f["held_out"]]["recall"]
    assert fusion["product"]["pooled"] == next(r for r in rows if r["name"] == sel["recommended"])["hybrid"]
    again = run_sweep(corpus, embedding, counter, model_path, replace(settings, fusion_study=False))
    assert all(r["embedded_texts"] == 0 for r in again["rows"])  # every text came from the cache
    assert [r["dense"]["recall"] for r in again["rows"]] == [r["dense"]["recall"] for r in rows]


def test_heatmaps_are_png(tmp_path: Path) -> None:
    from tessera.evaluation.chunking.plots import heatmaps

    rows = [
        {"strategy": s, "size": size, "overlap_pct": o, "dense": {"recall": size / 3 + o, "iou": 9 - o / 10}}
        for s in ("token", "recursive")
        for size in (64, 128)
        for o in (0, 50)
    ]
    paths = heatmaps(rows, tmp_path, ["dense"])
    assert sorted(p.name for p in paths) == ["iou_dense.png", "recall_dense.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


def test_heatmap_panels_share_one_scale_and_box_the_recommendation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.image
    from matplotlib.axes import Axes

    from tessera.evaluation.chunking.plots import heatmaps

    rows = [
        {"name": f"{s}-{size}-{o}", "strategy": s, "size": size, "overlap_pct": o,
         "dense": {"recall": (10 if s == "token" else 80) + size / 64 + o / 50, "iou": 5.0}}
        for s in ("token", "recursive") for size in (64, 128) for o in (0, 50)
    ]  # fmt: skip
    peers = [{"name": "chonkie-token-250-125", "dense": {"recall": 95.0, "iou": 4.0}}]
    scales: list[tuple[float, float]] = []
    real = Axes.imshow

    def spy(self: Axes, *a: object, **kw: object) -> object:
        scales.append((float(kw["vmin"]), float(kw["vmax"])))  # type: ignore[arg-type]
        return real(self, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Axes, "imshow", spy)
    boxed = heatmaps(rows, tmp_path / "a", ["dense"], recommended="recursive-128-50", peers=peers)
    recall = [s for s, p in zip(scales, [0, 0, 1, 1], strict=True) if p == 0]
    assert recall == [(11.0, 95.0), (11.0, 95.0)]  # both panels, the peers' range included

    def red(path: Path) -> bool:
        px = matplotlib.image.imread(path)
        return bool(((px[..., 0] > 0.9) & (px[..., 1] < 0.15) & (px[..., 2] < 0.15)).any())

    assert red(boxed[0])
    assert not red(heatmaps(rows, tmp_path / "b", ["dense"])[0])  # viridis has no red: the box is it


def test_recommended_profile_is_the_default() -> None:
    """The profile recorded in code is the configuration default, and a YAML without a
    ``chunking`` section gets it; the committed report (when present) recommends the same."""
    assert parse_chunking(RECOMMENDED).as_dict() == ChunkingConfig().as_dict() == RECOMMENDED
    assert parse_chunking({}).as_dict() == RECOMMENDED
    report = ROOT / "docs" / "eval" / "chunking" / "report.json"
    if not report.exists():
        pytest.skip("no committed chunking report")
    data = json.loads(report.read_text("utf-8"))
    assert parse_chunking(data["recommended"]["config"]).as_dict() == RECOMMENDED
    assert data["selection"]["recommended"] == data["recommended"]["name"]  # the out-of-sample choice


def test_the_committed_report_md_is_its_report_json() -> None:
    """``docs/eval/chunking/report.md`` is what ``table`` writes from the ``report.json`` beside
    it, so the two cannot tell different stories (a hand-edited or stale report.md fails)."""
    folder = ROOT / "docs" / "eval" / "chunking"
    if not (folder / "report.json").exists():
        pytest.skip("no committed chunking report")
    data = json.loads((folder / "report.json").read_text("utf-8"))
    assert (folder / "report.md").read_text("utf-8") == table(data) + "\n"
    for name in data["plots"] + data["heatmaps"]:
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_one_profile_on_new_corpora_is_scored_without_choosing_again(
    tmp_path: Path, counter: HFTokenCounter, model_path: Path
) -> None:
    """The README's confirmation run: the default alone, on one corpus or several, is every
    fold's choice, so the held-out table scores it on each corpus as it is."""
    root = _corpus(tmp_path / "data")
    embedder = HashEmbedder(dimension=64)
    cache = EmbeddingCache(connect(str(tmp_path / "cache")), "eval", embedder.identity)
    embedding = Embedding(embedder, cache)
    settings = SweepSettings(strategies=("structural",), sizes=(224,), overlaps=(0,), extra=(), peers=(),
                             sentence_ablation=False, fusion_study=False)  # fmt: skip
    for ids in (("alpha", "beta"), ("alpha",)):
        corpus = load_corpus(root)
        corpus = replace(corpus, files={c: corpus.files[c] for c in ids}, raw={c: corpus.raw[c] for c in ids},
                         texts={c: corpus.texts[c] for c in ids},
                         questions=tuple(q for q in corpus.questions if q.corpus in ids))  # fmt: skip
        report = run_sweep(corpus, embedding, counter, model_path, settings)
        [row] = report["rows"]
        assert row["name"] == "structural-224-0" and parse_chunking(row["config"]).as_dict() == RECOMMENDED
        sel = report["selection"]
        assert [f["held_out"] for f in sel["folds"]] == list(ids)
        assert all(f["chosen"] == "structural-224-0" for f in sel["folds"])
        for f in sel["folds"]:
            assert f["scores"]["hybrid"] == row["per_corpus"][f["held_out"]]["hybrid"]
