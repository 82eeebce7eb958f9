"""What a search may ask for, checked before anything is read, and the columns a hit carries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tessera.errors import InvalidArgument

MODES = ("dense", "lexical", "hybrid")
NEAR_POLICIES = (None, "flag", "drop")
MAX_K = 1000
MAX_QUERY_CHARS = 2000
"""The longest query the CLI and the API accept (the API's ``q`` has the same bound)."""
COLUMNS = [
    "id", "tenant", "doc_id", "uri", "revision", "text", "heading_path", "anchor", "start", "end",
    "byte_start", "byte_end", "pages", "model_version", "kind", "flags", "parent_id", "position",
    "token_count", "content_type", "readers", "groups", "dup_group",
]  # fmt: skip
"""The columns of a ranked row: read only for the rows a search returns (or folds into them)."""
OPTIONAL_COLUMNS = ("parts",)
"""Columns a ranked row carries when the table has them (Office locations: tables published
before them gain the column on their next publish)."""


def row_columns(names: Any) -> list[str]:
    """``COLUMNS`` plus the optional ones among ``names`` (a table's column names)."""
    return [*COLUMNS, *(c for c in OPTIONAL_COLUMNS if c in names)]


@dataclass(frozen=True)
class SearchOptions:
    k: int = 5
    mode: str = "hybrid"
    as_of: datetime | None = None
    model_version: str | None = None
    expand: str | None = None
    token_budget: int | None = None
    include_flagged: bool = False
    near_duplicates: str | None = None
    """``flag``: near duplicates stay separate hits; ``drop``: they fold into their group;
    None: as indexed (rows flagged ``linked_duplicate`` fold). Exact copies always fold."""

    def __post_init__(self) -> None:
        """Every option is checked here, before anything is read: a bad one is an
        ``InvalidArgument`` (a ``ValueError``) naming it."""
        if not _is_int(self.k) or not 1 <= self.k <= MAX_K:
            raise InvalidArgument("k", f"must be an integer in [1, {MAX_K}], got {self.k!r}")
        if self.mode not in MODES:
            raise InvalidArgument("mode", f"must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.token_budget is not None and (not _is_int(self.token_budget) or self.token_budget < 1):
            raise InvalidArgument("token_budget", f"must be a positive integer, got {self.token_budget!r}")
        if self.near_duplicates not in NEAR_POLICIES:
            raise InvalidArgument(
                "near_duplicates", f"must be one of {NEAR_POLICIES}, got {self.near_duplicates!r}"
            )
        if self.as_of is not None and not isinstance(self.as_of, datetime):
            raise InvalidArgument("as_of", f"must be a datetime, got {type(self.as_of).__name__}")
        if self.model_version is not None and not isinstance(self.model_version, str):
            kind = type(self.model_version).__name__
            raise InvalidArgument("model_version", f"must be a string, got {kind}")
        if self.expand is not None:
            parse_expand(self.expand)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_query(query: object, key: str = "query") -> str:
    """The query text, or ``InvalidArgument``: it must be a non-blank string of at most
    ``MAX_QUERY_CHARS`` characters without NUL."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument(key, "must be a non-empty text")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(key, f"must be at most {MAX_QUERY_CHARS} characters, got {len(query)}")
    if "\0" in query:
        raise InvalidArgument(key, "must not contain NUL characters")
    return query


MAX_NEIGHBORS = 20


def parse_expand(spec: str) -> tuple[str, int]:
    """``parent`` or ``neighbors:N`` (ASCII digits, 0 <= N <= 20); else ``InvalidArgument``."""
    if spec == "parent":
        return "parent", 0
    m = re.fullmatch(r"neighbors:([0-9]{1,3})", spec) if isinstance(spec, str) else None
    if m is not None and int(m[1]) <= MAX_NEIGHBORS:
        return "neighbors", int(m[1])
    shown = repr(spec) if len(repr(spec)) <= 60 else repr(spec)[:57] + "..."
    raise InvalidArgument(
        "expand", f"must be 'parent' or 'neighbors:N' with 0 <= N <= {MAX_NEIGHBORS}, got {shown}"
    )
