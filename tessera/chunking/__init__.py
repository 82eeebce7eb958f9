"""Chunking: strategies behind one Protocol, selected by name."""

from tessera.chunking.base import ChunkContext, Chunker
from tessera.chunking.registry import available_chunkers, get_chunker, register_chunker

__all__ = ["ChunkContext", "Chunker", "available_chunkers", "get_chunker", "register_chunker"]
