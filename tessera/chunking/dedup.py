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

Cost: MinHash is O(words x permutations) per staged chunk. Live rows are never scanned in
full: ``dedupe`` asks ``fetch_live`` only for rows sharing an LSH band key (the ``dup_bands``
column) with a staged chunk, so a run reads text proportional to its candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

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

_BUCKET_LIMIT = 256


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


def _clusters(sigs: Sequence[Signature | None], hasher: MinHasher) -> list[int]:
    """Union-find roots: LSH candidates whose estimated Jaccard reaches the threshold.

    Candidates share all ``rows`` values of one band (grouped in numpy, per band, with no
    per-key Python objects). Within a band group, in input order, each member is compared
    with at most ``_BUCKET_LIMIT`` earlier ones, so a flood of similar boilerplate costs
    O(n * limit), not O(n^2).
    """
    parent = list(range(len(sigs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    index = [i for i, s in enumerate(sigs) if s is not None]
    if len(index) < 2:
        return [find(i) for i in range(len(sigs))]
    m = np.stack([np.asarray(sigs[i], np.uint32) for i in index])
    r = hasher.rows
    for b in range(hasher.permutations // r):
        band = np.ascontiguousarray(m[:, b * r : (b + 1) * r]).view(np.dtype((np.void, 4 * r))).ravel()
        _, groups = np.unique(band, return_inverse=True)
        order = np.argsort(groups, kind="stable")  # members of a group together, in input order
        cuts = np.flatnonzero(np.diff(groups[order])) + 1
        for members in np.split(order, cuts):
            for n in range(1, len(members)):
                i = index[members[n]]
                window = members[max(0, n - _BUCKET_LIMIT) : n]
                earlier = [j for j in window if find(index[j]) != find(i)]
                if not earlier:
                    continue
                estimates = (m[earlier] == m[members[n]]).mean(axis=1)
                for j, est in zip(earlier, estimates, strict=True):
                    if est >= hasher.threshold:
                        parent[find(index[j])] = find(i)
    return [find(i) for i in range(len(sigs))]


def near_duplicates(
    items: Sequence[Entry],
    cfg: DedupConfig,
    hasher: MinHasher | None = None,
    known: dict[str, Signature | None] | None = None,
) -> dict[str, str]:
    """``{chunk id: canonical chunk id}`` for every near duplicate among ``items``.

    Exact copies of the canonical text are left out (checksum handles them); the canonical
    is the earliest member by ``Entry.order``. Texts too short for ``dedup_key`` take no part.
    ``known`` holds signatures already computed, by text checksum.
    """
    hasher = hasher or MinHasher.of(cfg)
    known = {} if known is None else known
    by_text: dict[str, list[Entry]] = {}
    for it in items:
        if (key := it.key) is not None:
            by_text.setdefault(key, []).append(it)
    texts = list(by_text)
    sigs = [known[t] if t in known else _signature(by_text[t][0], hasher) for t in texts]
    roots = _clusters(sigs, hasher)
    members: dict[int, list[Entry]] = {}
    for t, root in zip(texts, roots, strict=True):
        members.setdefault(root, []).extend(by_text[t])
    out: dict[str, str] = {}
    for group in members.values():
        canon = min(group, key=lambda e: e.order)
        for e in group:
            if e.key != canon.key:  # the key is the text's checksum: another text
                out[e.id] = canon.id
    return out


def _signature(e: Entry, hasher: MinHasher) -> Signature | None:
    return e.sketch.signature if e.sketch is not None else hasher.signature(e.text)


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
    there are none). Staged
    entries with a :class:`Sketch` reuse its signature and band keys.
    """
    hasher = MinHasher.of(cfg)
    known: dict[str, Signature | None] = {}
    bands: dict[str, tuple[str, ...]] = {}
    for e in staged:
        key = e.key
        if key is not None and key not in known:
            known[key] = _signature(e, hasher)
        if e.sketch is not None:
            bands[e.id] = e.sketch.bands
        else:
            bands[e.id] = hasher.bands(known[key]) if key is not None else ()
    # None: no live row can be a candidate (no table yet, or every live document is replaced),
    # so the run's band keys are not even collected
    live = [] if fetch_live is None else list(fetch_live({k for keys in bands.values() for k in keys}))
    items = [*live, *staged]
    near = near_duplicates(items, cfg, hasher, known)
    canonical = set(near.values())
    by_id = {e.id: e for e in items if e.id in canonical}
    first: dict[str, tuple[bool, str, int]] = {}
    for e in items:
        if (key := e.key) is not None:
            first[key] = min(first.get(key, e.order), e.order)
    outcomes: dict[str, Outcome] = {}
    exact = 0
    for e in staged:
        own = e.checksum
        exact += first.get(own, e.order) != e.order
        canon = by_id.get(near.get(e.id, ""))
        if canon is None:
            outcomes[e.id] = Outcome(own, False, bands[e.id])
        else:
            outcomes[e.id] = Outcome(canon.group or canon.checksum, True, bands[e.id])
    return DedupReport(outcomes, exact, sum(o.near_duplicate for o in outcomes.values()), len(live))
