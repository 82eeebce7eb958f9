"""A listing's documents, held as columns for the length of a run.

A run keeps its listing from the listing step to verify (every step asks for it). As one
:class:`SourceDocument` per document, each with its own strings, tuples and datetimes, a
100,000-document listing held about 180 MB through the whole run, the index builds of the
publish included: the largest part of what a large run's memory grew by. Here the per-document
fields are Arrow strings and NumPy integers, the fields documents of a policy share (tenant,
content type, ACL, dates, policy file) are stored once per distinct combination, and a
:class:`SourceDocument` is built when a step asks for one (about 3 microseconds).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from functools import cached_property

import numpy as np
import pyarrow as pa

from tessera.types import SourceDocument

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
_Shared = tuple[str, str, tuple[str, ...], tuple[str, ...], datetime, datetime, str]
"""tenant, content type, readers, groups, effective from, effective to, ACL source."""


def _shared(doc: SourceDocument) -> _Shared:
    return (
        doc.tenant,
        doc.content_type,
        doc.readers,
        doc.groups,
        doc.effective_from,
        doc.effective_to,
        doc.acl_source,
    )


def _key(shared: _Shared) -> tuple[object, ...]:
    """What makes two documents' shared fields the same: datetimes that are the same instant
    at other UTC offsets compare equal, so each also counts by its offset (what the listing's
    JSON and ``meta_hash`` keep of a zone)."""
    return (*shared, shared[4].utcoffset(), shared[5].utcoffset())


class ListedDocuments(Mapping[str, SourceDocument]):
    """Documents by id (a later document with the same id replaces the earlier one, as a dict
    built from the list would). Each document read back equals the one given, its
    ``meta_hash`` included (kept, not computed again)."""

    def __init__(self, documents: Iterable[SourceDocument]) -> None:
        row: dict[str, int] = {}
        codes: dict[tuple[object, ...], int] = {}
        distinct: list[_Shared] = []
        uris: list[str] = []
        revisions: list[str] = []
        hashes: list[str] = []
        micros: list[int] = []
        zones: list[int] = []
        zone_codes: dict[str, int] = {}
        self._zones: list[tzinfo | None] = []
        sizes: list[int] = []
        shared: list[int] = []
        for doc in documents:
            shared_fields = _shared(doc)
            code = codes.setdefault(_key(shared_fields), len(codes))
            if code == len(distinct):
                distinct.append(shared_fields)
            i = row.setdefault(doc.doc_id, len(uris))
            if i == len(uris):
                uris.append(doc.uri)
                revisions.append(doc.revision)
                hashes.append(doc.meta_hash)
                micros.append(0)
                zones.append(0)
                sizes.append(doc.size)
                shared.append(code)
            else:  # the same id again: the later document wins
                uris[i], revisions[i], hashes[i] = doc.uri, doc.revision, doc.meta_hash
                sizes[i], shared[i] = doc.size, code
            when = doc.modified_at
            zone = zone_codes.setdefault(repr(when.tzinfo), len(zone_codes))
            if zone == len(self._zones):
                self._zones.append(when.tzinfo)
            micros[i] = (when - (_NAIVE if when.tzinfo is None else _EPOCH)) // _MICROSECOND
            zones[i] = zone
        self._ids = pa.array(list(row), pa.string())  # row i is the i-th id first seen
        self._uri = pa.array(uris, pa.string())
        self._revision = pa.array(revisions, pa.string())
        self._meta_hash = pa.array(hashes, pa.string())
        self._micros = np.asarray(micros, np.int64)
        self._zone = np.asarray(zones, np.int32)
        self._size = np.asarray(sizes, np.int64)
        self._code = np.asarray(shared, np.int32)
        self._shared = distinct

    def __getitem__(self, doc_id: str) -> SourceDocument:
        i = self._row[doc_id]
        tenant, content_type, readers, groups, start, end, acl_source = self._shared[self._code[i]]
        doc = SourceDocument(
            tenant,
            doc_id,
            self._uri[i].as_py(),
            self._revision[i].as_py(),
            content_type,
            readers,
            groups,
            start,
            end,
            self._modified(i),
            int(self._size[i]),
            acl_source,
        )
        doc.__dict__["meta_hash"] = self._meta_hash[i].as_py()  # the cached_property's slot
        return doc

    @cached_property
    def _row(self) -> dict[str, int]:
        """Ids to rows, built on first use from the stored ids, not kept from the documents:
        a string of theirs would keep the memory of every document allocated beside it
        (Python returns an arena only when all of it is free), and the documents are freed
        once the listing step is done."""
        return {doc_id: i for i, doc_id in enumerate(self._ids.to_pylist())}

    def drop_lookup(self) -> None:
        """Forget the ids-to-rows table until a lookup needs it again: a dict and a string per
        document, 11 MB at 100,000 documents, that a publish's index builds need not hold."""
        self.__dict__.pop("_row", None)

    def _modified(self, i: int) -> datetime:
        zone = self._zones[self._zone[i]]
        delta = timedelta(microseconds=int(self._micros[i]))
        return _NAIVE + delta if zone is None else (_EPOCH + delta).astimezone(zone)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._row

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._ids)

    def revisions(self) -> dict[str, str]:
        """Each document's revision, without building the documents."""
        return dict(zip(self._ids.to_pylist(), self._revision.to_pylist(), strict=True))
