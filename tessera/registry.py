"""One registry helper for every pluggable strategy (parsers, chunkers, code languages,
source connectors): names map to entries, and a name is taken once.

A second registration under a taken name raises :class:`DuplicateRegistration`, built-in
names included, so a plug-in can never silently replace a built-in parser or chunker (nor
two plug-ins each other). Built-ins are declared as ``"module:attribute"`` targets and
loaded on first lookup; a built-in whose module is not installed is simply absent.
Lookups of unknown names raise :class:`UnknownName`, which names the known ones.

There is no way to replace or remove an entry.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from tessera.errors import TesseraError

T = TypeVar("T")


class DuplicateRegistration(TesseraError):
    """A name registered twice in one registry."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        super().__init__(f"{kind} {name!r} is already registered; names are taken once")


class UnknownName(TesseraError, LookupError):
    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, known
        super().__init__(f"no {kind} named {name!r}; known: {known}")


def load_target(target: str) -> object:
    """The attribute named by ``"module:attribute"``."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def target_available(target: str) -> bool:
    return importlib.util.find_spec(target.partition(":")[0]) is not None


def target_loaded(target: str) -> bool:
    """Whether the module of ``"module:attribute"`` is imported already (asking it costs no import)."""
    return target.partition(":")[0] in sys.modules


class Registry(Generic[T]):
    """Named entries of one kind. ``builtin``: name -> ``"module:attribute"``; ``wrap`` turns
    a built-in target into its entry (e.g. a factory that imports the module when called)."""

    def __init__(
        self,
        kind: str,
        builtin: Mapping[str, str] | None = None,
        wrap: Callable[[str], T] | None = None,
    ) -> None:
        if builtin and wrap is None:
            raise TypeError("a registry with built-ins needs a wrap function")
        self.kind = kind
        self._builtin = dict(builtin or {})
        self._wrap = wrap
        self._entries: dict[str, T] = {}
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        assert self._wrap is not None or not self._builtin
        for name, target in self._builtin.items():
            if name not in self._entries and self._wrap is not None and target_available(target):
                self._entries[name] = self._wrap(target)

    def register(self, name: str, entry: T) -> None:
        if name in self._entries or name in self._builtin:
            raise DuplicateRegistration(self.kind, name)
        self._entries[name] = entry

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.kind, name, self.names()) from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return sorted(self._entries.items())
