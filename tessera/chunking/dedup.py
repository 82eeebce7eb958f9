"""Duplicate chunks within a tenant: exact copies by checksum, near copies by MinHash + LSH.

* **Exact duplicates** share ``text_checksum`` (sha256 of the chunk text). They need no
  marking: search collapses hits with the same checksum into the best-ranked one, whose
  ``sources`` list every copy the principal may read. "One vector": the embedding cache keys
  on the embedding text, so a text is embedded once per tenant and model (an identical
  paragraph under a different breadcrumb has another embedding text and its own vector).
* **Near duplicates**: MinHash signatures over word ``shingle``-grams (``permutations``
  seeded universal hashes), LSH banding for candidates, then the estimated Jaccard must
  reach ``threshold``. Candidates are joined into clusters (union-find, so a chain of near
  copies is one cluster). Texts of fewer than ``MIN_DEDUP_WORDS`` words (a lone heading)
  are never duplicates. A cluster's canonical chunk is the earliest by
  ``(live first, doc_id, position)``: a live row anchors the group because this run cannot
  relabel rows of documents it does not republish. Every other member with a text of its own
  gets the ``near_duplicate`` flag (plus ``linked_duplicate`` under the ``drop`` policy,
  which tells search to fold it into the canonical hit) and the canonical's ``dup_group``.

Rows stay one per source because ACL and incremental deletes are per document: a shared
row would leak one document's text under another's ACL, and deleting the document that
"owns" it would take the copy of every other document with it. Stored ``dup_group`` values
of rows this run does not republish are not revisited (they may name a group whose canonical
has since changed or gone; search still collapses by checksum and shared group).

Cost: MinHash is O(words x permutations) per staged chunk, done by the chunk workers. The
run holds about 120 bytes per staged chunk (:mod:`tessera.chunking.dedup_columns`). Live rows'
text is never read in full: ``dedupe`` asks ``fetch_live`` only for rows sharing an LSH band
key (the ``dup_bands`` column) with a staged chunk, so a run reads text proportional to its
candidates (finding them scans the ``dup_bands`` column: README, *the live band lookup*).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tessera.chunking.dedup_columns import Columns, SketchColumns, _cluster, dedupe_columns, merge
from tessera.chunking.identity import dedup_key, text_checksum
from tessera.chunking.minhash import MinHasher, Signature, Sketch, jaccard, rows_per_band, sketch
from tessera.chunking.profile import DedupConfig

__all__ = [
    "DedupReport",
    "Entry",
    "MinHasher",
    "Outcome",
    "Sketch",
    "dedup_key",
    "dedupe",
    "jaccard",
    "near_duplicates",
    "rows_per_band",
    "sketch",
    "text_checksum",
]


@dataclass(frozen=True, slots=True)  # one per staged chunk: no __dict__
class Entry:
    """A chunk as dedup sees it. ``group`` is a live row's stored ``dup_group``.

    A staged chunk may come with its :class:`Sketch` (computed by the chunk worker) and no
    text; a live row comes with its text, from which the sketch's parts are computed here."""

    id: str
    doc_id: str
    position: int
    text: str
    live: bool = False
    group: str | None = None
    sketch: Sketch | None = None

    @property
    def order(self) -> tuple[bool, str, int]:
        return (not self.live, self.doc_id, self.position)

    @property
    def key(self) -> str | None:
        return self.sketch.key if self.sketch is not None else dedup_key(self.text)

    @property
    def checksum(self) -> str:
        return self.sketch.checksum if self.sketch is not None else text_checksum(self.text)


def _columns(entries: Sequence[Entry], hasher: MinHasher) -> Columns:
    cols = SketchColumns(hasher)
    sketches = [e.sketch if e.sketch is not None else sketch(e.text, hasher) for e in entries]
    cols.add([e.doc_id for e in entries], [e.position for e in entries], sketches)
    return cols.close()


def _clusters(sigs: Sequence[Signature | None], hasher: MinHasher) -> list[int]:
    """Union-find roots of the signatures' clusters, one per input (each input its own text)."""
    signed = np.asarray([s is not None for s in sigs], bool)
    bands = np.zeros((len(sigs), hasher.band_count), np.uint64)
    rows = np.zeros((len(sigs), hasher.permutations), np.uint32)
    for i, s in enumerate(sigs):
        if s is not None:
            bands[i], rows[i] = hasher.band_values(s), s
    distinct = np.frombuffer(b"".join(i.to_bytes(32, "big") for i in range(len(sigs))), (np.void, 32))
    key, roots = _cluster(bands, signed, distinct, lambda ix: rows[ix], hasher.threshold)
    return [int(roots[k]) if k >= 0 else -1 - i for i, k in enumerate(key.tolist())]


def near_duplicates(
    items: Sequence[Entry], cfg: DedupConfig, hasher: MinHasher | None = None
) -> dict[str, str]:
    """``{chunk id: canonical chunk id}`` for every near duplicate among ``items``.

    Exact copies of the canonical text are left out (checksum handles them); the canonical
    is the earliest member by ``Entry.order``. Texts too short for ``dedup_key`` take no part.
    """
    hasher = hasher or MinHasher.of(cfg)
    live = [e for e in items if e.live]
    other = [e for e in items if not e.live]
    merged = merge(_columns(other, hasher), hasher, _columns(live, hasher) if live else None)
    every = [*live, *other]
    return {every[i].id: every[c].id for i, c in merged.canon.items()}


@dataclass(frozen=True, slots=True)  # one per staged chunk: no __dict__
class Outcome:
    """What a staged chunk carries into its row."""

    group: str
    near_duplicate: bool
    bands: tuple[str, ...]


@dataclass(frozen=True)
class DedupReport:
    outcomes: dict[str, Outcome]
    exact_duplicates: int
    near_duplicates: int
    live_candidates: int


def dedupe(
    staged: Sequence[Entry],
    cfg: DedupConfig,
    fetch_live: Callable[[set[str]], Iterable[Entry]] | None = None,
) -> DedupReport:
    """Groups, flags and band keys for the staged chunks, against the live candidates.

    ``fetch_live(band keys)`` returns live rows (``live=True``) of documents this run does not
    replace that share at least one band key; only those are read and compared (``None``:
    there are none). Staged entries with a :class:`Sketch` reuse its signature and band keys.
    The run itself uses :func:`~tessera.chunking.dedup_columns.dedupe_columns` directly.
    """
    hasher = MinHasher.of(cfg)
    cols = _columns(staged, hasher)
    # None: no live row can be a candidate (no table yet, or every live document is replaced),
    # so the run's band keys are not even collected
    live = [] if fetch_live is None else list(fetch_live(cols.band_keys()))
    rep = dedupe_columns(cols, hasher, _columns(live, hasher) if live else None, [e.group for e in live])
    outcomes = {e.id: Outcome(*rep.outcome(i)) for i, e in enumerate(staged)}
    return DedupReport(outcomes, rep.exact_duplicates, len(rep.near), len(live))
