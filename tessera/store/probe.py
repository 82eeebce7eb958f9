"""Startup probe: does the object store honour conditional PUTs (``If-None-Match: *``)?

LanceDB commits a table version by writing ``_versions/<n>.manifest`` with ``If-None-Match:
*``: of two writers racing for version ``n``, the store must refuse the second, which then
rebases and retries. A store that ignores the header (some S3-compatible servers, gateways
or proxies) accepts both, and one commit is silently lost. Measured through a loopback proxy
that strips the header: 5 rounds of two concurrent appends left 6 rows instead of 11.

The probe writes one fresh key under ``<prefix>/_tessera/probe/`` three times with two racing
create-if-absent PUTs (boto3 ``put_object(IfNoneMatch="*")``, the request LanceDB sends),
then once more after both finished. A store that honours the header refuses that last PUT
with ``412 PreconditionFailed`` and lets at most one racing PUT win. The store is unsafe
when the last PUT succeeds or is refused as unsupported (``501``), or when both racing PUTs
win in a majority of the rounds (a conditional PUT that is not atomic; moto's check-then-put
loses about one race in 200, so a single lost race is logged, not refused).

:func:`require_conditional_put` runs the probe once per store URI and endpoint in a process
(:class:`~tessera.pipeline.context.RunContext` calls it before a run touches an ``s3://``
store). On an unsafe store it raises :class:`UnsafeStoreError` (a ``ConfigError`` on
``store.uri``: retrying cannot fix it), unless the operator declared single-writer mode with
``TESSERA_SINGLE_WRITER=1``: they guarantee that one process at a time writes the store, and
the run goes on with a warning. Readers (search, the API) never probe.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from tessera.errors import PublishError, UnsafeStoreError

log = logging.getLogger(__name__)

SINGLE_WRITER_ENV = "TESSERA_SINGLE_WRITER"  # named in UnsafeStoreError's message
ROUNDS = 3
_REFUSED = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}
_UNSUPPORTED = {"NotImplemented", "501"}


@dataclass(frozen=True)
class ProbeResult:
    uri: str
    endpoint: str
    safe: bool
    detail: str
    rounds: int
    races_lost: int  # rounds in which both racing create-if-absent PUTs succeeded


def _code(e: Exception) -> str:
    response = getattr(e, "response", None) or {}
    error = response.get("Error", {})
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return str(error.get("Code") or status or type(e).__name__)


def _split(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    return bucket, prefix.strip("/")


def _endpoint() -> str:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""


def _client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=5, read_timeout=15)
    return boto3.client("s3", endpoint_url=endpoint or None, config=config)


def _create(s3: Any, bucket: str, key: str, body: bytes) -> str:
    """``ok``, ``refused`` or ``unsupported``; any other failure propagates."""
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
        return "ok"
    except Exception as e:
        code = _code(e)
        if code in _REFUSED:
            return "refused"
        if code in _UNSUPPORTED:
            return "unsupported"
        raise


def _race(s3: Any, bucket: str, key: str) -> list[str]:
    barrier = threading.Barrier(2)
    outcomes: list[str] = []
    errors: list[Exception] = []

    def write(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            outcomes.append(_create(s3, bucket, key, b"tessera-probe-%d" % i))
        except Exception as e:  # re-raised below, in the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    if errors:
        raise errors[0]
    if len(outcomes) != 2:
        raise TimeoutError("a probe write did not finish within 60 s")
    return outcomes


def probe_conditional_put(uri: str, rounds: int = ROUNDS, s3: Any = None) -> ProbeResult:
    """Probe the bucket of ``uri`` (``s3://bucket/prefix``); the probe keys are deleted after.

    Raises :class:`PublishError` when the probe itself cannot write (store down, no access)."""
    bucket, prefix = _split(uri)
    endpoint = _endpoint()
    s3 = s3 or _client(endpoint)
    base = "/".join(p for p in (prefix, "_tessera", "probe", uuid.uuid4().hex) if p)
    keys: list[str] = []
    races_lost, detail, safe = 0, "conditional PUT honoured", True
    try:
        for i in range(rounds):
            key = f"{base}/{i}"
            keys.append(key)
            outcomes = _race(s3, bucket, key)
            if "unsupported" in outcomes:
                safe, detail = False, "a create-if-absent PUT was refused as not implemented"
                break
            races_lost += outcomes.count("ok") == 2
            if outcomes.count("ok") == 0:
                raise PublishError(f"store probe on {uri}: neither create-if-absent PUT of a new key won")
            again = _create(s3, bucket, key, b"tessera-probe-again")
            if again != "refused":
                safe = False
                detail = (
                    "a create-if-absent PUT of an existing key was accepted"
                    if again == "ok"
                    else "a create-if-absent PUT was refused as not implemented"
                )
                break
        if safe and races_lost * 2 > rounds:
            safe = False
            detail = f"both racing create-if-absent PUTs won in {races_lost} of {rounds} rounds"
    except PublishError:
        raise
    except Exception as e:
        raise PublishError(f"store probe on {uri} failed: {type(e).__name__}: {e}") from e
    finally:
        for key in keys:
            try:
                s3.delete_object(Bucket=bucket, Key=key)
            except Exception as e:  # a leftover probe key is harmless; say so
                log.warning("store probe: could not delete %s/%s: %s", bucket, key, e)
    if safe and races_lost:
        log.warning("store probe on %s: both racing PUTs won in %d of %d rounds", uri, races_lost, rounds)
    return ProbeResult(uri, endpoint, safe, detail, rounds, races_lost)


_verdicts: dict[tuple[str, str], ProbeResult] = {}
_lock = threading.Lock()


def require_conditional_put(uri: str) -> ProbeResult | None:
    """Probe an ``s3://`` store once per process (per URI and endpoint); None for a local store.

    Raises :class:`UnsafeStoreError` on a store that ignores conditional PUTs, unless
    ``TESSERA_SINGLE_WRITER=1`` declares single-writer mode."""
    if not uri.startswith("s3://"):
        return None
    cache_key = (uri, _endpoint())
    with _lock:
        result = _verdicts.get(cache_key)
        if result is None:
            result = probe_conditional_put(uri)
            _verdicts[cache_key] = result
    if not result.safe:
        if os.environ.get(SINGLE_WRITER_ENV) == "1":
            log.warning("%s: %s; single-writer mode (%s=1) declared", uri, result.detail, SINGLE_WRITER_ENV)
        else:
            raise UnsafeStoreError(uri, result.detail)
    return result


def forget_verdicts() -> None:
    """Drop the cached verdicts (tests; an operator who switched the store behind an endpoint)."""
    with _lock:
        _verdicts.clear()
