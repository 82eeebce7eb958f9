"""API keys and user directories that follow their files: revocation without a restart.

``ReloadingIdentities`` answers each request from the API keys file and the configuration
(users, their groups, tenants) as they are on disk now. Every lookup ``os.stat``s both files
(mtime_ns, size, inode, device) and reloads when either changed; whatever the stat says, both
are re-read once the last read is older than ``ttl_s`` (default 2 s), so a change that keeps
size, inode and mtime (coarse timestamps, in-place edits) is still seen. The bound: a revoked
key, user, group or tenant is refused from the first request after the file is replaced, and
at the latest ``ttl_s`` after the change.

A reload that fails (a file missing, unreadable or invalid) fails closed: the old identities
are dropped and every lookup raises :class:`~tessera.errors.ConfigError` until both files are
valid again; callers refuse the request (the API answers 503). The store location and the
models are not reloaded: they need a restart.

Groups from a tenant's directory (``tenants.T.directory``) are not cached here: each lookup
resolves them through :mod:`tessera.search.directory.membership`, whose own bound is the
directory's ``refresh_seconds`` (fail closed with ``DirectoryUnavailable`` past its grace).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tessera.config import TesseraConfig, load_config
from tessera.errors import ConfigError
from tessera.search.principal import IdentityStore, Principal

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 2.0
"""The longest a change to the keys file or the configuration goes unseen."""

Signature = tuple[int, int, int, int] | tuple[str, int]


class IdentitySource(Protocol):
    """API key -> principal; None for an unknown key. May raise ConfigError (refuse all)."""

    def principal(self, api_key: str | None) -> Principal | None: ...


@dataclass(frozen=True)
class IdentitySnapshot:
    cfg: TesseraConfig
    store: IdentityStore
    keys_path: Path


def _signature(path: Path | None) -> Signature:
    if path is None:
        return ("absent", 0)
    try:
        st = os.stat(path)
    except OSError as e:
        return ("error", e.errno or 0)
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


def load_snapshot(config_path: Path) -> IdentitySnapshot:
    """The configuration and its API keys as they are on disk now; ConfigError if unusable."""
    cfg = load_config(config_path)
    if cfg.api_keys_file is None:
        raise ConfigError("api_keys_file", "the API server needs api_keys_file in the configuration")
    return IdentitySnapshot(cfg, IdentityStore.load(cfg, cfg.api_keys_file), cfg.api_keys_file)


class ReloadingIdentities:
    """An :class:`IdentitySource` that reloads on change or after ``ttl_s``; thread-safe."""

    def __init__(
        self,
        config_path: Path,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config_path = Path(config_path)
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshot: IdentitySnapshot | None = None
        self._error: ConfigError | None = None
        self._signatures: tuple[Signature, Signature] | None = None
        self._loaded_at = 0.0
        self.reloads = 0
        """How many times the files were read (for tests and metrics)."""
        self.snapshot()  # an unusable file is an error now, at start

    @classmethod
    def from_config(cls, cfg: TesseraConfig, ttl_s: float = DEFAULT_TTL_S) -> ReloadingIdentities:
        """Follow ``cfg``'s file; raises ConfigError now if it or its keys file is unusable."""
        return cls(cfg.path, ttl_s)

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    def snapshot(self) -> IdentitySnapshot:
        """The identities to answer this request with; ConfigError while the files are unusable."""
        with self._lock:
            return self._current()

    def principal(self, api_key: str | None) -> Principal | None:
        return self.snapshot().store.principal(api_key)

    def _current(self) -> IdentitySnapshot:
        keys_path = self._snapshot.keys_path if self._snapshot is not None else None
        signatures = (_signature(self._config_path), _signature(keys_path))
        fresh = self._clock() - self._loaded_at < self._ttl_s
        if fresh and signatures == self._signatures:
            if self._snapshot is not None:
                return self._snapshot
            if self._error is not None:
                raise self._error
        # stat before reading: a change during the read shows up as a new signature next time
        self._loaded_at = self._clock()
        self.reloads += 1
        try:
            snapshot = load_snapshot(self._config_path)
        except ConfigError as e:
            if self._snapshot is not None or self._error is None:
                log.error("identity reload failed, refusing every request until fixed: %s", e)
            self._snapshot, self._error, self._signatures = None, e, signatures
            raise
        # a keys file that moved with the configuration was not stat'ed before this read:
        # a signature that matches nothing makes the next lookup read it again
        self._signatures = signatures if keys_path == snapshot.keys_path else (signatures[0], ("moved", 0))
        if self._error is not None:
            log.warning("identities valid again; serving requests")
        self._snapshot, self._error = snapshot, None
        return snapshot
