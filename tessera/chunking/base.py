"""The Chunker protocol and the context every chunker receives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tessera.chunking.tokens import TokenCounter
from tessera.config import ChunkingConfig
from tessera.types import Chunk, ParsedDocument, SourceDocument, canonical_hash


@dataclass(frozen=True)
class ChunkContext:
    """What a chunker needs besides the document: config, tokenizer and identities."""

    config: ChunkingConfig
    counter: TokenCounter
    model_hash: str
    document_prefix: str = ""

    @property
    def config_hash(self) -> str:
        return canonical_hash({"chunking": self.config.as_dict(), "tokenizer": self.counter.version})

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
