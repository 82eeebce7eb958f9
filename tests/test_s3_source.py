"""The S3 connector against a real S3-compatible server (moto) on 127.0.0.1."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tessera.config import AccessRule, SourceConfig, TenantConfig
from tessera.errors import SourceError
from tessera.sources.base import Verdict
from tessera.sources.s3 import S3Connector
from tessera.types import ALWAYS, NEVER, sha256_hex
from tests.s3server import (
    AWS_ENV,
    AWS_UNSET,
    MotoS3,
    client,
    close_connections,
    create_user_key,
    error_response,
    on_call,
    set_auth,
)

DEFAULT = AccessRule(groups=("staff",))


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoS3]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in AWS_ENV.items():
            mp.setenv(name, value)
        for name in AWS_UNSET:
            mp.delenv(name, raising=False)
        server = MotoS3()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def admin(moto: MotoS3) -> Any:
    return client(moto.endpoint)


def new_bucket(admin: Any, files: dict[str, bytes | tuple[bytes, dict[str, str]]] | None = None) -> str:
    name = f"t-{uuid.uuid4().hex[:16]}"
    admin.create_bucket(Bucket=name)
    for key, value in (files or {}).items():
        body, meta = value if isinstance(value, tuple) else (value, {})
        admin.put_object(Bucket=name, Key=key, Body=body, Metadata=meta)
    return name


def docs(n: int, prefix: str = "acme/") -> dict[str, bytes | tuple[bytes, dict[str, str]]]:
    files: dict[str, bytes | tuple[bytes, dict[str, str]]] = {f"{prefix}.tessera-root": b""}
    files.update({f"{prefix}d/{i:04d}.md": f"# Doc {i}\n".encode() for i in range(n)})
    return files


def connector(
    endpoint: str, bucket: str, prefix: str = "acme/", page_size: int = 1000, **kw: Any
) -> S3Connector:
    return S3Connector("acme", bucket, prefix, DEFAULT, client(endpoint, **kw), page_size=page_size)


def count_calls(conn: S3Connector, event: str) -> list[int]:
    calls: list[int] = []
    conn.client.meta.events.register(event, lambda **_: calls.append(1))
    return calls


@pytest.fixture(scope="module")
def many(moto: MotoS3, admin: Any) -> str:
    return new_bucket(admin, docs(1050, "many/"))


@pytest.fixture(scope="module")
def three_hundred(moto: MotoS3, admin: Any) -> str:
    return new_bucket(admin, docs(300))


# 1. a realistic tenant prefix ------------------------------------------------------------

POLICY = b"""documents:
  - match: "policies/*"
    groups: [hr]
    effective_from: 2023-05-01
"""


def test_lists_documents_with_access_dates_and_uri(moto: MotoS3, admin: Any) -> None:
    meta = {
        "tessera-readers": "dave, carol",
        "tessera-groups": "legal",
        "tessera-effective-from": "2024-01-01T00:00:00Z",
        "tessera-effective-to": "2030-06-30",
    }
    bodies = {
        "meta.md": b"# Meta\nobject metadata ACL\n",
        "policies/hr.md": b"# HR\nsidecar rule\n",
        "policies/override.md": b"# Override\n",
        "notes/plain & ü.md": b"# Plain\ntenant default\n",
    }
    bucket = new_bucket(
        admin,
        {
            "acme/.tessera-root": b"",
            "acme/_access.yaml": POLICY,
            "acme/meta.md": (bodies["meta.md"], meta),
            "acme/policies/hr.md": bodies["policies/hr.md"],
            "acme/policies/override.md": (bodies["policies/override.md"], {"tessera-readers": "erin"}),
            "acme/notes/plain & ü.md": bodies["notes/plain & ü.md"],
            "acme/image.png": b"\x89PNG\r\n",
            "acme/folder/": b"",
            "acme/.hidden/secret.md": b"# hidden\n",
            "acme-other/leak.md": b"# another tenant\n",
            "readme.md": b"# bucket root\n",
        },
    )
    # prefix without the trailing slash: still only "acme/...", never "acme-other/..."
    source = SourceConfig("s3", bucket=bucket, prefix="acme", endpoint_url=moto.endpoint, timeout_seconds=5)
    conn = S3Connector.from_config(TenantConfig("acme", source, DEFAULT))
    before = datetime.now(UTC) - timedelta(minutes=5)
    listing = conn.list()

    assert listing.verdict is Verdict.COMPLETE and listing.failed == ()
    assert "root marker present" in listing.proof and "1 page listed, 9 objects" in listing.proof
    by_id = {d.doc_id: d for d in listing.documents}
    assert sorted(by_id) == sorted(bodies)
    for doc_id, body in bodies.items():
        doc = by_id[doc_id]
        assert doc.tenant == "acme" and doc.content_type == "text/markdown"
        assert doc.revision == sha256_hex(body) and doc.size == len(body)
        assert doc.uri == f"s3://{bucket}/acme/{doc_id}"
        assert doc.modified_at.tzinfo is not None and doc.modified_at.utcoffset() == timedelta(0)
        assert before <= doc.modified_at <= datetime.now(UTC) + timedelta(minutes=5)
        assert conn.read(doc) == body

    m = by_id["meta.md"]
    assert (m.readers, m.groups) == (("carol", "dave"), ("legal",))
    assert (m.effective_from, m.effective_to) == (
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2030, 6, 30, tzinfo=UTC),
    )
    hr = by_id["policies/hr.md"]
    assert (hr.readers, hr.groups) == ((), ("hr",))
    assert (hr.effective_from, hr.effective_to) == (datetime(2023, 5, 1, tzinfo=UTC), NEVER)
    # metadata replaces the ACL; the dates it leaves unset still come from the sidecar rule
    o = by_id["policies/override.md"]
    assert (o.readers, o.groups, o.effective_from) == (("erin",), (), datetime(2023, 5, 1, tzinfo=UTC))
    p = by_id["notes/plain & ü.md"]
    assert (p.readers, p.groups, p.effective_from, p.effective_to) == ((), ("staff",), ALWAYS, NEVER)


# 2. pagination -----------------------------------------------------------------------------


def test_paginates_past_1000_keys(moto: MotoS3, many: str) -> None:
    conn = connector(moto.endpoint, many, "many/")
    pages = count_calls(conn, "before-call.s3.ListObjectsV2")
    listing = conn.list()
    assert listing.verdict is Verdict.COMPLETE
    assert {d.doc_id for d in listing.documents} == {f"d/{i:04d}.md" for i in range(1050)}
    assert len(pages) == 2 and "2 pages listed, 1051 objects, IsTruncated=false" in listing.proof


def test_small_pages_are_counted_in_the_proof(moto: MotoS3, three_hundred: str) -> None:
    conn = connector(moto.endpoint, three_hundred, page_size=100)
    pages = count_calls(conn, "before-call.s3.ListObjectsV2")
    listing = conn.list()
    assert {d.doc_id for d in listing.documents} == {f"d/{i:04d}.md" for i in range(300)}
    assert len(pages) == 4 and "4 pages listed, 301 objects" in listing.proof


# 3. emptiness needs proof ------------------------------------------------------------------


def test_empty_bucket_is_empty_with_proof(moto: MotoS3, admin: Any) -> None:
    bucket = new_bucket(admin)
    listing = connector(moto.endpoint, bucket, "").list()
    assert listing.verdict is Verdict.EMPTY and listing.documents == ()
    assert f"bucket {bucket} exists (head_bucket 200)" in listing.proof
    assert "0 objects, IsTruncated=false" in listing.proof


def test_marked_prefix_without_documents_is_empty(moto: MotoS3, admin: Any) -> None:
    bucket = new_bucket(admin, {"acme/.tessera-root": b"", "acme/logo.png": b"png", "other/x.md": b"# x"})
    listing = connector(moto.endpoint, bucket, "acme/").list()
    assert listing.verdict is Verdict.EMPTY
    assert "prefix 'acme/' root marker present" in listing.proof and "2 objects" in listing.proof


@pytest.mark.parametrize("files", [{}, {"acme/a.md": b"# a"}], ids=["no-objects", "objects"])
def test_prefix_without_marker_fails(moto: MotoS3, admin: Any, files: dict[str, bytes]) -> None:
    bucket = new_bucket(admin, {"other/.tessera-root": b"", **files})
    with pytest.raises(SourceError, match=r"root marker .*acme/\.tessera-root is missing"):
        connector(moto.endpoint, bucket, "acme/").list()


def test_missing_bucket_fails(moto: MotoS3) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        connector(moto.endpoint, "no-such-bucket-here", "").list()


def test_unresponsive_server_times_out(moto: MotoS3) -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        source = SourceConfig("s3", bucket="bkt", prefix="acme/", endpoint_url=endpoint, timeout_seconds=0.3)
        conn = S3Connector.from_config(TenantConfig("acme", source, DEFAULT))
        start = time.monotonic()
        with pytest.raises(SourceError, match=r"cannot be reached.*timeout"):
            conn.list()
        assert time.monotonic() - start < 10


# 4. authentication -------------------------------------------------------------------------


@pytest.fixture
def iam_key(moto: MotoS3) -> Iterator[tuple[str, str, str]]:
    """A valid IAM user and key; moto checks every request's signature while this is active."""
    user = f"indexer-{uuid.uuid4().hex[:8]}"
    key_id, secret = create_user_key(moto.endpoint, user)
    set_auth(moto.endpoint, True)
    try:
        yield user, key_id, secret
    finally:
        set_auth(moto.endpoint, False)


def test_wrong_credentials_fail(moto: MotoS3, three_hundred: str, iam_key: tuple[str, str, str]) -> None:
    conn = connector(
        moto.endpoint, three_hundred, aws_access_key_id="AKIAIOSFODNN7EXAMPLE", aws_secret_access_key="wrong"
    )
    with pytest.raises(SourceError, match=r"bucket .* cannot be reached \(403"):
        conn.list()


def test_key_revoked_mid_listing_fails_whole_listing(
    moto: MotoS3, three_hundred: str, iam_key: tuple[str, str, str]
) -> None:
    user, key_id, secret = iam_key
    creds = {"aws_access_key_id": key_id, "aws_secret_access_key": secret}
    conn = connector(moto.endpoint, three_hundred, page_size=100, **creds)
    iam = client(moto.endpoint, "iam", **creds)
    revoke = on_call(1, lambda: iam.delete_access_key(UserName=user, AccessKeyId=key_id))
    conn.client.meta.events.register("after-call.s3.ListObjectsV2", revoke)
    downloads = count_calls(conn, "before-call.s3.GetObject")
    with pytest.raises(SourceError, match="failed on page 2: InvalidAccessKeyId"):
        conn.list()
    assert downloads == []  # the first page was never turned into documents


def test_token_expiring_mid_listing_fails_whole_listing(moto: MotoS3, three_hundred: str) -> None:
    conn = connector(moto.endpoint, three_hundred, page_size=100)
    expired = on_call(2, lambda: error_response(400, "ExpiredToken", "The provided token has expired."), True)
    conn.client.meta.events.register("before-send.s3.ListObjectsV2", expired)
    with pytest.raises(SourceError, match="failed on page 2: ExpiredToken"):
        conn.list()


# 5. the server goes away ---------------------------------------------------------------------


def test_server_stopped_mid_listing(moto: MotoS3, admin: Any, three_hundred: str) -> None:
    dedicated = MotoS3()  # same in-process backend, its own port: the shared server lives on
    try:
        conn = connector(dedicated.endpoint, three_hundred, page_size=100)
        conn.client.meta.events.register("before-send.s3", close_connections)
        conn.client.meta.events.register("before-send.s3.ListObjectsV2", on_call(2, dedicated.stop))
        with pytest.raises(SourceError, match="failed on page 2: EndpointConnectionError"):
            conn.list()
    finally:
        dedicated.stop()
    assert admin.list_objects_v2(Bucket=three_hundred, MaxKeys=1)["KeyCount"] == 1


# 6. pagination that cannot be proven complete ------------------------------------------------


def tamper(change: Callable[[int, dict[str, Any], dict[int, dict[str, Any]]], None]) -> Callable[..., None]:
    seen: dict[int, dict[str, Any]] = {}

    def handler(parsed: dict[str, Any], **_: Any) -> None:
        page = len(seen) + 1
        seen[page] = dict(parsed)
        change(page, parsed, seen)

    return handler


def _no_token(page: int, parsed: dict[str, Any], seen: dict[int, dict[str, Any]]) -> None:
    if page == 1:
        parsed.pop("NextContinuationToken")


def _repeated_token(page: int, parsed: dict[str, Any], seen: dict[int, dict[str, Any]]) -> None:
    if page == 2:
        parsed["NextContinuationToken"] = seen[1]["NextContinuationToken"]


def _short_page(page: int, parsed: dict[str, Any], seen: dict[int, dict[str, Any]]) -> None:
    if page == 2:
        parsed["Contents"] = parsed["Contents"][:-1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_no_token, "page 1 is truncated but carries no NextContinuationToken"),
        (_repeated_token, "page 2 repeats a token"),
        (_short_page, "page 2 says KeyCount=100 but holds 99 objects"),
    ],
    ids=["no-token", "repeated-token", "keycount"],
)
def test_pagination_cut_fails(moto: MotoS3, three_hundred: str, change: Any, message: str) -> None:
    conn = connector(moto.endpoint, three_hundred, page_size=100)
    conn.client.meta.events.register("after-call.s3.ListObjectsV2", tamper(change))
    with pytest.raises(SourceError, match=f"pagination cut .*{message}"):
        conn.list()


# 7. per-document failures are quarantined; anything else fails the listing ---------------------


def test_object_deleted_between_list_and_get_is_quarantined(moto: MotoS3, admin: Any) -> None:
    files = {"acme/.tessera-root": b"", "acme/a.md": b"# a", "acme/gone.md": b"# gone", "acme/z.md": b"# z"}
    bucket = new_bucket(admin, dict(files))
    conn = connector(moto.endpoint, bucket)
    delete = on_call(1, lambda: admin.delete_object(Bucket=bucket, Key="acme/gone.md"))
    conn.client.meta.events.register("after-call.s3.ListObjectsV2", delete)
    listing = conn.list()
    assert listing.verdict is Verdict.COMPLETE
    assert [d.doc_id for d in listing.documents] == ["a.md", "z.md"]
    assert [(f.doc_id, f.reason) for f in listing.failed] == [("gone.md", "download_error")]
    assert "NoSuchKey" in listing.failed[0].message


BAD_METADATA = {
    "bad-date.md": {"tessera-effective-from": "next tuesday"},
    "reversed.md": {
        "tessera-readers": "alice",
        "tessera-effective-from": "2031-01-01",
        "tessera-effective-to": "2030-01-01",
    },
    "no-names.md": {"tessera-readers": " , ", "tessera-groups": ""},
    "bad-name.md": {"tessera-groups": "ok,not a name!"},
    "typo.md": {"tessera-reader": "alice"},
}


def test_bad_metadata_is_quarantined(moto: MotoS3, admin: Any) -> None:
    files: dict[str, bytes | tuple[bytes, dict[str, str]]] = {
        "acme/.tessera-root": b"",
        "acme/good.md": b"# ok",
    }
    files.update({f"acme/{name}": (b"# bad", meta) for name, meta in BAD_METADATA.items()})
    files["acme/dated.md"] = (b"# dated", {"tessera-effective-to": "2031-01-01T00:00:00+02:00"})
    listing = connector(moto.endpoint, new_bucket(admin, files)).list()
    assert sorted(d.doc_id for d in listing.documents) == ["dated.md", "good.md"]
    assert {f.doc_id: f.reason for f in listing.failed} == dict.fromkeys(BAD_METADATA, "bad_metadata")
    assert "tessera-effective-from" in next(f for f in listing.failed if f.doc_id == "bad-date.md").message
    dated = next(d for d in listing.documents if d.doc_id == "dated.md")
    assert dated.groups == ("staff",) and dated.effective_to == datetime(2030, 12, 31, 22, tzinfo=UTC)


def test_invalid_sidecar_policy_fails_the_listing(moto: MotoS3, admin: Any) -> None:
    bad = b"documents:\n  - match: '*'\n    readers: alice\n"
    bucket = new_bucket(admin, {"acme/.tessera-root": b"", "acme/_access.yaml": bad, "acme/a.md": b"# a"})
    with pytest.raises(SourceError, match=r"access policy .*_access\.yaml is invalid"):
        connector(moto.endpoint, bucket).list()


def test_server_error_on_download_fails_the_listing(moto: MotoS3, three_hundred: str) -> None:
    conn = connector(moto.endpoint, three_hundred)
    busy = on_call(5, lambda: error_response(503, "SlowDown", "Please reduce your request rate."), True)
    conn.client.meta.events.register("before-send.s3.GetObject", busy)
    with pytest.raises(SourceError, match=r"cannot download .*SlowDown"):
        conn.list()


# 8. read() returns exactly the listed revision -------------------------------------------------


def test_read_of_changed_or_deleted_object_fails(moto: MotoS3, admin: Any) -> None:
    bucket = new_bucket(admin, {"acme/.tessera-root": b"", "acme/a.md": b"# v1", "acme/b.md": b"# b"})
    conn = connector(moto.endpoint, bucket)
    a, b = sorted(conn.list().documents, key=lambda d: d.doc_id)
    assert conn.read(a) == b"# v1"
    admin.put_object(Bucket=bucket, Key="acme/a.md", Body=b"# v2")
    with pytest.raises(SourceError, match="changed during the run"):
        conn.read(a)
    admin.delete_object(Bucket=bucket, Key="acme/b.md")
    with pytest.raises(SourceError, match=r"cannot download .*NoSuchKey"):
        conn.read(b)
