"""Local source blobs (tessera.store.blobs): stored once under their sha256, whole or not at
all, by any number of threads at once, whatever a dead writer left behind or a purge removed;
and never outside the tenant's folder."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from tessera.errors import ConfigError
from tessera.store.blobs import BlobStore


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_blob_is_stored_once_under_its_sha256(tmp_path: Path) -> None:
    blobs = BlobStore(str(tmp_path / "idx"))
    rev = blobs.put("acme", b"hello")
    assert rev == hashlib.sha256(b"hello").hexdigest()
    assert blobs.put("acme", b"hello") == rev and blobs.get("acme", rev) == b"hello"
    folder = tmp_path / "idx" / "_sources" / "acme"
    assert _files(folder) == [rev]  # no temporary file left
    assert oct(os.stat(folder / rev).st_mode & 0o777) == oct(0o600)
    assert blobs.purge("acme") == 1 and not folder.exists()
    assert blobs.put("acme", b"hello") == rev and _files(folder) == [rev]  # the folder comes back


def test_a_dead_writers_temporary_file_does_not_block_a_store(tmp_path: Path) -> None:
    blobs = BlobStore(str(tmp_path / "idx"))
    blobs.put("acme", b"first")  # the folder exists
    rev = hashlib.sha256(b"second").hexdigest()
    folder = tmp_path / "idx" / "_sources" / "acme"
    stale = folder / f".tmp-{rev[:16]}-{os.getpid()}-{threading.get_ident()}"
    stale.write_bytes(b"half a wri")  # the name this very thread would use
    assert blobs.put("acme", b"second") == rev
    assert blobs.get("acme", rev) == b"second" and stale.read_bytes() == b"half a wri"


def test_a_failed_store_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blobs = BlobStore(str(tmp_path / "idx"))
    blobs.put("acme", b"first")

    def full_disk(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        blobs.put("acme", b"second")
    assert _files(tmp_path / "idx" / "_sources" / "acme") == [hashlib.sha256(b"first").hexdigest()]


def test_threads_store_the_same_and_other_blobs_at_once(tmp_path: Path) -> None:
    blobs = BlobStore(str(tmp_path / "idx"))
    bodies = [f"document {i % 40}".encode() * 50 for i in range(400)]  # each body ten times
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def store(part: list[bytes]) -> None:
        start.wait()
        try:
            for raw in part:
                blobs.put("acme", raw)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=store, args=(bodies[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    expected = {hashlib.sha256(b).hexdigest(): b for b in bodies}
    assert _files(tmp_path / "idx" / "_sources" / "acme") == sorted(expected)
    assert all(blobs.get("acme", rev) == raw for rev, raw in expected.items())


@pytest.mark.parametrize("tenant", ["../acme", "acme/../../x", "", "Acme", "a" * 64])
def test_a_blob_never_lands_outside_a_tenant_folder(tmp_path: Path, tenant: str) -> None:
    blobs = BlobStore(str(tmp_path / "idx"))
    with pytest.raises(ConfigError):
        blobs.put(tenant, b"x")
    assert not (tmp_path / "idx").exists() or not any((tmp_path / "idx").rglob("*"))
