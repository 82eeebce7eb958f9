"""MinHash signatures and LSH band keys of chunk texts, and a chunk's dedup sketch.

A :class:`Sketch` is what near-duplicate detection needs of one chunk text: its checksum,
whether it is long enough to be a duplicate at all, its signature and its band keys. The chunk
workers compute it where the chunk is made, in parallel, so the step's own process holds a
few hundred bytes per chunk for the whole run instead of the text and its shingles.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from tessera.chunking.identity import dedup_key, text_checksum
from tessera.chunking.profile import DedupConfig

Signature = npt.NDArray[np.unsignedinteger[Any]]
"""MinHash minima: uint64 as computed, uint32 in a :class:`Sketch` (every value is below 2**31)."""
Bands = npt.NDArray[np.uint64]
"""A signature's LSH band keys as integers, one per band."""
CHECKSUM = np.dtype((np.void, 32))
"""A chunk's checksum (64 hex digits) as 32 raw bytes, one fixed-width cell of a column."""
_PRIME = np.uint64((1 << 31) - 1)
_SEED = 20240601
_RECALL = 0.995
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
        self.shingle, self.permutations, self.threshold = shingle, permutations, threshold
        self.rows = rows_per_band(permutations, threshold)
        self._salt = f"{shingle}:{permutations}:{self.rows}:".encode()

    @cached_property
    def _hashes(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        """The permutations' ``a`` and ``b``, drawn when a text is first hashed (a run that
        chunks nothing does not load NumPy's random generators)."""
        rng = np.random.default_rng(_SEED)
        a = rng.integers(1, int(_PRIME), size=self.permutations, dtype=np.uint64)[:, None]
        b = rng.integers(0, int(_PRIME), size=self.permutations, dtype=np.uint64)[:, None]
        return a, b

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
        a, b = self._hashes
        sig: Signature = ((a * (x % _PRIME)[None, :] + b) % _PRIME).min(axis=1)
        return sig

    @property
    def band_count(self) -> int:
        return self.permutations // self.rows

    def band_values(self, sig: Signature) -> Bands:
        """The LSH band keys as 64-bit integers (what a run holds per chunk, 8 bytes a band)."""
        r = self.rows
        digests = b"".join(
            hashlib.blake2b(
                self._salt + i.to_bytes(2, "big") + sig[i * r : (i + 1) * r].astype("<u8").tobytes(),
                digest_size=8,
            ).digest()
            for i in range(self.band_count)
        )
        return np.frombuffer(digests, ">u8").astype(np.uint64)

    def bands(self, sig: Signature | None) -> tuple[str, ...]:
        """LSH band keys; two signatures sharing one key are candidates. Keys name the config."""
        return () if sig is None else band_keys(self.band_values(sig))


def band_keys(values: Bands) -> tuple[str, ...]:
    """Band values as the keys stored in the ``dup_bands`` column (16 hex digits each)."""
    return tuple(f"{int(v):016x}" for v in values)


def jaccard(a: Signature, b: Signature) -> float:
    """The Jaccard similarity estimated from two signatures."""
    return float(np.mean(a == b))


@dataclass(frozen=True, slots=True)  # one per staged chunk: no __dict__
class Sketch:
    """One chunk text as dedup sees it. ``signature`` (uint32 minima: every value is below the
    31-bit prime) and ``bands`` (:meth:`MinHasher.band_values`) exist only for a text long
    enough to be a duplicate."""

    checksum: str
    keyed: bool
    signature: Signature | None = None
    bands: Bands | None = None

    @property
    def key(self) -> str | None:
        """The exact-duplicate key (:func:`dedup_key`): the checksum, or None for a short text."""
        return self.checksum if self.keyed else None


def sketch(text: str, hasher: MinHasher) -> Sketch:
    key = dedup_key(text)
    if key is None:
        return Sketch(text_checksum(text), False)
    sig = hasher.signature(text)
    if sig is None:
        return Sketch(key, True)
    return Sketch(key, True, sig.astype(np.uint32), hasher.band_values(sig))


@dataclass(frozen=True)
class SketchBatch:
    """The sketches of consecutive chunks as columns, in chunk order: what a chunking worker
    sends back to the step's process (:class:`tessera.chunking.dedup_columns.SketchColumns`
    appends it as it is).

    Five arrays cross the process boundary in one piece each. A tuple of :class:`Sketch`
    objects (what crossed it before) pickled two small arrays per chunk, and the step's
    process unpickled them and copied them into these columns, on the two cores the workers
    need: with 2 workers on 2,000 documents the gap between two tasks of a worker was about
    2.4 ms with the objects and 1.8 ms with this, the chunk step's worker span 0.1 s shorter."""

    checksum: npt.NDArray[np.void]
    """:data:`CHECKSUM` cells."""
    keyed: npt.NDArray[np.bool_]
    """Long enough to be a duplicate (:attr:`Sketch.keyed`)."""
    signed: npt.NDArray[np.bool_]
    """With a signature and band keys."""
    signatures: npt.NDArray[np.uint32]
    """One row of ``permutations`` minima per chunk; zeros where not signed."""
    bands: Bands
    """One row of ``band_count`` band values per chunk; zeros where not signed."""

    def __len__(self) -> int:
        return len(self.keyed)

    @classmethod
    def of(cls, sketches: Sequence[Sketch], hasher: MinHasher) -> SketchBatch:
        n = len(sketches)
        sigs = np.zeros((n, hasher.permutations), np.uint32)
        bands = np.zeros((n, hasher.band_count), np.uint64)
        signed = np.zeros(n, bool)
        for i, s in enumerate(sketches):
            if s.signature is not None and s.bands is not None:
                sigs[i], bands[i], signed[i] = s.signature, s.bands, True
        checksum = np.frombuffer(b"".join(bytes.fromhex(s.checksum) for s in sketches), CHECKSUM)
        return cls(checksum, np.fromiter((s.keyed for s in sketches), bool, n), signed, sigs, bands)
