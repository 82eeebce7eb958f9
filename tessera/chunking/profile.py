"""The chunking profile (``chunking:``), validated against the chunker registry when built.

The profile names one strategy from the chunker registry plus its budget. ``as_dict`` is
hashed into every chunk id, so two profiles that chunk differently never share ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tessera.chunking.registry import available_chunkers
from tessera.config_values import boolean, check_keys, choice, integer, mapping, number, string
from tessera.errors import ConfigError


@dataclass(frozen=True)
class SemanticConfig:
    """Boundaries where neighbouring sentences stop being similar.

    ``threshold_kind = "percentile"``: cut where the cosine distance between neighbouring
    sentence windows is above that percentile of the document's distances. ``"absolute"``:
    cut where the distance is above ``threshold`` (0..2). ``window`` sentences on each side
    are averaged before comparing; ``min_tokens`` avoids slivers.
    """

    threshold_kind: str = "percentile"
    threshold: float = 90.0
    window: int = 1
    min_tokens: int = 16

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold_kind": self.threshold_kind,
            "threshold": self.threshold,
            "window": self.window,
            "min_tokens": self.min_tokens,
        }


@dataclass(frozen=True)
class DedupConfig:
    """Near-duplicate policy: ``flag`` keeps both chunks (flag ``near_duplicate``); ``drop``
    indexes only the first and links the dropped one in its provenance. Similarity is the
    estimated Jaccard of word ``shingle``-grams (MinHash, ``permutations`` hashes)."""

    near_duplicates: str = "flag"
    threshold: float = 0.9
    shingle: int = 5
    permutations: int = 64

    def as_dict(self) -> dict[str, Any]:
        return {
            "near_duplicates": self.near_duplicates,
            "threshold": self.threshold,
            "shingle": self.shingle,
            "permutations": self.permutations,
        }


@dataclass(frozen=True)
class AdaptiveConfig:
    """How ``strategy: adaptive`` sizes chunks from the document alone (never from questions).

    A heading section of at most ``long_section_tokens`` tokens is chunked as ``structural``
    does with the profile's ``target_tokens`` / ``overlap_tokens``: the document has structure
    at that scale. A longer section (a report or story without headings at the window's
    scale) gets windows of ``long_target_tokens`` with ``long_overlap_tokens`` of overlap.
    """

    long_section_tokens: int = 1024
    long_target_tokens: int = 256
    long_overlap_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "long_section_tokens": self.long_section_tokens,
            "long_target_tokens": self.long_target_tokens,
            "long_overlap_tokens": self.long_overlap_tokens,
        }


@dataclass(frozen=True)
class ChunkingConfig:
    """The default is the profile ``tessera eval chunking`` recommends by leave-one-corpus-out
    over the eight development corpora (``tessera.evaluation.chunking.recommended``,
    ``docs/eval/chunking/report.json``): structural 224/0 without sentence vectors. A test
    keeps the three equal.

    ``sentence_vectors``: besides the chunk's own vector, each sentence of a prose chunk is
    embedded with the chunk's breadcrumb (``tessera.chunking.probes``); dense search scores a
    chunk by its vector and its best sentence (``tessera.search.fusion``). It changes what is
    indexed, so it is part of the profile and of every chunk id. Off by default: on the eight
    development corpora it gains dense recall but nothing beyond its noise in hybrid search
    (the default mode), for 2.2x the embedded tokens (issue 16).
    """

    strategy: str = "structural"
    max_tokens: int = 256
    target_tokens: int = 224
    overlap_tokens: int = 0
    sentence_vectors: bool = False
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    adaptive: AdaptiveConfig = field(default_factory=AdaptiveConfig)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "max_tokens": self.max_tokens,
            "target_tokens": self.target_tokens,
            "overlap_tokens": self.overlap_tokens,
            "sentence_vectors": self.sentence_vectors,
        }
        if self.strategy == "semantic":
            out["semantic"] = self.semantic.as_dict()
        if self.strategy == "adaptive":
            out["adaptive"] = self.adaptive.as_dict()
        if self.dedup != DedupConfig():
            out["dedup"] = self.dedup.as_dict()
        return out


def parse_chunking(data: Mapping[str, Any], key: str = "chunking") -> ChunkingConfig:
    profile_keys = {"strategy", "max_tokens", "target_tokens", "overlap_tokens", "sentence_vectors"}
    check_keys(data, key, profile_keys | {"semantic", "dedup", "adaptive"})
    max_tokens = integer(data, "max_tokens", key, 256, 16, 8192)
    target = integer(data, "target_tokens", key, min(ChunkingConfig.target_tokens, max_tokens), 8, max_tokens)
    overlap = integer(data, "overlap_tokens", key, ChunkingConfig.overlap_tokens, 0, target - 1)
    strategy = string(data, "strategy", key, ChunkingConfig.strategy)
    if strategy not in available_chunkers():
        raise ConfigError(f"{key}.strategy", f"unknown strategy {strategy!r}; known: {available_chunkers()}")
    sem = mapping(data.get("semantic"), f"{key}.semantic")
    skey = f"{key}.semantic"
    check_keys(sem, skey, {"threshold_kind", "threshold", "window", "min_tokens"})
    kind = choice(sem, "threshold_kind", skey, "percentile", ("percentile", "absolute"))
    limit = 100.0 if kind == "percentile" else 2.0
    semantic = SemanticConfig(
        threshold_kind=kind,
        threshold=number(sem, "threshold", skey, 90.0 if kind == "percentile" else 0.5, 0.0, limit),
        window=integer(sem, "window", skey, 1, 1, 8),
        min_tokens=integer(sem, "min_tokens", skey, min(16, target), 1, target),
    )
    dd = mapping(data.get("dedup"), f"{key}.dedup")
    dkey = f"{key}.dedup"
    check_keys(dd, dkey, {"near_duplicates", "threshold", "shingle", "permutations"})
    dedup = DedupConfig(
        near_duplicates=choice(dd, "near_duplicates", dkey, "flag", ("flag", "drop")),
        threshold=number(dd, "threshold", dkey, 0.9, 0.5, 1.0),
        shingle=integer(dd, "shingle", dkey, 5, 1, 32),
        permutations=integer(dd, "permutations", dkey, 64, 16, 512),
    )
    sentence_vectors = boolean(data, "sentence_vectors", key, ChunkingConfig.sentence_vectors)
    adaptive = parse_adaptive(mapping(data.get("adaptive"), f"{key}.adaptive"), f"{key}.adaptive", max_tokens)
    return ChunkingConfig(strategy, max_tokens, target, overlap, sentence_vectors, semantic, dedup, adaptive)


def parse_adaptive(data: Mapping[str, Any], key: str, max_tokens: int) -> AdaptiveConfig:
    check_keys(data, key, {"long_section_tokens", "long_target_tokens", "long_overlap_tokens"})
    d = AdaptiveConfig()
    long_target = integer(
        data, "long_target_tokens", key, min(d.long_target_tokens, max_tokens), 8, max_tokens
    )
    return AdaptiveConfig(
        long_section_tokens=integer(data, "long_section_tokens", key, d.long_section_tokens, 1, 10_000_000),
        long_target_tokens=long_target,
        long_overlap_tokens=integer(
            data, "long_overlap_tokens", key, min(d.long_overlap_tokens, long_target - 1), 0, long_target - 1
        ),
    )
