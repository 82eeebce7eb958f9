"""A local folder of documents. The root must exist; an unreadable entry fails the listing."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from tessera.config import AccessRule
from tessera.errors import SourceError
from tessera.parsing.base import parser_for_path
from tessera.sources.base import Listing, Verdict, make_document
from tessera.sources.policy import POLICY_FILE, load_policy
from tessera.types import SourceDocument, sha256_hex


class FolderConnector:
    def __init__(self, tenant: str, root: Path, default_access: AccessRule) -> None:
        self.tenant = tenant
        self.root = root
        self.default_access = default_access

    def _walk(self) -> tuple[list[str], int]:
        errors: list[OSError] = []
        found: list[str] = []
        skipped = 0
        for dirpath, dirnames, filenames in os.walk(self.root, onerror=errors.append, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                rel = Path(dirpath, name).relative_to(self.root).as_posix()
                if name.startswith(".") or rel == POLICY_FILE or parser_for_path(name) is None:
                    skipped += 1
                    continue
                found.append(rel)
        if errors:
            raise SourceError(f"listing {self.root} failed: {errors[0]}")
        return found, skipped

    def list(self) -> Listing:
        if not self.root.is_dir():
            raise SourceError(f"source folder {self.root} does not exist or is not a folder")
        policy = load_policy(self.root, self.default_access)
        paths, skipped = self._walk()
        docs: list[SourceDocument] = []
        for rel in paths:
            path = self.root / rel
            try:
                raw = path.read_bytes()
                mtime = path.stat().st_mtime
            except OSError as e:
                raise SourceError(f"cannot read {path}: {e}") from e
            access, start, end = policy.resolve(rel)
            modified = datetime.fromtimestamp(mtime, tz=UTC)
            docs.append(
                make_document(self.tenant, rel, raw, path.resolve().as_uri(), access, (start, end), modified)
            )
        if not docs:
            proof = f"folder {self.root} exists and lists 0 indexable files ({skipped} other entries)"
            return Listing(self.tenant, Verdict.EMPTY, (), proof)
        return Listing(self.tenant, Verdict.COMPLETE, tuple(docs), f"walked {self.root}: {len(docs)} files")

    def read(self, doc: SourceDocument) -> bytes:
        path = self.root / doc.doc_id
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise SourceError(f"cannot read {path}: {e}") from e
        if sha256_hex(raw) != doc.revision:
            raise SourceError(f"{path} changed during the run (revision mismatch)")
        return raw
