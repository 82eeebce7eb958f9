"""An in-memory connector: the fake behind FakeSourceResource, with scripted outages.

``failure`` simulates what real sources do when they break: ``raise`` (an exception),
``bare_list`` (a plain ``[]`` instead of a Listing), ``no_proof`` (an empty listing without
evidence). ``unreadable`` names documents whose download fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tessera.config import AccessRule
from tessera.errors import SourceError
from tessera.parsing.base import parser_for_path
from tessera.sources.base import Listing, Verdict, make_document
from tessera.sources.policy import build_tree, policy_file_kind, refuse_lookalike
from tessera.types import SourceDocument, sha256_hex

FAILURES = ("", "raise", "bare_list", "no_proof")
_MODIFIED = datetime(2026, 1, 1, tzinfo=UTC)


class MemoryConnector:
    def __init__(
        self,
        tenant: str,
        files: Mapping[str, str | bytes],
        default_access: AccessRule,
        failure: str = "",
        unreadable: tuple[str, ...] = (),
    ) -> None:
        if failure not in FAILURES:
            raise ValueError(f"failure must be one of {FAILURES}, got {failure!r}")
        self.tenant = tenant
        self.files = {k: v.encode("utf-8") if isinstance(v, str) else v for k, v in files.items()}
        self.default_access = default_access
        self.failure = failure
        self.unreadable = unreadable

    def list(self) -> Any:
        if self.failure == "raise":
            raise ConnectionError("simulated outage: connection reset by peer")
        if self.failure == "bare_list":
            return []
        kinds = {rel: policy_file_kind(rel) for rel in self.files}
        for rel, kind in kinds.items():
            if kind == "lookalike":
                refuse_lookalike(rel, f"memory://{self.tenant}/{rel}")
        policy = build_tree(
            self.default_access, {r: raw for r, raw in self.files.items() if kinds[r] == "policy"}, ""
        )
        docs = []
        for rel, raw in sorted(self.files.items()):
            if kinds[rel] or parser_for_path(rel) is None:
                continue
            d = policy.decide(rel)
            uri = f"memory://{self.tenant}/{rel}"
            effective = (d.effective_from, d.effective_to)
            docs.append(make_document(self.tenant, rel, raw, uri, d.access, effective, _MODIFIED, d.source))
        if self.failure == "no_proof":
            return Listing(self.tenant, Verdict.EMPTY, (), "")
        if not docs:
            proof = f"memory source of {self.tenant!r} holds no documents"
            return Listing(self.tenant, Verdict.EMPTY, (), proof, (), policy.files)
        proof = f"memory source: {len(docs)} documents"
        return Listing(self.tenant, Verdict.COMPLETE, tuple(docs), proof, (), policy.files)

    def read(self, doc: SourceDocument) -> bytes:
        if doc.doc_id in self.unreadable:
            raise SourceError(f"simulated download failure for {doc.doc_id}")
        raw = self.files.get(doc.doc_id)
        if raw is None or sha256_hex(raw) != doc.revision:
            raise SourceError(f"{doc.doc_id} changed or vanished during the run")
        return raw
