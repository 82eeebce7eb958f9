"""Listing cost with the revision cache: object bodies read and wall time, first vs no-op.

2,000 unchanged documents (8 KiB each) on three sources: the loopback S3 server (moto, as the
tests run it), a git repository and a folder. Each source is listed cold (no cache: every body
read and hashed), then three times unchanged (the median is reported), then once after one
document changed. Bodies read are counted where they are read: GetObject calls, ``git cat-file``
calls that read blob bodies (``--batch-check`` reads headers only), file opens of documents.
The sources are written, then left past the cache's settling window before the first listing.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from bench.common import median, write_result
from tessera.config import AccessRule
from tessera.sources import folder as folder_module
from tessera.sources.base import SourceConnector
from tessera.sources.confine import read_confined
from tessera.sources.folder import FolderConnector
from tessera.sources.git import GitConnector
from tessera.sources.revision_cache import SETTLE_SECONDS, RevisionCache, cache_path
from tessera.sources.s3 import S3Connector

N = 2000
BODY = 8 << 10
DEFAULT = AccessRule(groups=("staff",))
Counter = Callable[[], int]


def body(i: int, tag: str = "") -> bytes:
    head = f"# Document {i}{tag}\n\n".encode()
    return head + (f"line {i} of the listing cost benchmark\n".encode() * (BODY // 36))[: BODY - len(head)]


def measure(
    make: Callable[[], SourceConnector], reads: Counter, change: Callable[[], None]
) -> dict[str, Any]:
    def once() -> tuple[float, int, int]:
        before = reads()
        t0 = time.perf_counter()
        listing = make().list()
        return time.perf_counter() - t0, reads() - before, len(listing.documents)

    first_s, first_reads, docs = once()
    noop = [once() for _ in range(3)]
    change()
    changed_s, changed_reads, _ = once()
    return {
        "documents": docs,
        "first": {"seconds": round(first_s, 4), "bodies_read": first_reads},
        "noop": {
            "seconds_median": round(median([s for s, _, _ in noop]), 4),
            "bodies_read": [r for _, r, _ in noop],
        },
        "one_changed": {"seconds": round(changed_s, 4), "bodies_read": changed_reads},
        "noop_speedup": round(first_s / max(median([s for s, _, _ in noop]), 1e-9), 1),
    }


def _client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )


def bench_s3(state: Path) -> dict[str, Any]:
    """moto's threaded server on 127.0.0.1, the loopback S3 the tests use (tests/s3server.py)."""
    from moto.server import ThreadedMotoServer

    os.environ.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        admin = _client(endpoint)
        admin.create_bucket(Bucket="bench")
        admin.put_object(Bucket="bench", Key="acme/.tessera-root", Body=b"")
        for i in range(N):
            admin.put_object(Bucket="bench", Key=f"acme/d/{i:05d}.md", Body=body(i))
        time.sleep(SETTLE_SECONDS + 1.0)
        gets = [0]
        cache = RevisionCache(cache_path(state, "acme"), "acme")

        def make() -> SourceConnector:
            conn = S3Connector("acme", "bench", "acme/", DEFAULT, _client(endpoint), cache=cache)
            conn.client.meta.events.register(
                "before-call.s3.GetObject", lambda **_: gets.__setitem__(0, gets[0] + 1)
            )
            return conn

        def change() -> None:
            admin.put_object(Bucket="bench", Key="acme/d/00007.md", Body=body(7, " (edited)"))

        return measure(make, lambda: gets[0], change) | {"counted": "GetObject calls"}
    finally:
        server.stop()


def _git(repo: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    cmd = ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@example.com", *args]
    subprocess.run(cmd, check=True, capture_output=True, env=env)


def bench_git(root: Path, state: Path) -> dict[str, Any]:
    repo = root / "repo"
    (repo / "docs").mkdir(parents=True)
    for i in range(N):
        (repo / "docs" / f"{i:05d}.md").write_bytes(body(i))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "bench")
    _git(repo, "gc", "-q")  # packed, as a clone is
    reads = [0]
    real = GitConnector._run

    def counting(self: GitConnector, *args: str, stdin: bytes | None = None) -> Any:
        if args[:1] == ("cat-file",) and ("--batch" in args or "blob" in args):
            reads[0] += 1 if "blob" in args else len((stdin or b"").splitlines())
        return real(self, *args, stdin=stdin)

    cache = RevisionCache(cache_path(state, "acme"), "acme")

    def change() -> None:
        (repo / "docs" / "00007.md").write_bytes(body(7, " (edited)"))
        _git(repo, "commit", "-q", "-am", "edit")

    with mock.patch.object(GitConnector, "_run", autospec=True, side_effect=counting):
        result = measure(
            lambda: GitConnector("acme", repo, "main", "docs", DEFAULT, cache=cache), lambda: reads[0], change
        )
    return result | {"counted": "blobs read by git cat-file --batch / blob"}


def bench_folder(root: Path, state: Path) -> dict[str, Any]:
    src = root / "folder"
    for i in range(N):
        path = src / f"d{i % 20:02d}" / f"{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body(i))
    time.sleep(SETTLE_SECONDS + 1.0)
    cache = RevisionCache(cache_path(state, "acme"), "acme")

    def change() -> None:
        (src / "d07" / "00007.md").write_bytes(body(7, " (edited)"))

    with mock.patch.object(folder_module, "read_confined", wraps=read_confined) as spy:
        result = measure(lambda: FolderConnector("acme", src, DEFAULT, cache), lambda: spy.call_count, change)
    return result | {"counted": "document files opened"}


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tessera-listing-") as tmp:
        root = Path(tmp)
        sources = {
            "s3": bench_s3(root / "s3-state"),
            "git": bench_git(root, root / "git-state"),
            "folder": bench_folder(root, root / "folder-state"),
        }
    result = {
        "objects": N,
        "object_bytes": BODY,
        "sources": sources,
        "noop_bodies_read": {k: max(v["noop"]["bodies_read"]) for k, v in sources.items()},
        "target_noop_bodies_read": 0,
    }
    print(write_result("listing_cost", result))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
