"""C5: an object store without a real conditional PUT is detected at startup and refused.

The store is moto's S3 server on loopback, either directly (it honours ``If-None-Match: *``)
or behind :class:`tests.s3server.ThrottlingProxy` with ``strip_conditional`` (a store that
ignores the header, as some S3-compatible servers and gateways do).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import lancedb
import pyarrow as pa
import pytest

from tessera.cli import main
from tessera.errors import ConfigError, UnsafeStoreError
from tessera.store.probe import (
    SINGLE_WRITER_ENV,
    forget_verdicts,
    probe_conditional_put,
    require_conditional_put,
)
from tests.conftest import Workspace
from tests.s3server import MotoS3, ThrottlingProxy
from tests.test_s3_source import admin, moto, new_bucket  # noqa: F401

from .test_lifecycle import md_sections

DOCS = {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)}


@pytest.fixture(autouse=True)
def fresh_verdicts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(SINGLE_WRITER_ENV, raising=False)
    forget_verdicts()
    yield
    forget_verdicts()


@pytest.fixture
def stripping(moto: MotoS3) -> Iterator[ThrottlingProxy]:  # noqa: F811
    with ThrottlingProxy(moto.endpoint, strip_conditional=True, lifetime=300) as proxy:
        yield proxy


def _keys(admin: Any, bucket: str) -> list[str]:  # noqa: F811
    return [o["Key"] for o in admin.list_objects_v2(Bucket=bucket).get("Contents", [])]


def _lance(uri: str, endpoint: str) -> Any:
    opts = {"aws_endpoint": endpoint, "allow_http": "true", "aws_region": "us-east-1"}
    return lancedb.connect(uri, storage_options=opts)


def _concurrent_appends(uri: str, endpoint: str, rounds: int, stop_at_loss: bool) -> list[tuple[int, int]]:
    """``rounds`` times, two writers (own connections) append one row each at the same moment;
    returns (rows expected, rows found) after each round."""
    _lance(uri, endpoint).create_table("t", data=pa.table({"w": [-1]}))
    seen: list[tuple[int, int]] = []
    for r in range(rounds):
        barrier = threading.Barrier(2)
        errors: list[Exception] = []

        def append(i: int, barrier: threading.Barrier = barrier, errors: list[Exception] = errors) -> None:
            table = _lance(uri, endpoint).open_table("t")
            barrier.wait(timeout=30)
            try:
                table.add(pa.table({"w": [i]}))
            except Exception as e:  # reported by the assertion below
                errors.append(e)

        threads = [threading.Thread(target=append, args=(2 * r + i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors and not any(t.is_alive() for t in threads), errors
        seen.append((1 + 2 * (r + 1), int(_lance(uri, endpoint).open_table("t").count_rows())))
        if stop_at_loss and seen[-1][0] != seen[-1][1]:
            break
    return seen


@pytest.mark.scenario("C5")
def test_a_store_that_honours_if_none_match_passes_and_lance_relies_on_it(
    ws: Workspace,
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bucket = new_bucket(admin)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    result = probe_conditional_put(f"s3://{bucket}/tessera")
    assert result.safe and result.detail == "conditional PUT honoured" and result.rounds == 3
    assert result.races_lost <= 1
    assert not [k for k in _keys(admin, bucket) if "_tessera/probe" in k]  # the probe cleans up

    with ThrottlingProxy(moto.endpoint, lifetime=300) as logging_proxy:  # forwards every header
        monkeypatch.setenv("AWS_ENDPOINT_URL", logging_proxy.endpoint)
        ws.store_uri = f"s3://{bucket}/tessera"
        ws.tenant("acme", DOCS)
        assert ws.run("acme", "r1")["publish"]["committed"]
        manifests = logging_proxy.puts_with("if-none-match")
    # LanceDB commits every version with a create-if-absent PUT of its manifest: exactly what the
    # probe checks, so a store that ignores the header loses commits (next test).
    assert any("chunks__acme__" in p and "/_versions/" in p and p.endswith(".manifest") for p in manifests)
    assert not [k for k in _keys(admin, bucket) if "_tessera/probe" in k]

    # two writers appending at once on this store: the row count is always the sum
    uri = f"s3://{bucket}/appends"
    assert all(want == got for want, got in _concurrent_appends(uri, moto.endpoint, 3, False))


@pytest.mark.scenario("C5")
def test_a_store_that_ignores_if_none_match_is_detected_and_runs_are_refused(
    ws: Workspace,
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    stripping: ThrottlingProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bucket = new_bucket(admin)
    # Why it matters: through the stripping proxy, concurrent appends silently lose commits.
    seen = _concurrent_appends(f"s3://{bucket}/appends", stripping.endpoint, 10, True)
    assert seen[-1][1] < seen[-1][0], seen
    assert stripping.stripped > 0

    monkeypatch.setenv("AWS_ENDPOINT_URL", stripping.endpoint)
    uri = f"s3://{bucket}/tessera"
    result = probe_conditional_put(uri)
    assert not result.safe and "of an existing key was accepted" in result.detail

    ws.store_uri = uri
    ws.tenant("acme", DOCS)
    before = _keys(admin, bucket)
    with pytest.raises(UnsafeStoreError, match="does not honour conditional PUT") as err:
        ws.run("acme", "r1")
    assert isinstance(err.value, ConfigError) and err.value.key == "store.uri"
    assert SINGLE_WRITER_ENV in str(err.value)
    assert _keys(admin, bucket) == before  # refused before the run wrote anything
    # the verdict is cached per store: a second run is refused without probing again
    probes = len([p for p in stripping.puts_with("if-none-match") if "_tessera/probe" in p])
    with pytest.raises(UnsafeStoreError):
        require_conditional_put(uri)
    assert len([p for p in stripping.puts_with("if-none-match") if "_tessera/probe" in p]) == probes

    cfg = ws.config()
    code = main(["--config", str(cfg.path), "--fake-embedder", "run", "--tenant", "acme", "--run-id", "c1"])
    assert code == 1 and _keys(admin, bucket) == before  # the CLI: a typed error, exit 1

    # Single-writer mode, declared by the operator: the run goes on and publishes correctly.
    monkeypatch.setenv(SINGLE_WRITER_ENV, "1")
    out = ws.run("acme", "r2")
    assert out["publish"]["committed"] and len(ws.rows("acme")) == out["chunk"]["chunks"]

    # A local store is never probed.
    assert require_conditional_put(str(ws.root / "local-index")) is None
