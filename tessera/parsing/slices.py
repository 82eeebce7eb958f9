"""A source byte range as text: for offset checks (does a row's range give its text?) and
for display (citations, lineage), by the rules of the document's format."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tessera.offsets import normalize_text_bytes
from tessera.parsing.base import slice_matches, source_encoding


def source_slice_text(raw: bytes, byte_start: int, byte_end: int) -> str:
    """The normalized text of a source byte range (text formats)."""
    return normalize_text_bytes(raw[byte_start:byte_end])[0]


def source_slice_matches(raw: bytes, row: Mapping[str, Any]) -> bool:
    """Whether a row's source byte range gives its text, by the rules of its format."""
    return slice_matches(row.get("content_type"), raw, row["byte_start"], row["byte_end"], row["text"])


def decode_slice(raw: bytes, byte_start: int, byte_end: int, content_type: str | None) -> str:
    """A source byte range as text for display, in the document's own encoding."""
    return raw[byte_start:byte_end].decode(source_encoding(content_type, raw), "replace")
