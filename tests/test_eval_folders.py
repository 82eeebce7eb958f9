"""Scores pooled within each corpus folder: weighted by questions, consistent with the pooled
scores of the sweep, shown in report.md only when there is more than one folder."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import pytest

from tessera.embedding.fake import HashEmbedder
from tessera.errors import EvaluationError
from tessera.evaluation.chunking.cli import evaluate_folder, evaluate_folders, table
from tessera.evaluation.chunking.folders import by_folder, folder_table, pooled_in
from tessera.evaluation.chunking.sweep import SweepSettings

from .test_chunking_eval import _corpus, write_questions


def _row(name: str, per: dict[str, tuple[int, float, float]]) -> dict[str, Any]:
    scores = {c: {"n": n, "recall": r, "iou": i, "token_recall": r, "token_iou": i}
              for c, (n, r, i) in per.items()}  # fmt: skip
    return {"name": name, "per_corpus": {c: {"dense": s, "hybrid": s} for c, s in scores.items()}}


def test_each_question_weighs_the_same_not_each_corpus() -> None:
    row = _row("p", {"a": (1, 100.0, 10.0), "b": (3, 50.0, 2.0), "c": (5, 0.0, 0.0)})
    got = pooled_in(row, ["a", "b"], "hybrid")
    assert got["recall"] == 62.5 and got["iou"] == 4.0 and got["n"] == 4  # not the corpus mean 75 / 6
    assert pooled_in(row, ["c"], "dense")["recall"] == 0.0  # another folder's corpora do not leak in
    other = _row("q", {"a": (1, 0.0, 0.0), "b": (3, 100.0, 5.0)})
    pooled = by_folder([row, other], {"f": ["a", "b"]}, ["dense"])
    assert pooled["f"]["q"]["dense"]["recall"] == 75.0 and set(pooled["f"]) == {"p", "q"}


def test_a_folder_without_scores_or_questions_is_an_error_not_a_zero() -> None:
    row = _row("p", {"a": (2, 80.0, 8.0), "empty": (0, 0.0, 0.0)})
    with pytest.raises(EvaluationError, match="p: no scores for corpora \\['z'\\]"):
        pooled_in(row, ["a", "z"], "hybrid")
    with pytest.raises(EvaluationError, match="no scores"):
        pooled_in(row, [], "hybrid")
    with pytest.raises(EvaluationError, match="have no questions"):
        pooled_in(row, ["empty"], "hybrid")


def _split(tmp_path: Path) -> tuple[Path, Path]:
    """The two corpora of the sweep test's fixture, one per folder."""
    both = _corpus(tmp_path / "both")
    with (both / "questions_df.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for name in ("alpha", "beta"):
        folder = tmp_path / f"folder_{name}"
        (folder / "corpora").mkdir(parents=True)
        shutil.copy(both / "corpora" / f"{name}.md", folder / "corpora" / f"{name}.md")
        write_questions(folder / "questions_df.csv", [r for r in rows if r["corpus_id"] == name])
        out.append(folder)
    return out[0], out[1]


def test_two_folders_report_each_pooled_apart(tmp_path: Path, model_path: Path) -> None:
    first, second = _split(tmp_path)
    settings = SweepSettings(strategies=("structural", "token"), sizes=(32,), overlaps=(0,), peers=(), k=3,
                             extra=(), sentence_ablation=False, fusion_study=False)  # fmt: skip
    embedder, cache = HashEmbedder(dimension=64), tmp_path / "cache"
    report = evaluate_folders([first, second], tmp_path / "out", settings, embedder, model_path, cache)
    assert report["folders"] == {str(first): ["alpha"], str(second): ["beta"]}
    for row in report["rows"]:  # a folder of one corpus pools to that corpus's own scores
        for folder, corpus in ((first, "alpha"), (second, "beta")):
            mine = report["pooled_by_folder"][str(folder)][row["name"]]["hybrid"]
            assert mine["recall"] == row["per_corpus"][corpus]["hybrid"]["recall"]
            assert mine["iou"] == row["per_corpus"][corpus]["hybrid"]["iou"]
        # all folders together give the sweep's pooled scores (each side is rounded to 0.01)
        everything = pooled_in(row, ["alpha", "beta"], "dense")
        assert everything["recall"] == pytest.approx(row["dense"]["recall"], abs=0.0101)
        assert everything["iou"] == pytest.approx(row["dense"]["iou"], abs=0.0101)
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert md == table(report) + "\n" and "Pooled within each folder:" in md
    rec = report["recommended"]["name"]
    assert f"| {first} (1, 3) | **{rec}** |" in md and f"| {second} (1, 3) | **{rec}** |" in md
    one = evaluate_folder(first, tmp_path / "one", settings, embedder, model_path, cache)
    assert folder_table(one) == "" and "Pooled within each folder" not in table(one)
    assert folder_table({"modes": ["dense"]}) == ""  # a report written before folders were recorded
