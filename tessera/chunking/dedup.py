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

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tessera.chunking.identity import dedup_key, text_checksum
from tessera.chunking.profile import DedupConfig

__all__ = [
    "DedupReport",
    "Entry",
    "MinHasher",
    "Outcome",
    "dedup_key",
    "dedupe",
    "jaccard",
    "near_duplicates",
    "rows_per_band",
    "text_checksum",
]

Signature = npt.NDArray[np.uint64]
_PRIME = np.uint64((1 << 31) - 1)
_SEED = 20240601
_RECALL = 0.995
_BUCKET_LIMIT = 256
_WORD = re.compile(r"\w+")


def rows_per_band(permutations: int, threshold: float) -> int:
    """The most rows per band whose LSH still finds a pair at ``threshold`` with 99.5% odds."""
    for r in range(permutations, 1, -1):
        if 1.0 - (1.0 - threshold**r) ** (permutations // r) >= _RECALL:
            return r
    return 1


class MinHasher:
    """Deterministic MinHash over lower-cased word shingles, with LSH band keys."""

    def __init__(self, shingle: int = 5, permutations: int = 64, threshold: float = 0.9) -> None:
        rng = np.random.default_rng(_SEED)
        self.shingle, self.permutations, self.threshold = shingle, permutations, threshold
        self._a = rng.integers(1, int(_PRIME), size=permutations, dtype=np.uint64)[:, None]
        self._b = rng.integers(0, int(_PRIME), size=permutations, dtype=np.uint64)[:, None]
        self.rows = rows_per_band(permutations, threshold)
        self._salt = f"{shingle}:{permutations}:{self.rows}:".encode()

    @classmethod
    def of(cls, cfg: DedupConfig) -> MinHasher:
        return cls(cfg.shingle, cfg.permutations, cfg.threshold)

    def shingles(self, text: str) -> set[str]:
        words = _WORD.findall(text.lower())
        if len(words) <= self.shingle:
            return {" ".join(words)} if words else set()
        return {" ".join(words[i : i + self.shingle]) for i in range(len(words) - self.shingle + 1)}

    def signature(self, text: str) -> Signature | None:
        """``permutations`` minima of ``(a*x + b) mod p``; None for a text without words."""
        grams = self.shingles(text)
        if not grams:
            return None
        x = np.fromiter(
            (int.from_bytes(hashlib.blake2b(g.encode(), digest_size=4).digest(), "big") for g in grams),
            dtype=np.uint64,
            count=len(grams),
        )
        sig: Signature = ((self._a * (x % _PRIME)[None, :] + self._b) % _PRIME).min(axis=1)
        return sig

    def bands(self, sig: Signature | None) -> tuple[str, ...]:
        """LSH band keys; two signatures sharing one key are candidates. Keys name the config."""
        if sig is None:
            return ()
        r = self.rows
        return tuple(
            hashlib.blake2b(
                self._salt + i.to_bytes(2, "big") + sig[i * r : (i + 1) * r].astype("<u8").tobytes(),
                digest_size=8,
            ).hexdigest()
            for i in range(self.permutations // r)
        )


def jaccard(a: Signature, b: Signature) -> float:
    """The Jaccard similarity estimated from two signatures."""
    return float(np.mean(a == b))


@dataclass(frozen=True)
class Entry:
    """A chunk as dedup sees it. ``group`` is a live row's stored ``dup_group``."""

    id: str
    doc_id: str
    position: int
    text: str
    live: bool = False
    group: str | None = None

    @property
    def order(self) -> tuple[bool, str, int]:
        return (not self.live, self.doc_id, self.position)


def _clusters(sigs: Sequence[Signature | None], hasher: MinHasher) -> list[int]:
    """Union-find roots: LSH candidates whose estimated Jaccard reaches the threshold.

    A bucket compares each member with at most ``_BUCKET_LIMIT`` earlier ones, so a flood of
    similar boilerplate costs O(n * limit), not O(n^2).
    """
    parent = list(range(len(sigs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    present = {i: s for i, s in enumerate(sigs) if s is not None}
    buckets: dict[str, list[int]] = {}
    for i, sig in present.items():
        for key in hasher.bands(sig):
            buckets.setdefault(key, []).append(i)
    for members in buckets.values():
        for n in range(1, len(members)):
            i = members[n]
            earlier = [j for j in members[max(0, n - _BUCKET_LIMIT) : n] if find(j) != find(i)]
            if not earlier:
                continue
            estimates = (np.stack([present[j] for j in earlier]) == present[i]).mean(axis=1)
            for j, est in zip(earlier, estimates, strict=True):
                if est >= hasher.threshold:
                    parent[find(j)] = find(i)
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
        if (key := dedup_key(it.text)) is not None:
            by_text.setdefault(key, []).append(it)
    texts = list(by_text)
    sigs = [known[t] if t in known else hasher.signature(by_text[t][0].text) for t in texts]
    roots = _clusters(sigs, hasher)
    members: dict[int, list[Entry]] = {}
    for t, root in zip(texts, roots, strict=True):
        members.setdefault(root, []).extend(by_text[t])
    out: dict[str, str] = {}
    for group in members.values():
        canon = min(group, key=lambda e: e.order)
        for e in group:
            if e.text != canon.text:
                out[e.id] = canon.id
    return out


@dataclass(frozen=True)
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
    fetch_live: Callable[[set[str]], Iterable[Entry]] = lambda _keys: (),
) -> DedupReport:
    """Groups, flags and band keys for the staged chunks, against the live candidates.

    ``fetch_live(band keys)`` returns live rows (``live=True``) of documents this run does not
    replace that share at least one band key; only those are read and compared.
    """
    hasher = MinHasher.of(cfg)
    known: dict[str, Signature | None] = {}
    for e in staged:
        if (key := dedup_key(e.text)) is not None and key not in known:
            known[key] = hasher.signature(e.text)
    bands = {e.id: hasher.bands(known.get(text_checksum(e.text))) for e in staged}
    live = list(fetch_live({k for keys in bands.values() for k in keys}))
    items = [*live, *staged]
    near = near_duplicates(items, cfg, hasher, known)
    by_id = {e.id: e for e in items}
    first: dict[str, tuple[bool, str, int]] = {}
    for e in items:
        if (key := dedup_key(e.text)) is not None:
            first[key] = min(first.get(key, e.order), e.order)
    outcomes: dict[str, Outcome] = {}
    exact = 0
    for e in staged:
        own = text_checksum(e.text)
        exact += first.get(own, e.order) != e.order
        canon = by_id.get(near.get(e.id, ""))
        if canon is None:
            outcomes[e.id] = Outcome(own, False, bands[e.id])
        else:
            group = canon.group or text_checksum(canon.text)
            outcomes[e.id] = Outcome(group, True, bands[e.id])
    return DedupReport(outcomes, exact, sum(o.near_duplicate for o in outcomes.values()), len(live))
