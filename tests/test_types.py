"""``SourceDocument.meta_hash`` is written out by hand for speed; it must stay byte for byte the
canonical hash every stored row carries, or an upgrade would relabel every document."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
