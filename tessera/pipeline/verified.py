"""Verify's pass over the whole table, remembered per tenant for the commit it passed on.

A run that commits nothing verifies the commit the run before it verified, against the same
listing. The checks that read the whole table (:func:`tessera.pipeline.checks.key_checks`: a
pass over the key columns, two filtered counts, the schema) answer from the commit and from
what it is checked against alone: the listing's revisions, the quarantined documents, the
tenant, the vector dimension, the sample size and the checks' own version. A pass is kept in
``<work_dir>/<tenant>/verified.json`` under a SHA-256 of all of these, the commit named by
table, version number and commit time (:func:`tessera.store.manifest.commit_key`, which the
publish's fence uses too). A run whose key
matches takes the rows and sampled ids from it instead of reading the table: a no-op at
10,000 documents (40,000 rows) took 0.593 s against 0.733 s (medians of 3, `bench/HISTORY.md`).
The sampled rows' offsets are still checked against the stored source on every verify, and
nothing that failed is kept.

The file is trusted as the work dir is (the revision and parse caches live there too): whoever
can write it can already change what a run indexes. A file that is missing, unreadable or of
another key means the whole pass, as before.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from tessera.pipeline.checks import KeyChecks, VerifyInputs, key_checks, offset_checks
from tessera.store.blobs import BlobStore
from tessera.store.manifest import commit_key

log = logging.getLogger(__name__)

VERIFIED_FILE = "verified.json"
CHECKS_VERSION = 1
"""Part of the key: raised whenever :func:`key_checks` checks something new, so a pass of the
checks before is not taken for one of the new."""


def verify_key(commit: str, inputs: VerifyInputs) -> str:
    """SHA-256 of everything :func:`key_checks`' answer depends on (order-free)."""
    head = [CHECKS_VERSION, commit, inputs.tenant, inputs.dimension, inputs.sample_size]
    h = hashlib.sha256(json.dumps(head).encode())
    h.update(json.dumps(sorted(inputs.quarantined)).encode())
    for doc_id, revision in sorted(inputs.revisions.items()):
        h.update(json.dumps([doc_id, revision]).encode())
    return h.hexdigest()


def recall(path: Path, key: str) -> KeyChecks | None:
    """The pass kept under ``key`` (None: none, another key, or a file not as written)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        ids = data["sampled_ids"]
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return None
        return KeyChecks(int(data["rows"]), tuple(ids))
    except (OSError, ValueError, KeyError, TypeError) as e:
        if not isinstance(e, FileNotFoundError):
            log.warning("%s not used (%s): verifying the whole table", path, e)
        return None


def remember(path: Path, key: str, found: KeyChecks) -> None:
    """Keep a pass (written whole, then renamed: a reader sees the old file or the new)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"key": key, "rows": found.rows, "sampled_ids": list(found.sampled_ids)})
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def verify_published(
    table: Any, inputs: VerifyInputs, blobs: BlobStore, path: Path
) -> tuple[list[str], dict[str, int]]:
    """:func:`tessera.pipeline.checks.check_published`, with the whole-table pass taken from
    ``path`` when it passed on this commit against these inputs, and kept there when it passes."""
    commit = commit_key(table)  # name, version and commit time, from the loaded manifest
    key = commit and verify_key(commit, inputs)
    found = recall(path, key) if key else None
    problems: list[str] = []
    recalled, stale = found is not None, 0  # a kept pass found no stale row
    if found is None:
        problems, found, stale = key_checks(table, inputs)
        if not problems and key:
            remember(path, key, found)
    else:
        log.info(
            "%s verify: %s passed these checks before (%d rows not read)", inputs.tenant, commit, found.rows
        )
    offsets, checked = offset_checks(table, found.sampled_ids, blobs)
    stats = {"rows": found.rows, "stale_rows": stale, "offsets_checked": checked, "recalled": int(recalled)}
    return problems + offsets, stats
