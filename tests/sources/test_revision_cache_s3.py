"""The revision cache on S3 (moto's real server on 127.0.0.1): a no-op listing downloads nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tessera.errors import SourceError
from tessera.sources.base import Listing
from tessera.sources.registry import connector_for
from tessera.sources.revision_cache import RevisionCache
from tessera.sources.s3 import S3Connector
from tessera.types import sha256_hex
from tests.s3server import MotoS3, client, error_response, on_call
from tests.sources.helpers import DEFAULT, cache, get_objects
from tests.test_s3_source import admin, docs, moto, new_bucket  # noqa: F401  (fixtures)

META = {"tessera-readers": "dave", "tessera-effective-from": "2024-01-01T00:00:00Z"}


def connector(endpoint: str, bucket: str, c: RevisionCache | None, prefix: str = "acme/") -> S3Connector:
    return S3Connector("acme", bucket, prefix, DEFAULT, client(endpoint), page_size=50, cache=c)


def revisions(listing: Listing) -> dict[str, tuple[str, int, str]]:
    return {d.doc_id: (d.revision, d.size, d.meta_hash) for d in listing.documents}


@pytest.fixture
def bucket(admin: Any) -> str:  # noqa: F811
    files = docs(120)
    files["acme/meta.md"] = (b"# With metadata\n", META)
    files["acme/_access.yaml"] = b"documents:\n  - match: 'd/00*'\n    groups: [hr]\n"
    files["acme/bad.md"] = (b"# bad metadata\n", {"tessera-colour": "blue"})
    return new_bucket(admin, files)


def test_a_noop_listing_downloads_no_document(moto: MotoS3, bucket: str, tmp_path: Path) -> None:  # noqa: F811
    c = cache(tmp_path)
    first_conn = connector(moto.endpoint, bucket, c)
    gets = get_objects(first_conn)
    first = first_conn.list()
    assert len(gets) == 123  # 122 documents and the policy
    again_conn = connector(moto.endpoint, bucket, c)
    gets = get_objects(again_conn)
    again = again_conn.list()
    assert gets == ["acme/_access.yaml"]  # policies are read every time, documents never
    assert again == first and c.last.hits == 122
    assert [f.reason for f in again.failed] == ["bad_metadata"]  # re-derived from the cached metadata
    assert first == connector(moto.endpoint, bucket, None).list()  # exactly what no cache lists


def test_a_changed_object_is_downloaded_again(moto: MotoS3, admin: Any, bucket: str, tmp_path: Path) -> None:  # noqa: F811
    c = cache(tmp_path)
    connector(moto.endpoint, bucket, c).list()
    admin.put_object(Bucket=bucket, Key="acme/d/0007.md", Body=b"# Doc 7\n")  # same size, same bytes
    admin.put_object(Bucket=bucket, Key="acme/d/0008.md", Body=b"# Doc X\n")  # same size, new bytes
    conn = connector(moto.endpoint, bucket, c)
    gets = get_objects(conn)
    listing = conn.list()
    assert sorted(gets) == ["acme/_access.yaml", "acme/d/0007.md", "acme/d/0008.md"]
    assert revisions(listing)["d/0008.md"][0] == sha256_hex(b"# Doc X\n")


def test_a_metadata_only_change_is_downloaded_again(
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    bucket: str,
    tmp_path: Path,
) -> None:
    """S3 changes metadata by copying the object onto itself: same ETag, new LastModified."""
    c = cache(tmp_path)
    before = revisions(connector(moto.endpoint, bucket, c).list())["meta.md"]
    time.sleep(1.1)  # LastModified may have a one-second granularity (the settling window's job)
    admin.copy_object(
        Bucket=bucket,
        Key="acme/meta.md",
        CopySource={"Bucket": bucket, "Key": "acme/meta.md"},
        Metadata={"tessera-readers": "erin"},
        MetadataDirective="REPLACE",
    )
    conn = connector(moto.endpoint, bucket, c)
    gets = get_objects(conn)
    listing = conn.list()
    assert "acme/meta.md" in gets
    doc = next(d for d in listing.documents if d.doc_id == "meta.md")
    assert doc.readers == ("erin",) and doc.revision == before[0] and doc.meta_hash != before[2]


def test_an_object_written_within_the_settling_window_is_downloaded_every_time(
    moto: MotoS3,  # noqa: F811
    bucket: str,
    tmp_path: Path,
) -> None:
    c = cache(tmp_path, settle=3600.0)
    connector(moto.endpoint, bucket, c).list()
    conn = connector(moto.endpoint, bucket, c)
    gets = get_objects(conn)
    conn.list()
    assert len(gets) == 123 and c.last.stored == 0


def test_a_deleted_object_leaves_the_listing_though_the_cache_knows_it(
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    bucket: str,
    tmp_path: Path,
) -> None:
    c = cache(tmp_path)
    connector(moto.endpoint, bucket, c).list()
    admin.delete_object(Bucket=bucket, Key="acme/d/0100.md")
    listing = connector(moto.endpoint, bucket, c).list()
    assert "d/0100.md" not in revisions(listing) and len(listing.documents) == 120


def test_the_cache_never_makes_a_failing_listing_complete(
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    bucket: str,
    tmp_path: Path,
) -> None:
    c = cache(tmp_path)
    connector(moto.endpoint, bucket, c).list()
    cut = connector(moto.endpoint, bucket, c)
    expired = on_call(2, lambda: error_response(400, "ExpiredToken", "The provided token has expired."), True)
    cut.client.meta.events.register("before-send.s3.ListObjectsV2", expired)
    with pytest.raises(SourceError, match="page 2"):
        cut.list()
    admin.delete_object(Bucket=bucket, Key="acme/.tessera-root")
    with pytest.raises(SourceError, match="root marker"):
        connector(moto.endpoint, bucket, c).list()
    busy = connector(moto.endpoint, bucket, c)  # the policy download fails: so does the listing
    busy.client.meta.events.register(
        "before-send.s3.GetObject", on_call(1, lambda: error_response(403, "AccessDenied", "no"), True)
    )
    admin.put_object(Bucket=bucket, Key="acme/.tessera-root", Body=b"")
    with pytest.raises(Exception, match="access policy"):
        busy.list()


def test_read_still_verifies_what_it_downloads(moto: MotoS3, admin: Any, bucket: str, tmp_path: Path) -> None:  # noqa: F811
    c = cache(tmp_path)
    connector(moto.endpoint, bucket, c).list()
    conn = connector(moto.endpoint, bucket, c)
    doc = next(d for d in conn.list().documents if d.doc_id == "d/0003.md")
    assert conn.read(doc) == b"# Doc 3\n"
    admin.put_object(Bucket=bucket, Key="acme/d/0003.md", Body=b"# Doc 3, changed\n")
    with pytest.raises(SourceError, match="revision mismatch"):
        conn.read(doc)


def test_tenants_do_not_share_caches(moto: MotoS3, admin: Any, tmp_path: Path) -> None:  # noqa: F811
    from tessera.config import SourceConfig, TenantConfig

    files = docs(3, "acme/") | docs(3, "beta/")
    bucket = new_bucket(admin, files)
    made = {}
    for tenant in ("acme", "beta"):
        source = SourceConfig("s3", bucket=bucket, prefix=f"{tenant}/", endpoint_url=moto.endpoint)
        conn = connector_for(TenantConfig(tenant, source, DEFAULT), tmp_path)
        assert isinstance(conn, S3Connector) and conn.cache is not None
        conn.list()
        made[tenant] = conn.cache.path
    assert made["acme"] != made["beta"]
    assert made["acme"].parent == tmp_path / "acme" and made["beta"].parent == tmp_path / "beta"


def test_a_download_of_an_object_overwritten_since_the_listing_is_not_cached(
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    bucket: str,
    tmp_path: Path,
) -> None:
    c = cache(tmp_path)
    conn = connector(moto.endpoint, bucket, c)

    def overwrite() -> None:  # returns nothing: the GetObject itself still goes out
        admin.put_object(Bucket=bucket, Key="acme/d/0000.md", Body=b"# swapped\n")

    swap = on_call(1, overwrite)
    conn.client.meta.events.register("before-send.s3.GetObject", swap)
    conn.list()
    entries = json.loads(c.path.read_bytes())["entries"]
    assert "acme/d/0000.md" not in entries and "acme/d/0001.md" in entries
