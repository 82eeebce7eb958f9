"""Deterministic, content-addressed chunk and section ids."""

from __future__ import annotations

from tessera.types import canonical_hash


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
