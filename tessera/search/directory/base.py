"""The directory protocol: one call that answers every user's groups, at one moment.

A directory implementation (``kind`` in ``tenants.T.directory``) is registered under its name
in :data:`DIRECTORIES`; names are taken once (:mod:`tessera.registry`), so a plug-in cannot
replace the LDAP connector.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tessera.config import DirectoryConfig
from tessera.errors import TesseraError
from tessera.registry import Registry


class DirectoryError(TesseraError):
    """The directory could not be read; the refresh failed and nothing was replaced."""


class DirectoryAuthError(DirectoryError):
    """The directory refused the bind (a wrong DN or password): nothing is served from it."""


class DirectorySuspicious(DirectoryError):
    """The directory answered, but lost more users than ``max_drop_fraction`` allows: the answer
    is refused (reported) and the previous membership kept until its grace runs out."""


class DirectoryUnavailable(TesseraError):
    """No membership young enough to trust (none yet, or the last successful refresh is older
    than ``grace_seconds``): every lookup of the tenant is refused (fail closed; API 503)."""

    def __init__(self, tenant: str, message: str) -> None:
        self.tenant = tenant
        super().__init__(f"directory of tenant {tenant!r} unavailable: {message}")


@dataclass(frozen=True)
class DirectorySnapshot:
    """Every user the directory knows, with their groups (sorted), as fetched at ``fetched_at``
    (Unix seconds). A user absent from ``users`` is unknown to the directory."""

    users: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fetched_at: float = 0.0


class Directory(Protocol):
    """Reads users and their groups; raises :class:`DirectoryError` (never a partial answer)."""

    def memberships(self) -> DirectorySnapshot: ...


DirectoryFactory = Callable[[DirectoryConfig], Directory]


def _factory(target: str) -> DirectoryFactory:
    def build(cfg: DirectoryConfig) -> Directory:
        from tessera.registry import load_target

        cls = load_target(target)
        directory: Directory = cls(cfg)  # type: ignore[operator]
        return directory

    return build


DIRECTORIES: Registry[DirectoryFactory] = Registry(
    "directory", {"ldap": "tessera.search.directory.ldap:LdapDirectory"}, _factory
)
"""Directory kinds by name (``tenants.T.directory.kind``)."""


def open_directory(cfg: DirectoryConfig) -> Directory:
    """The directory ``cfg`` names."""
    return DIRECTORIES.get(cfg.kind)(cfg)
