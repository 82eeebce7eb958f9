"""`make run`'s driver: a tenant that changed runs the Dagster job; when every tenant is up to
date with its source, the job is skipped without importing Dagster or torch, and the sample
search still answers (its query vector remembered per model)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pipelines.main as make_run
from resources.config import BUNDLED_CONFIG

ROOT = Path(__file__).resolve().parents[1]
DOCS = {"runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n"}


def _args(ws: Any, *more: str) -> list[str]:
    return ["--config", str(ws.root / "tessera.yaml"), "--fake-embedder", "--query", "pager tool", *more]


def _subprocess_main(ws: Any, *more: str) -> str:
    """main() in a fresh interpreter; fails if it imported Dagster or torch."""
    code = (
        "import sys, pipelines.main as m\n"
        f"rc = m.main({_args(ws, *more)!r})\n"
        "heavy = sorted(n for n in ('dagster', 'torch', 'sentence_transformers') if n in sys.modules)\n"
        "print('IMPORTED', heavy)\n"
        "sys.exit(rc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(ws.root / "dagster")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ws.root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture
def first(ws: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Any:
    monkeypatch.setenv("DAGSTER_HOME", str(ws.root / "dagster"))
    ws.tenant("acme", DOCS)
    ws.config()
    assert make_run.main(_args(ws)) == 0
    out = capsys.readouterr().out
    assert "acme: indexing through Dagster" in out and "acme publish: version" in out
    assert "runbook.md" in out  # the sample search
    return ws


def test_an_up_to_date_corpus_skips_the_job_without_dagster_or_torch(first: Any) -> None:
    out = _subprocess_main(first)
    assert "nothing to run" in out and "indexing through Dagster" not in out
    assert "IMPORTED []" in out  # neither Dagster nor a model was loaded
    assert "runbook.md" in out and "cite tessera:acme/" in out  # the sample search still answers


@pytest.mark.parametrize("change", ["content", "access", "new", "removed"])
def test_any_change_runs_the_job(first: Any, change: str) -> None:
    src = first.root / "corpus" / "acme"
    if change == "content":
        (src / "runbook.md").write_text("# Runbook\n\nPage the on-call engineer twice.\n", encoding="utf-8")
    elif change == "access":
        (src / "_access.yaml").write_text("documents:\n  - match: runbook.md\n    groups: [ops]\n")
    elif change == "new":
        (src / "faq.md").write_text("# FAQ\n\nAsk the desk.\n", encoding="utf-8")
    else:
        (src / "faq.md").write_text("# FAQ\n\nAsk the desk.\n", encoding="utf-8")
        assert make_run.main(_args(first)) == 0
        (src / "faq.md").unlink()
    out = _subprocess_main(first)
    assert "acme: indexing through Dagster" in out and "nothing to run" not in out


def test_always_runs_the_job_and_the_driver_knows_the_bundled_config(first: Any) -> None:
    out = _subprocess_main(first, "--always")
    assert "acme: indexing through Dagster" in out and "acme publish: nothing changed" in out
    steps = "|".join(make_run.STEP_NODES)  # the done line says where the process peaked
    assert re.search(
        rf"acme: done in [\d.]+ s \(run \S+\); peak RSS (\d+ MB, set in its ({steps}) step|set before)", out
    )
    assert make_run.BUNDLED_CONFIG == BUNDLED_CONFIG  # one path, declared twice (no Dagster import)


def test_the_remembered_query_vector_is_keyed_by_model_and_text(tmp_path: Path) -> None:
    import numpy as np

    from pipelines.noop import RememberedQuery
    from tessera.embedding.fake import HashEmbedder

    calls: list[str] = []

    class Counting(HashEmbedder):
        def embed_query(self, text: str) -> Any:
            calls.append(text)
            return super().embed_query(text)

    path = tmp_path / "q.json"
    a = RememberedQuery(Counting(), path)
    first = a.embed_query("pager tool")
    assert np.array_equal(a.embed_query("pager tool"), first) and calls == ["pager tool"]
    a.embed_query("other question")  # another text is embedded
    other_model = RememberedQuery(Counting(dimension=32), path)
    assert other_model.embed_query("other question").shape == (32,)  # another model: never reused
    path.write_text("{not json")  # a damaged file is only a miss
    assert np.array_equal(RememberedQuery(Counting(), path).embed_query("pager tool"), first)
    assert calls == ["pager tool", "other question", "other question", "pager tool"]


def test_the_done_line_names_the_step_that_set_the_peak() -> None:
    def m(peak: float, raised: float) -> dict[str, float]:
        return {"peak_rss_mb": peak, "raised_peak_mb": raised}

    memory = {"list": m(300.2, 40), "parse": m(350, 49.8), "chunk": m(352.4, 2.4), "publish": m(352.9, 0.5)}
    assert make_run.peak_line(memory) == "peak RSS 353 MB, set in its chunk step"
    assert make_run.peak_line({"list": m(900, 0), "publish": None}) == "peak RSS set before this tenant"
