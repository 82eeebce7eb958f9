"""Chunkers by name, as selected by ``chunking.strategy``."""

from __future__ import annotations

from tessera.chunking.base import Chunker, ChunkerFactory
from tessera.errors import ConfigError

_REGISTRY: dict[str, ChunkerFactory] = {}


def register_chunker(name: str, factory: ChunkerFactory) -> None:
    _REGISTRY[name] = factory


def _load_builtin() -> None:
    if "structural" not in _REGISTRY:
        from tessera.chunking.structural import StructuralChunker

        register_chunker("structural", StructuralChunker)


def available_chunkers() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get_chunker(name: str) -> Chunker:
    _load_builtin()
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise ConfigError(
            "chunking.strategy", f"unknown strategy {name!r}; known: {sorted(_REGISTRY)}"
        ) from None
