"""Shared helpers of the revision cache tests: a cache without settling, read counters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tessera.config import AccessRule
from tessera.sources import folder as folder_module
from tessera.sources.confine import read_confined
from tessera.sources.git import GitConnector
from tessera.sources.revision_cache import CACHE_FILE, RevisionCache
from tessera.sources.s3 import S3Connector

DEFAULT = AccessRule(groups=("staff",))
NO_SETTLE = -60.0
"""Trust every read at once (the store's clock and the test's may differ by a second); the
settling window itself is tested on its own."""


def cache(state: Path, tenant: str = "acme", settle: float = NO_SETTLE) -> RevisionCache:
    return RevisionCache(state / tenant / CACHE_FILE, tenant, settle_seconds=settle)


def folder_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every document file the folder connector opens to read (policy files excluded)."""
    reads: list[str] = []
    real = read_confined

    def spy(root: Path, rel: str) -> Any:
        if not rel.endswith("_access.yaml"):
            reads.append(rel)
        return real(root, rel)

    monkeypatch.setattr(folder_module, "read_confined", spy)
    return reads


def get_objects(conn: S3Connector) -> list[str]:
    """The keys of every GetObject the connector's client sends."""
    keys: list[str] = []
    conn.client.meta.events.register(
        "before-parameter-build.s3.GetObject", lambda params, **_: keys.append(params.get("Key", ""))
    )
    return keys


def blob_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every git command of the connector that reads blob bodies (``cat-file --batch`` or
    ``cat-file blob``); ``--batch-check`` reads headers only and is not counted."""
    calls: list[tuple[str, ...]] = []
    real = GitConnector._run

    def spy(self: GitConnector, *args: str, stdin: bytes | None = None) -> Any:
        if args[:1] == ("cat-file",) and ("--batch" in args or "blob" in args):
            calls.append(args)
        return real(self, *args, stdin=stdin)

    monkeypatch.setattr(GitConnector, "_run", spy)
    return calls
