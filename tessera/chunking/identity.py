"""Deterministic, content-addressed chunk and section ids, and the exact-duplicate key."""

from __future__ import annotations

import re
from itertools import islice

from tessera.types import canonical_hash, sha256_hex


def chunk_id(
    tenant: str, doc_id: str, revision: str, start: int, end: int, config_hash: str, model_hash: str
) -> str:
    """sha256 of canonical JSON ``[tenant, doc_id, revision, start, end, config, model]``.

    The range is part of the id, so identical text at two offsets keeps two ids; the
    chunking config and model identity are too, so a new profile or model never reuses ids.
    """
    return canonical_hash([tenant, doc_id, revision, start, end, config_hash, model_hash])


def section_id(tenant: str, doc_id: str, revision: str, start: int, end: int, config_hash: str) -> str:
    """Id of a heading section (a chunk's parent), stable for a given revision and config."""
    return canonical_hash(["section", tenant, doc_id, revision, start, end, config_hash])


MIN_DEDUP_WORDS = 5
"""Chunks with fewer words (a lone heading, a one-liner) are never treated as duplicates:
identical boilerplate such as ``# Guide`` is not duplicate content, and folding it would hide
the documents it heads."""
_WORD = re.compile(r"\w+")


def text_checksum(text: str) -> str:
    """sha256 of a chunk's text alone: equal for exact duplicates wherever they occur."""
    return sha256_hex(text)


def dedup_key(text: str) -> str | None:
    """The exact-duplicate key of a chunk text (its checksum); None for too short a text (the
    words are counted up to ``MIN_DEDUP_WORDS``: search asks this of every ranked row)."""
    words = sum(1 for _ in islice(_WORD.finditer(text), MIN_DEDUP_WORDS))
    return text_checksum(text) if words >= MIN_DEDUP_WORDS else None
