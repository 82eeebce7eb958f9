"""Shared fixtures: temporary corpora and configs, the real tokenizer, a fake embedder.

Tests never need ``../shared``. The real model is used only by tests marked ``model``.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tessera.chunking.base import ChunkContext
from tessera.chunking.tokens import HFTokenCounter, load_counter
from tessera.config import ChunkingConfig, EmbeddingConfig, TesseraConfig, load_config
from tessera.embedding.fake import HashEmbedder
from tessera.embedding.model_files import model_dir
from tessera.pipeline.run import RunContext, run_tenant

MODEL_SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@pytest.fixture(scope="session")
def model_path() -> Path:
    return model_dir(EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2"))


@pytest.fixture(scope="session")
def counter(model_path: Path) -> HFTokenCounter:
    return load_counter(model_path)


@pytest.fixture
def chunk_ctx(counter: HFTokenCounter) -> Callable[..., ChunkContext]:
    def make(max_tokens: int = 256, target_tokens: int = 200, overlap_tokens: int = 32) -> ChunkContext:
        cfg = ChunkingConfig("structural", max_tokens, min(target_tokens, max_tokens), overlap_tokens)
        return ChunkContext(config=cfg, counter=counter, model_hash="test-model")

    return make


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")


class Workspace:
    """A temporary project: corpora per tenant, a tessera.yaml, and helpers to run it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.chunking: dict[str, Any] = {"max_tokens": 256, "target_tokens": 120, "overlap_tokens": 16}
        self.tenants: dict[str, dict[str, Any]] = {}
        self.embedder = HashEmbedder()
        self.store_uri = "index"  # relative to the workspace, or s3://bucket/prefix
        self.execution: dict[str, Any] = {"executor": "inline"}  # tests opt in to worker processes

    def tenant(
        self,
        name: str,
        files: dict[str, str | bytes],
        groups: list[str] | None = None,
        users: dict[str, list[str]] | None = None,
    ) -> Path:
        src = self.root / "corpus" / name
        src.mkdir(parents=True, exist_ok=True)
        write_tree(src, files)
        self.tenants[name] = {
            "source": {"kind": "folder", "path": f"corpus/{name}"},
            "access": {
                "default": {"groups": groups or ["staff"]},
                "users": {u: {"groups": g} for u, g in (users or {"alice": ["staff"]}).items()},
            },
        }
        return src

    def config(self) -> TesseraConfig:
        data = {
            "store": {"uri": self.store_uri, "work_dir": "work"},
            "embedding": {
                "model": "sentence-transformers/all-MiniLM-L6-v2",
                "sha256": MODEL_SHA,
                "batch_size": 4,
                "max_retries": 2,
                "backoff_seconds": 0,
            },
            "chunking": self.chunking,
            "tenants": self.tenants,
            "execution": self.execution,
        }
        path = self.root / "tessera.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return load_config(path)

    def context(self, tenant: str, run_id: str = "run-1", **kw: Any) -> RunContext:
        kw.setdefault("embedder", self.embedder)
        kw.setdefault("sleep", lambda _s: None)
        return RunContext(self.config(), tenant, run_id, **kw)

    def run(self, tenant: str, run_id: str = "run-1", **kw: Any) -> dict[str, Any]:
        return run_tenant(self.context(tenant, run_id, **kw))

    def table(self, tenant: str) -> Any:
        return self.context(tenant).index.table()

    def rows(self, tenant: str) -> list[dict[str, Any]]:
        table = self.table(tenant)
        return [] if table is None else sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)
