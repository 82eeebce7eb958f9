"""Bounded retries of store requests that a throttled or contended object store refused."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from tessera.store.db import is_transient_store_error

COMMIT_ATTEMPTS = 4
"""A commit the store throttled (503 SlowDown, a timeout) is tried this often, with jittered
exponential waits of 0.5-4 s, before the run fails with a retryable ``TransientStoreError``."""

T = TypeVar("T")


def retrying(fn: Callable[[], T], sleep: Callable[[float], None] = time.sleep) -> T:
    """``fn()``, tried again while it fails with a transient store error (at most
    ``COMMIT_ATTEMPTS`` times; the last error is raised as it is)."""
    for attempt in Retrying(
        sleep=sleep,
        retry=retry_if_exception(is_transient_store_error),
        stop=stop_after_attempt(COMMIT_ATTEMPTS),
        wait=wait_exponential_jitter(initial=0.5, max=4.0),
        reraise=True,
    ):
        with attempt:
            return fn()
    raise AssertionError("unreachable: tenacity re-raises the last error")
