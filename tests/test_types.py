"""``SourceDocument.meta_hash`` is written out by hand for speed; it must stay byte for byte the
canonical hash every stored row carries, or an upgrade would relabel every document."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.types import NEVER, SourceDocument, canonical_hash

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)  # quotes, NUL, U+2028, emoji...


def reference(doc: SourceDocument) -> str:
    return canonical_hash(
        {
            "readers": list(doc.readers),
            "groups": list(doc.groups),
            "effective_from": doc.effective_from.isoformat(),
            "effective_to": doc.effective_to.isoformat(),
            "uri": doc.uri,
            "content_type": doc.content_type,
        }
    )


@settings(max_examples=300, deadline=None)
@given(
    uri=TEXT,
    content_type=TEXT,
    readers=st.lists(TEXT, max_size=3),
    groups=st.lists(TEXT, max_size=3),
    micros=st.integers(0, 10**15),
)
def test_meta_hash_is_the_canonical_hash(
    uri: str, content_type: str, readers: list[str], groups: list[str], micros: int
) -> None:
    start = datetime(1990, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)
    doc = SourceDocument("t", "d", uri, "r", content_type, tuple(readers), tuple(groups), start, NEVER)
    assert doc.meta_hash == reference(doc)


def test_meta_hash_of_a_known_document_is_unchanged() -> None:
    doc = SourceDocument("acme", "a.md", "file:///c/a.md", "r", "text/markdown", ("alice",), ("staff", "hr"))
    assert (
        doc.meta_hash == reference(doc) == "1e4d95d259b92ce983099a667488a28571acfaf16e90ae3ff73c4f12126aef77"
    )  # the hash of the release before
    moved = SourceDocument(
        "acme", "a.md", "file:///c/a.md", "r", "text/markdown", ("alice",), ("hr", "staff")
    )
    assert moved.meta_hash != doc.meta_hash  # group order is part of the hash, as before


OFFSETS = st.sampled_from([None, timedelta(0), timedelta(hours=2), timedelta(hours=-5, minutes=-30)])


@settings(max_examples=200, deadline=None)
@given(
    docs=st.lists(
        st.tuples(
            st.sampled_from(["file:///c/a.md", "file:///c/b.md", 'file:///c/"é".md']),
            st.sampled_from(["text/markdown", "text/html"]),
            st.sampled_from([(), ("alice",), ("alice", "bob")]),
            st.sampled_from([("staff",), ()]),
            OFFSETS,
            OFFSETS,
        ),
        min_size=1,
        max_size=12,
    ),
    keep=st.integers(1, 3),
)
def test_documents_sharing_a_policy_hash_as_each_would_alone(
    docs: list[tuple[str, str, tuple[str, ...], tuple[str, ...], timedelta | None, timedelta | None]],
    keep: int,
) -> None:
    """The memo of shared prefixes (few distinct ones, a tiny memo that starts over): every
    hash is still the canonical one. The same instant written at another UTC offset, or
    without a zone, is a different prefix, though the datetimes compare equal."""
    import tessera.types as types

    instant = datetime(2024, 3, 1, 12, 30, tzinfo=UTC)

    def at(offset: timedelta | None) -> datetime:
        return instant.replace(tzinfo=None) if offset is None else instant.astimezone(timezone(offset))

    with patch.object(types, "_KEEP_PREFIXES", keep):
        for uri, ctype, readers, groups, start, end in docs + docs:  # each twice: memo hits
            doc = SourceDocument("t", "d", uri, "r", ctype, readers, groups, at(start), at(end))
            assert doc.meta_hash == reference(doc)
