"""A local folder of documents, read without ever leaving it (:mod:`tessera.sources.confine`).

The root must exist and must not be a link; an unreadable entry fails the listing. Links,
special files and hard-linked files are skipped by name and counted. An empty folder lists as
EMPTY, but its emptiness is proven only by the zero-byte marker ``.tessera-root`` (created
when the tenant is provisioned): without it, an empty folder is exactly what an unmounted
mount point looks like, and the deletion guard refuses to delete the tenant on its word.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from tessera.config import AccessRule
from tessera.errors import PolicyError, SourceError
from tessera.parsing.base import parser_for_path
from tessera.sources.base import Listing, Verdict, make_document
from tessera.sources.confine import check_root, read_confined, walk_confined
from tessera.sources.policy import build_tree, policy_file_kind, refuse_lookalike
from tessera.types import SourceDocument, sha256_hex

ROOT_MARKER = ".tessera-root"


class FolderConnector:
    def __init__(self, tenant: str, root: Path, default_access: AccessRule) -> None:
        self.tenant = tenant
        self.root = root
        self.default_access = default_access

    def _marker(self) -> bool:
        """Whether the root holds the provisioning marker (a regular file, not a link)."""
        try:
            return stat.S_ISREG(os.lstat(self.root / ROOT_MARKER).st_mode)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise SourceError(f"cannot check {self.root / ROOT_MARKER}: {e}") from e

    def list(self) -> Listing:
        check_root(self.root)
        walk = walk_confined(self.root)
        policy_files: dict[str, bytes] = {}
        wanted: list[str] = []
        other = walk.hidden
        for rel in walk.files:
            kind = policy_file_kind(rel)
            if kind == "lookalike":
                refuse_lookalike(rel, str(self.root / rel))
            if kind == "policy":
                policy_files[rel] = read_confined(self.root, rel)[0]
            elif parser_for_path(rel) is None:
                other += 1
            else:
                wanted.append(rel)
        for entry in walk.skipped:  # a linked or special policy file: fail closed, never skip it
            if policy_file_kind(entry.path):
                where = str(self.root / entry.path)
                raise PolicyError(where, f"an access policy may not be a {entry.reason}")
        tree = build_tree(self.default_access, policy_files, str(self.root))
        docs: list[SourceDocument] = []
        for rel in wanted:
            raw, st = read_confined(self.root, rel)
            d = tree.decide(rel)
            modified = datetime.fromtimestamp(st.st_mtime, tz=UTC)
            uri = (self.root.resolve() / rel).as_uri()
            effective = (d.effective_from, d.effective_to)
            docs.append(make_document(self.tenant, rel, raw, uri, d.access, effective, modified, d.source))
        skipped = tuple((s.path, s.reason) for s in walk.skipped)
        counts = Counter(reason for _, reason in skipped)
        note = "".join(f", {n} {reason} skipped" for reason, n in sorted(counts.items()))
        policies = tree.files
        if not docs:
            marker = self._marker()
            proof = (
                f"folder {self.root} exists and lists 0 indexable files ({other} other entries{note}); "
                + (f"root marker {ROOT_MARKER} present" if marker else f"no {ROOT_MARKER} marker")
            )
            return Listing(self.tenant, Verdict.EMPTY, (), proof, (), policies, skipped, marker)
        proof = f"walked {self.root}: {len(docs)} files{note}"
        return Listing(self.tenant, Verdict.COMPLETE, tuple(docs), proof, (), policies, skipped)

    def read(self, doc: SourceDocument) -> bytes:
        raw, _ = read_confined(self.root, doc.doc_id)
        if sha256_hex(raw) != doc.revision:
            raise SourceError(f"{self.root / doc.doc_id} changed during the run (revision mismatch)")
        return raw
