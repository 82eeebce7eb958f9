"""The columnar listing reads back exactly the documents it was given."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.pipeline.listed import ListedDocuments
from tessera.types import SourceDocument

_TZ = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-3))])
_WHEN = st.builds(
    lambda s, tz: datetime(2020, 1, 1, tzinfo=UTC).astimezone(tz) + timedelta(microseconds=s),
    st.integers(-(10**15), 10**15),
    _TZ,
)
_NAMES = st.text(min_size=1, max_size=6)
DOCS = st.lists(
    st.builds(
        SourceDocument,
        tenant=st.sampled_from(["acme", "globex"]),
        doc_id=st.sampled_from(["a.md", "b.md", "c/d.md", "é.md", "x"]) | _NAMES,
        uri=st.text(max_size=20),
        revision=st.text(max_size=8),
        content_type=st.sampled_from(["text/markdown", "text/html", "application/pdf"]),
        readers=st.lists(_NAMES, max_size=3).map(tuple),
        groups=st.lists(st.sampled_from(["staff", "hr", "ops"]), max_size=2).map(tuple),
        effective_from=_WHEN,
        effective_to=_WHEN,
        modified_at=_WHEN | st.datetimes(),  # a naive time too: read back naive
        size=st.integers(0, 2**62),
        acl_source=st.sampled_from(["", "default", "hr/_access.yaml"]),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(DOCS)
def test_every_document_reads_back_equal_to_the_dict_of_the_list(docs: list[SourceDocument]) -> None:
    """Same ids, same order, same documents (a repeated id: the later one, as a dict keeps),
    the same meta_hash, and revisions without building documents."""
    want = {d.doc_id: d for d in docs}
    listed = ListedDocuments(docs)
    assert list(listed) == list(want) and len(listed) == len(want)
    for doc_id, doc in want.items():
        got = listed[doc_id]
        assert got == doc and got.meta_hash == doc.meta_hash
        for field in ("effective_from", "effective_to", "modified_at"):  # equal instants, and offsets
            assert getattr(got, field).utcoffset() == getattr(doc, field).utcoffset()
        assert (got.modified_at.tzinfo is None) == (doc.modified_at.tzinfo is None)
        assert doc_id in listed and listed.get(doc_id) == doc
    assert listed.revisions() == {i: d.revision for i, d in want.items()}
    assert "never listed" not in listed and listed.get("never listed") is None
    assert dict(pickle.loads(pickle.dumps(listed))) == want  # a context crosses to workers
    listed.drop_lookup()  # the publish drops the lookup by id; a later step gets it back whole
    assert "_row" not in vars(listed) and listed.revisions() == {i: d.revision for i, d in want.items()}
    assert "_row" not in vars(listed)  # revisions never needed it
    assert dict(listed) == want and list(listed) == list(want) and "_row" in vars(listed)
    listed.drop_lookup()
    assert all(doc_id in listed for doc_id in want) and "never listed" not in listed


def test_the_stored_hash_is_the_documents_own() -> None:
    """The meta_hash read back is the one the listing computed (kept, not recomputed), and it
    is what the document's own fields hash to: a document changed in any filterable field
    has another."""
    doc = SourceDocument("acme", "a.md", "file:///a.md", "r1", "text/markdown", (), ("staff",))
    other = SourceDocument("acme", "b.md", "file:///a.md", "r1", "text/markdown", (), ("hr",))
    listed = ListedDocuments([doc, other])
    assert listed["a.md"].meta_hash == doc.meta_hash != listed["b.md"].meta_hash == other.meta_hash
