"""The Chunker protocol and the context every chunker receives."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from tessera.chunking.profile import ChunkingConfig
from tessera.chunking.registry import chunker_versions
from tessera.chunking.tokens import TokenCounter
from tessera.types import Chunk, ParsedDocument, SourceDocument, canonical_hash

EmbedHook = Callable[[Sequence[str]], npt.NDArray[np.float32]]
"""Document texts -> L2-normalized rows (``Embedder.embed_documents``); used by ``semantic``."""


def flag_name(flag: str) -> str:
    """The name a flag counts by: ``rows:3-9`` and ``part:2/5`` count as ``rows`` and ``part``."""
    return flag.split(":", 1)[0]


@dataclass
class ChunkStats:
    """Costs chunkers report while they run (mutable; shared by every copy of a context).

    ``sentences_embedded`` / ``embed_tokens``: what the semantic chunker sent to the model
    (tokens as the model sees them, prefix and special tokens included). ``text_tokens`` /
    ``indexed_tokens``: tokens of the documents and the sum over chunks of the tokens they
    index, so ``inflation`` is the factor overlap adds to the index (1.0 without overlap).
    """

    sentences_embedded: int = 0
    embed_tokens: int = 0
    text_tokens: int = 0
    indexed_tokens: int = 0

    @property
    def inflation(self) -> float:
        return self.indexed_tokens / self.text_tokens if self.text_tokens else 1.0

    def as_dict(self) -> dict[str, float]:
        return {
            "sentences_embedded": self.sentences_embedded,
            "embed_tokens": self.embed_tokens,
            "text_tokens": self.text_tokens,
            "indexed_tokens": self.indexed_tokens,
            "inflation": round(self.inflation, 4),
        }


@dataclass(frozen=True)
class ChunkContext:
    """What a chunker needs besides the document: config, tokenizer and identities.

    ``embed`` (optional) embeds document texts for chunkers that need vectors (``semantic``);
    ``stats`` collects their costs. Neither is part of equality, hashing or ``config_hash``.
    """

    config: ChunkingConfig
    counter: TokenCounter
    model_hash: str
    document_prefix: str = ""
    embed: EmbedHook | None = field(default=None, compare=False, hash=False, repr=False)
    stats: ChunkStats = field(default_factory=ChunkStats, compare=False, hash=False, repr=False)

    @property
    def config_hash(self) -> str:
        """The profile, the tokenizer and every chunker's algorithm version: a new chunking
        algorithm re-chunks every document on the next run (unchanged texts keep their vectors)."""
        versions = chunker_versions()
        return canonical_hash(
            {"chunking": self.config.as_dict(), "tokenizer": self.counter.version, "chunkers": versions}
        )

    def tokens(self, embedding_text: str) -> int:
        """Tokens the model sees for this embedding text: prefix and special tokens included."""
        return self.counter.count(self.document_prefix + embedding_text)

    def fits(self, embedding_text: str) -> bool:
        return self.tokens(embedding_text) <= self.config.max_tokens


class Chunker(Protocol):
    name: str
    version: str

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]: ...


ChunkerFactory = Callable[[], Chunker]
