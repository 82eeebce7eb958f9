"""Chunkers by name, as selected by ``chunking.strategy``, plus per-content-type overrides.

Code is always chunked by the AST-aware ``code`` chunker when it is available, whatever the
profile's strategy: prose windows would cut functions apart. Names are taken once
(:class:`tessera.registry.Registry`): a plug-in cannot replace a built-in chunker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessera.chunking import versions
from tessera.errors import ConfigError
from tessera.registry import Registry, UnknownName, load_target, target_loaded

if TYPE_CHECKING:
    from tessera.chunking.base import Chunker, ChunkerFactory

BUILTIN = {
    "structural": "tessera.chunking.structural:StructuralChunker",
    "adaptive": "tessera.chunking.adaptive:AdaptiveChunker",
    "code": "tessera.chunking.code:CodeChunker",
    "token": "tessera.chunking.token:TokenChunker",
    "recursive": "tessera.chunking.recursive:RecursiveChunker",
    "semantic": "tessera.chunking.semantic:SemanticChunker",
}
_BY_CONTENT_TYPE = {"text/x-python": "code"}


def _factory(target: str) -> ChunkerFactory:
    def factory() -> Chunker:
        chunker: Chunker = load_target(target)()  # type: ignore[operator]
        return chunker

    return factory


CHUNKERS: Registry[ChunkerFactory] = Registry("chunker", BUILTIN, _factory)


def register_chunker(name: str, factory: ChunkerFactory) -> None:
    """Add a chunker under a new name; a taken name raises ``DuplicateRegistration``."""
    CHUNKERS.register(name, factory)


def available_chunkers() -> list[str]:
    return CHUNKERS.names()


def chunker_versions() -> dict[str, str]:
    """Name -> algorithm version of every available chunker. A built-in that is not imported
    yet answers from :mod:`tessera.chunking.versions` (a plug-in cannot take its name), so a
    run that chunks nothing imports no chunker; any other chunker is built and asked."""
    return {name: _version(name, factory) for name, factory in CHUNKERS.items()}


def _version(name: str, factory: ChunkerFactory) -> str:
    declared = versions.BUILTIN.get(name)
    if declared is not None and name in BUILTIN and not target_loaded(BUILTIN[name]):
        return declared
    return factory().version


def get_chunker(name: str) -> Chunker:
    try:
        return CHUNKERS.get(name)()
    except UnknownName as e:
        raise ConfigError("chunking.strategy", f"unknown strategy {name!r}; known: {e.known}") from e


def chunker_for(content_type: str, strategy: str) -> Chunker:
    """The chunker for a document: its content type's own, else the profile's strategy."""
    special = _BY_CONTENT_TYPE.get(content_type)
    return get_chunker(special if special is not None and special in CHUNKERS else strategy)
