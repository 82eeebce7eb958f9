"""``doc_json_text`` is the JSON of ``doc_to_json``: for any document (any text, offsets with
seconds that orjson would truncate, sizes past 64 bits, naive dates) it reads back to the same
dict, so to the same document; a document no UTF-8 file can hold is refused as before."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.serde import doc_from_json, doc_json_text, doc_to_json
from tessera.types import SourceDocument

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
OFFSETS = st.one_of(
    st.none(),
    st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)).map(
        lambda d: timezone(d)
    ),
    st.just(UTC),
)
DATES = st.builds(
    lambda d, tz: d.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    OFFSETS,
)
DOCS = st.builds(
    SourceDocument,
    tenant=TEXT,
    doc_id=TEXT,
    uri=TEXT,
    revision=TEXT,
    content_type=TEXT,
    readers=st.lists(TEXT, max_size=3).map(tuple),
    groups=st.lists(TEXT, max_size=3).map(tuple),
    effective_from=DATES,
    effective_to=DATES,
    modified_at=DATES,
    size=st.one_of(st.integers(0, 2**40), st.integers(2**64, 2**70)),
    acl_source=TEXT,
)


@settings(max_examples=300, deadline=None)
@given(DOCS)
def test_the_text_reads_back_as_doc_to_json(doc: SourceDocument) -> None:
    text = doc_json_text(doc)
    assert json.loads(text) == doc_to_json(doc)
    assert doc_from_json(json.loads(text)) == doc_from_json(doc_to_json(doc))
    text.encode("utf-8")  # what the listing file is written as


def test_offsets_with_seconds_keep_them() -> None:
    tz = timezone(timedelta(hours=5, minutes=30, seconds=15))
    doc = SourceDocument(
        "acme",
        "a.md",
        "file:///a.md",
        "r",
        "text/markdown",
        (),
        ("g",),
        modified_at=datetime(2020, 5, 5, tzinfo=tz),
    )
    assert json.loads(doc_json_text(doc))["modified_at"] == "2020-05-05T00:00:00+05:30:15"


def test_a_lone_surrogate_is_refused_as_the_file_would_refuse_it() -> None:
    doc = SourceDocument("acme", "bad\udcff.md", "file:///bad", "r", "text/markdown", (), ("g",))
    with pytest.raises(UnicodeEncodeError):
        doc_json_text(doc).encode("utf-8")
