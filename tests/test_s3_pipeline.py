"""End to end on a real S3-compatible server: outages leave the published index untouched.

Each failure (pagination cut, token expiry mid-listing, server down) must leave the
previously published version byte-identical, with identical query results.
"""

from __future__ import annotations

from typing import Any

import pytest

from tessera.errors import SourceError
from tests.s3server import MotoS3, close_connections, error_response, on_call
from tests.test_s3_source import _no_token, admin, connector, moto, new_bucket, tamper  # noqa: F401
from tests.test_sources import snapshot

PAGE = 100


def corpus(n: int) -> dict[str, bytes | tuple[bytes, dict[str, str]]]:
    topics = ["deploy rollback", "vacation policy", "incident severity", "coffee"]
    files: dict[str, bytes | tuple[bytes, dict[str, str]]] = {"acme/.tessera-root": b""}
    files.update({f"acme/d/{i:03d}.md": f"# D{i}\n\n{topics[i % 4]} {i}\n".encode() for i in range(n)})
    return files


@pytest.fixture
def published(ws: Any, moto: MotoS3, admin: Any) -> tuple[Any, str, Any]:  # noqa: F811
    ws.tenant("acme", {})
    bucket = new_bucket(admin, corpus(250))
    out = ws.run("acme", "r1", connector=connector(moto.endpoint, bucket, page_size=PAGE))
    assert out["listing"]["documents"] == 250 and out["publish"]["committed"]
    return ws, bucket, snapshot(ws, "acme")


@pytest.mark.scenario("A6")
def test_pagination_cut_keeps_previous_version(published: Any, moto: MotoS3) -> None:  # noqa: F811
    ws, bucket, before = published
    conn = connector(moto.endpoint, bucket, page_size=PAGE)
    conn.client.meta.events.register("after-call.s3.ListObjectsV2", tamper(_no_token))
    with pytest.raises(SourceError, match="NextContinuationToken"):
        ws.run("acme", "r2", connector=conn)
    assert snapshot(ws, "acme") == before


@pytest.mark.scenario("A6")
def test_token_expiry_mid_listing_keeps_previous_version(published: Any, moto: MotoS3) -> None:  # noqa: F811
    ws, bucket, before = published
    conn = connector(moto.endpoint, bucket, page_size=PAGE)
    expired = on_call(2, lambda: error_response(400, "ExpiredToken", "The provided token has expired."), True)
    conn.client.meta.events.register("before-send.s3.ListObjectsV2", expired)
    with pytest.raises(SourceError, match="ExpiredToken"):
        ws.run("acme", "r2", connector=conn)
    assert snapshot(ws, "acme") == before


@pytest.mark.scenario("A6")
def test_server_down_keeps_previous_version(published: Any) -> None:
    ws, bucket, before = published
    dedicated = MotoS3()
    conn = connector(dedicated.endpoint, bucket, page_size=PAGE)
    conn.client.meta.events.register("before-send.s3", close_connections)
    dedicated.stop()
    with pytest.raises(SourceError):
        ws.run("acme", "r2", connector=conn)
    assert snapshot(ws, "acme") == before


def test_confirmed_empty_prefix_publishes_empty(ws: Any, moto: MotoS3, admin: Any) -> None:  # noqa: F811
    ws.tenant("acme", {})
    bucket = new_bucket(admin, corpus(3))
    ws.run("acme", "r1", connector=connector(moto.endpoint, bucket))
    for key in [k for k in corpus(3) if k.endswith(".md")]:
        admin.delete_object(Bucket=bucket, Key=key)
    out = ws.run("acme", "r2", connector=connector(moto.endpoint, bucket))
    assert out["listing"]["verdict"] == "empty" and "marker" in out["listing"]["proof"]
    assert ws.rows("acme") == []
