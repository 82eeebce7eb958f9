"""Chunkers by name, as selected by ``chunking.strategy``, plus per-content-type overrides.

Code is always chunked by the AST-aware ``code`` chunker when it is available, whatever the
profile's strategy: prose windows would cut functions apart.
"""

from __future__ import annotations

import importlib
import importlib.util

from tessera.chunking.base import Chunker, ChunkerFactory
from tessera.errors import ConfigError

_BUILTIN = {
    "structural": "tessera.chunking.structural:StructuralChunker",
    "adaptive": "tessera.chunking.adaptive:AdaptiveChunker",
    "code": "tessera.chunking.code:CodeChunker",
    "token": "tessera.chunking.token:TokenChunker",
    "recursive": "tessera.chunking.recursive:RecursiveChunker",
    "semantic": "tessera.chunking.semantic:SemanticChunker",
}
_BY_CONTENT_TYPE = {"text/x-python": "code"}
_REGISTRY: dict[str, ChunkerFactory] = {}


def register_chunker(name: str, factory: ChunkerFactory) -> None:
    _REGISTRY[name] = factory


def _load_builtin() -> None:
    for name, target in _BUILTIN.items():
        module, cls = target.split(":")
        if name in _REGISTRY or importlib.util.find_spec(module) is None:
            continue

        def factory(module: str = module, cls: str = cls) -> Chunker:
            chunker: Chunker = getattr(importlib.import_module(module), cls)()
            return chunker

        register_chunker(name, factory)


def available_chunkers() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def chunker_versions() -> dict[str, str]:
    """Name -> algorithm version of every available chunker."""
    _load_builtin()
    return {name: factory().version for name, factory in sorted(_REGISTRY.items())}


def get_chunker(name: str) -> Chunker:
    _load_builtin()
    try:
        return _REGISTRY[name]()
    except KeyError:
        known = sorted(_REGISTRY)
        raise ConfigError("chunking.strategy", f"unknown strategy {name!r}; known: {known}") from None


def chunker_for(content_type: str, strategy: str) -> Chunker:
    """The chunker for a document: its content type's own, else the profile's strategy."""
    _load_builtin()
    special = _BY_CONTENT_TYPE.get(content_type)
    return get_chunker(special if special in _REGISTRY else strategy)
