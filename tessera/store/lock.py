"""One writer per tenant: an advisory file lock held across the publish phase.

Dagster's tag concurrency limit (``dagster/partition``) queues runs; runs executed
in-process bypass that queue, so the core guards the publish itself.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tessera.config import validate_tenant_id
from tessera.errors import TenantLockedError


@contextmanager
def tenant_lock(lock_dir: Path, tenant: str) -> Iterator[None]:
    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / f"{validate_tenant_id(tenant)}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise TenantLockedError(f"tenant {tenant!r} is being published by another run") from e
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
