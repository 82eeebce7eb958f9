"""A tenant's directory membership: persisted, refreshed on a bound, fail closed after a grace.

**Where.** ``{store.work_dir}/{tenant}/.directory-membership.json`` holds the last successful
snapshot (users -> groups, ``fetched_at``), written atomically (temporary file, fsync,
``os.replace``) by every successful refresh. It records the tenant and the directory it came
from; a file for another tenant or another directory is ignored (as if absent).

**Who refreshes.** Any lookup (:func:`directory_groups`: the API server, ``tessera search``,
the Python API) refreshes when the snapshot is ``refresh_seconds`` old or more, at most one
attempt per ``refresh_seconds`` per process, one thread at a time (others keep answering
from the snapshot they have). The Dagster sensor ``directory_refresh_sensor`` refreshes too,
so the file stays young between requests.

**The bound.** A change in the directory (a user added to or removed from a group, a user
deleted) reaches search within ``refresh_seconds`` of the change (plus one refresh's
duration), on every surface: principals are resolved per request, never cached longer.

**Outage.** While refreshes fail, the last snapshot keeps serving until ``grace_seconds``
after it was fetched; then every lookup of the tenant raises :class:`DirectoryUnavailable`
(the API answers 503, the CLI exits with the error): never the configuration's groups alone,
never an empty filter. A directory that answers but lost more than ``max_drop_fraction`` of
the users is refused as :class:`DirectorySuspicious` (logged as an error, the old snapshot
kept, so the grace runs out unless an operator acts: raise the fraction or delete the file).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from tessera.config import DirectoryConfig, TesseraConfig
from tessera.errors import ConfigError
from tessera.search.directory.base import (
    Directory,
    DirectoryError,
    DirectorySnapshot,
    DirectorySuspicious,
    DirectoryUnavailable,
    open_directory,
)

log = logging.getLogger(__name__)
MEMBERSHIP_FILE = ".directory-membership.json"
CLOCK_SKEW_S = 60.0
"""A snapshot dated further in the future than this (the clock went back) is not trusted."""


@dataclass(frozen=True)
class _File:
    format: Literal[1]
    tenant: str
    directory: str
    fetched_at: float
    users: dict[str, list[str]]


_ADAPTER = TypeAdapter(_File)


def membership_path(work_dir: Path, tenant: str) -> Path:
    return work_dir / tenant / MEMBERSHIP_FILE


def load_membership(path: Path, tenant: str, cfg: DirectoryConfig) -> DirectorySnapshot | None:
    """The persisted snapshot, or None (absent, unreadable, corrupt, another tenant/directory)."""
    try:
        data = _ADAPTER.validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as e:
        log.warning("directory membership %s is ignored: %s", path, type(e).__name__)
        return None
    if data.tenant != tenant or data.directory != cfg.identity:
        log.info("directory membership %s belongs to another tenant or directory; ignored", path)
        return None
    users = {u: tuple(sorted(set(g))) for u, g in data.users.items()}
    return DirectorySnapshot(users, data.fetched_at)


def save_membership(path: Path, tenant: str, cfg: DirectoryConfig, snap: DirectorySnapshot) -> None:
    data = _File(1, tenant, cfg.identity, snap.fetched_at, {u: list(g) for u, g in snap.users.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{MEMBERSHIP_FILE}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_ADAPTER.dump_json(data))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _directory_of(cfg: TesseraConfig, tenant: str) -> DirectoryConfig:
    directory = cfg.tenant(tenant).directory
    if directory is None:
        raise ConfigError(f"tenants.{tenant}.directory", "the tenant has no directory")
    return directory


def refresh_tenant(
    cfg: TesseraConfig, tenant: str, directory: Directory | None = None, accept_drop: bool = False
) -> DirectorySnapshot:
    """Read the tenant's directory now and persist the answer; DirectoryError (nothing
    replaced) when it cannot be read or lost more users than ``max_drop_fraction`` allows
    (``accept_drop``: an operator's decision that the loss is real, ``tessera directory
    refresh --accept-drop``)."""
    dcfg = _directory_of(cfg, tenant)
    path = membership_path(cfg.store.work_dir, tenant)
    new = (directory or open_directory(dcfg)).memberships()
    old = load_membership(path, tenant, dcfg)
    if old is not None and old.users and not accept_drop:
        lost = sum(1 for u in old.users if u not in new.users) / len(old.users)
        if lost > dcfg.max_drop_fraction:
            raise DirectorySuspicious(
                f"{dcfg.url} answered {len(new.users)} users where {len(old.users)} were known "
                f"({lost:.0%} lost > max_drop_fraction {dcfg.max_drop_fraction:.0%}); refused, the "
                "previous membership serves until its grace runs out"
            )
    if not new.users:
        log.warning("directory of %r answered no users: nobody gets a directory group", tenant)
    save_membership(path, tenant, dcfg, new)
    log.info("directory of %r refreshed: %d users", tenant, len(new.users))
    return new


class _State:
    """One process's view of one tenant's membership file, and its refresh attempts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.refreshing = threading.Lock()
        self.signature: tuple[int, int, int] | None = None
        self.snapshot: DirectorySnapshot | None = None
        self.attempted_at = float("-inf")
        self.error = ""

    def current(self, path: Path, tenant: str, dcfg: DirectoryConfig) -> DirectorySnapshot | None:
        try:
            st = os.stat(path)
            sig: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            sig = None
        with self.lock:
            if sig != self.signature or sig is None:
                self.snapshot = None if sig is None else load_membership(path, tenant, dcfg)
                self.signature = sig
            return self.snapshot


_STATES: dict[tuple[str, str, str], _State] = {}
_STATES_LOCK = threading.Lock()


def _state(path: Path, tenant: str, dcfg: DirectoryConfig) -> _State:
    with _STATES_LOCK:
        return _STATES.setdefault((str(path), tenant, dcfg.identity), _State())


def _refresh(cfg: TesseraConfig, tenant: str, state: _State, now: float, wait: bool) -> None:
    """One attempt, unless one ran within ``refresh_seconds`` or another thread is at it."""
    dcfg = _directory_of(cfg, tenant)
    if now - state.attempted_at < dcfg.refresh_seconds:
        return
    if not state.refreshing.acquire(blocking=wait):
        return
    try:
        if now - state.attempted_at < dcfg.refresh_seconds:
            return  # another thread tried while this one waited
        state.attempted_at = now
        refresh_tenant(cfg, tenant)
        state.error = ""
    except (DirectoryError, OSError) as e:  # OSError: the membership file could not be written
        state.error = str(e)
        log.error("directory refresh of %r failed (last membership kept within its grace): %s", tenant, e)
    finally:
        state.refreshing.release()


def directory_groups(
    cfg: TesseraConfig, tenant: str, user: str, now: float | None = None
) -> tuple[str, ...] | None:
    """``user``'s groups in the tenant's directory (None: no directory, or a user it does not
    know); refreshes when due; :class:`DirectoryUnavailable` past the grace (fail closed)."""
    dcfg = cfg.tenant(tenant).directory
    if dcfg is None:
        return None
    now = time.time() if now is None else now
    path = membership_path(cfg.store.work_dir, tenant)
    state = _state(path, tenant, dcfg)
    snap = state.current(path, tenant, dcfg)
    if snap is None or now - snap.fetched_at >= dcfg.refresh_seconds:
        _refresh(cfg, tenant, state, now, wait=snap is None)
        snap = state.current(path, tenant, dcfg)
    why = f" (last refresh: {state.error})" if state.error else ""
    if snap is None:
        raise DirectoryUnavailable(tenant, f"no membership has been read yet{why}")
    age = now - snap.fetched_at
    if age > dcfg.grace_seconds or age < -CLOCK_SKEW_S:
        raise DirectoryUnavailable(
            tenant, f"the last membership is {age:.0f} s old, past grace_seconds={dcfg.grace_seconds:g}{why}"
        )
    return snap.users.get(user)


@dataclass(frozen=True)
class RefreshOutcome:
    """One tenant's turn in :func:`refresh_due`: refreshed (``users``), not due, or failed."""

    tenant: str
    users: int = 0
    due: bool = True
    error: str = ""


def refresh_due(cfg: TesseraConfig, now: float | None = None) -> list[RefreshOutcome]:
    """Refresh every tenant whose membership is ``refresh_seconds`` old or more (the sensor);
    a failure is reported in its outcome, never raised: other tenants still refresh."""
    now = time.time() if now is None else now
    outcomes: list[RefreshOutcome] = []
    for tenant, t in sorted(cfg.tenants.items()):
        if t.directory is None:
            continue
        snap = load_membership(membership_path(cfg.store.work_dir, tenant), tenant, t.directory)
        if snap is not None and 0 <= now - snap.fetched_at < t.directory.refresh_seconds:
            outcomes.append(RefreshOutcome(tenant, len(snap.users), due=False))
            continue
        try:
            outcomes.append(RefreshOutcome(tenant, len(refresh_tenant(cfg, tenant).users)))
        except (DirectoryError, OSError) as e:
            log.error("directory refresh of %r failed: %s", tenant, e)
            outcomes.append(RefreshOutcome(tenant, error=str(e)))
    return outcomes
