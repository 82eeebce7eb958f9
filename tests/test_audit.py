"""The retrieval audit log, through the real HTTP server and the real CLI: one line per
retrieval, identifiers and digests only, append-only, and no retrieval without its line."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tessera.api import AUDIT_UNAVAILABLE, create_app
from tessera.cli import main
from tessera.config import load_config
from tessera.errors import AuditError
from tessera.search.audit import AuditLog, AuditRecord, audit_path, fetch_record, search_record
from tessera.search.identities import ReloadingIdentities
from tessera.search.principal import key_digest
from tests.apiserver import serve

ACME: dict[str, str | bytes] = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "secret.md": "# Salaries\n\nSalary bands for engineers are reviewed yearly.\n",
    "_access.yaml": "documents:\n  - match: secret.md\n    groups: [hr]\n",
}
GLOBEX: dict[str, str | bytes] = {
    "zanzibar-plan.md": "# Zanzibar\n\nQuixotic dispatcher schedules for the Zanzibar launch.\n"
}
KEYS = {"alice-key": ("acme", "alice"), "carol-key": ("acme", "carol"), "gina-key": ("globex", "gina")}
QUERY = "how do I page the on-call engineer with the pager"
FIELDS = {
    "action", "chunk_ids", "count", "k", "mode", "outcome", "query_len", "query_sha256",
    "requested_sha256", "surface", "tenant", "ts", "user",
}  # fmt: skip


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Project:
    def __init__(self, root: Path) -> None:
        from tests.conftest import Workspace

        self.ws = Workspace(root)
        self.ws.tenant("acme", ACME, users={"alice": ["staff"], "carol": ["hr", "staff"], "mallory": []})
        self.ws.tenant("globex", GLOBEX, groups=["employees"], users={"gina": ["employees"]})
        self.ws.run("acme", "r1")
        self.ws.run("globex", "r1")
        self.ws.config()
        # its own file: the workspace rewrites tessera.yaml (without api_keys_file) on each use
        cfg_path = root / "tessera-api.yaml"
        cfg_path.write_text(
            (root / "tessera.yaml").read_text(encoding="utf-8") + "api_keys_file: keys.yaml\n"
        )
        keys = "".join(
            f"  - {{sha256: {key_digest(k)}, tenant: {t}, user: {u}}}\n" for k, (t, u) in KEYS.items()
        )
        (root / "keys.yaml").write_text("keys:\n" + keys, encoding="utf-8")
        (root / "alice.identity").write_text("api_key: alice-key\n", encoding="utf-8")
        self.cfg = load_config(cfg_path)
        self.acme = {r["doc_id"]: r for r in self.ws.rows("acme")}
        self.globex = self.ws.rows("globex")
        self.log = audit_path(self.cfg.store.work_dir)

    def lines(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(x) for x in self.log.read_bytes().decode("ascii").splitlines()]

    def foreign(self) -> list[str]:
        """Strings only globex's documents hold: text words, doc id, chunk ids, uri."""
        out = [r["id"] for r in self.globex] + ["zanzibar", "quixotic", "dispatcher", "Zanzibar"]
        return out + [r["uri"] for r in self.globex] + [r["text"] for r in self.globex]

    def texts(self) -> list[str]:
        """Every chunk text and every distinctive word of both tenants' documents."""
        rows = [*self.acme.values(), *self.globex]
        words = {w for r in rows for w in re.findall(r"[A-Za-z-]{5,}", r["text"]) if re.search(r"[g-z]", w)}
        return [r["text"] for r in rows] + sorted(words)

    def cli(self, *args: str) -> int:
        return main(["--config", str(self.cfg.path), "--fake-embedder", *args])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return Project(tmp_path_factory.mktemp("audit"))


@pytest.fixture(scope="module")
def api(project: Project) -> Iterator[str]:
    app = create_app(project.cfg, project.ws.embedder, ReloadingIdentities.from_config(project.cfg))
    with serve(app) as base:
        yield base


def get(base: str, path: str, key: str | None = "alice-key", **params: Any) -> httpx.Response:
    return httpx.get(f"{base}{path}", params=params, headers={"X-API-Key": key} if key else {}, timeout=10)


def assert_clean(project: Project) -> None:
    """The whole file: parseable lines, known fields, and no text, query or foreign string."""
    raw = project.log.read_bytes()
    for line in raw.decode("ascii").splitlines():
        record = json.loads(line)
        assert set(record) == FIELDS
        assert datetime.fromisoformat(record["ts"]).utcoffset() == UTC.utcoffset(None)
        assert record["count"] == len(record["chunk_ids"])
    for s in [*project.texts(), QUERY, "pager", "on-call engineer"]:
        assert s.encode() not in raw, s
    for s in project.foreign():
        assert s.encode() not in raw, s
    assert raw.lower().count(b"globex") == 0


@pytest.mark.scenario("F4", "safety-untrusted")
def test_api_retrievals_are_audited(api: str, project: Project) -> None:
    before = len(project.lines())
    r = get(api, "/search", q=QUERY, k=4, mode="hybrid")
    assert r.status_code == 200
    results = r.json()["results"]
    assert results and {h["doc_id"] for h in results} == {"runbook.md"}
    line = project.lines()[-1]
    assert len(project.lines()) == before + 1
    assert line["surface"] == "api" and line["action"] == "search" and line["outcome"] == "ok"
    assert (line["tenant"], line["user"], line["mode"], line["k"]) == ("acme", "alice", "hybrid", 4)
    assert line["query_sha256"] == sha(QUERY) and line["query_len"] == len(QUERY)
    assert line["chunk_ids"] == [h["chunk_id"] for h in results] and line["count"] == len(results)
    # a fetch that succeeds records the chunk id it returned
    chunk_id = results[0]["chunk_id"]
    assert get(api, f"/chunks/{chunk_id}").status_code == 200
    assert project.lines()[-1] | {"ts": ""} == {
        **dict.fromkeys(FIELDS), "ts": "", "surface": "api", "action": "show", "tenant": "acme",
        "user": "alice", "outcome": "ok", "chunk_ids": [chunk_id], "count": 1,
    }  # fmt: skip
    # another tenant's chunk, an unreadable one and garbage: not_found and only the digest
    secret = project.acme["secret.md"]["id"]
    for requested in (project.globex[0]["id"], secret, "tessera:globex:" + project.globex[0]["id"], "x" * 70):
        n = len(project.lines())
        assert get(api, f"/chunks/{requested}").status_code == 404
        assert len(project.lines()) == n + 1
        line = project.lines()[-1]
        assert line["outcome"] == "not_found" and line["chunk_ids"] == [] and line["count"] == 0
        assert line["requested_sha256"] == sha(requested) and line["tenant"] == "acme"
    # another user gets her own line; refused requests (401, 422) are not retrievals
    n = len(project.lines())
    assert get(api, "/search", key="carol-key", q="salary bands").json()["results"]
    assert get(api, "/search", key="wrong-key", q=QUERY).status_code == 401
    assert get(api, "/search", key=None, q=QUERY).status_code == 401
    assert get(api, "/search", q=QUERY, k=0).status_code == 422
    assert len(project.lines()) == n + 1 and project.lines()[-1]["user"] == "carol"
    assert secret in project.lines()[-1]["chunk_ids"]  # carol is in hr: her result, her line
    assert_clean(project)


@pytest.mark.scenario("F4", "safety-untrusted")
def test_cli_retrievals_are_audited(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    n = len(project.lines())
    assert project.cli("search", "--tenant", "acme", "--user", "alice", "--json", "--k", "3", QUERY) == 0
    hits = json.loads(capsys.readouterr().out)
    line = project.lines()[-1]
    assert line["surface"] == "cli" and line["action"] == "search" and line["mode"] == "hybrid"
    assert line["k"] == 3 and line["chunk_ids"] == [h["chunk_id"] for h in hits] and hits
    assert project.cli("search", "--identity", str(project.ws.root / "alice.identity"), "--mode", "lexical",
                       "pager") == 0  # fmt: skip
    assert "pager" in capsys.readouterr().out
    line = project.lines()[-1]
    assert (line["tenant"], line["user"], line["mode"], line["query_sha256"]) == (
        "acme", "alice", "lexical", sha("pager")
    )  # fmt: skip
    assert project.cli("search", "--tenant", "acme", "--user", "nobody", "--json", QUERY) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert project.lines()[-1]["outcome"] == "unknown_principal" and project.lines()[-1]["count"] == 0
    cid = hits[0]["chunk_id"]
    assert project.cli("show", "--tenant", "acme", "--user", "alice", f"tessera:acme/{cid}") == 0
    capsys.readouterr()
    assert project.lines()[-1]["action"] == "show" and project.lines()[-1]["chunk_ids"] == [cid]
    foreign = f"tessera:globex/{project.globex[0]['id']}"
    assert project.cli("show", "--tenant", "acme", "--user", "alice", foreign) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err == "tessera: not found\n"
    line = project.lines()[-1]
    assert line["outcome"] == "not_found" and line["requested_sha256"] == sha(foreign)
    assert project.cli("lineage", cid, "--tenant", "acme", "--json") == 0
    assert json.loads(capsys.readouterr().out)["chunk_id"] == cid
    line = project.lines()[-1]
    assert (line["action"], line["tenant"], line["user"], line["chunk_ids"]) == (
        "lineage",
        "acme",
        None,
        [cid],
    )
    assert project.cli("lineage", project.globex[0]["id"], "--tenant", "acme") == 1
    assert capsys.readouterr().err == "tessera: not found\n"
    assert project.lines()[-1]["outcome"] == "not_found"
    assert len(project.lines()) == n + 7
    assert_clean(project)


def _audit_dir_is_a_file(log: Path) -> None:
    log.parent.rename(log.parent.with_name("audit.moved"))
    log.parent.write_text("not a directory\n")


def _log_is_a_directory(log: Path) -> None:
    log.rename(log.with_name("retrievals.moved"))
    log.mkdir()


def _log_is_a_symlink(log: Path) -> None:
    log.rename(log.with_name("retrievals.moved"))
    log.symlink_to(log.with_name("retrievals.moved"))  # writable, but never followed


def _repair(log: Path) -> None:
    if log.parent.is_file():
        log.parent.unlink()
        log.parent.with_name("audit.moved").rename(log.parent)
        return
    if log.is_symlink() or log.is_file():
        log.unlink()
    else:
        log.rmdir()
    log.with_name("retrievals.moved").rename(log)


BREAKS = [_audit_dir_is_a_file, _log_is_a_directory, _log_is_a_symlink]


@pytest.mark.parametrize("breaks", BREAKS, ids=[b.__name__.strip("_") for b in BREAKS])
@pytest.mark.scenario("F4", "safety-untrusted")
def test_an_unwritable_log_fails_the_retrieval(
    api: str,
    project: Project,
    breaks: Any,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert get(api, "/search", q=QUERY).status_code == 200  # the log exists
    cid = project.acme["runbook.md"]["id"]
    saved = project.log.read_bytes()
    breaks(project.log)
    try:
        for r in (get(api, "/search", q=QUERY), get(api, f"/chunks/{cid}"), get(api, f"/chunks/{'0' * 64}")):
            assert r.status_code == 503 and r.json() == {"detail": AUDIT_UNAVAILABLE}
        for args in (
            ("search", "--tenant", "acme", "--user", "alice", "--json", QUERY),
            ("show", "--tenant", "acme", "--user", "alice", cid),
            ("show", "--tenant", "acme", "--user", "alice", "0" * 64),
            ("lineage", cid, "--tenant", "acme", "--json"),
        ):
            assert project.cli(*args) == 1
            out = capsys.readouterr()
            assert out.out == "" and out.err.startswith("tessera: AuditError: cannot append")
            assert "Page the on-call" not in out.err
        with pytest.raises(AuditError):
            AuditLog(project.cfg.store.work_dir).append(fetch_record("cli", "show", "acme", "a", "x", None))
    finally:
        _repair(project.log)
    errors = [r.getMessage() for r in caplog.records if r.name == "tessera.search.audit"]
    assert len(errors) == 8 and all("cannot append to the retrieval audit log" in m for m in errors)
    for s in [*project.texts(), *project.foreign(), QUERY]:
        assert not any(s in m for m in errors)
    assert project.log.read_bytes() == saved  # nothing written anywhere, nothing lost
    assert get(api, "/search", q=QUERY).status_code == 200
    assert project.cli("show", "--tenant", "acme", "--user", "alice", cid) == 0
    assert "pager tool" in capsys.readouterr().out
    assert len(project.lines()) == len(saved.splitlines()) + 2


def test_the_file_is_private_append_only_and_created_on_demand(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "deep" / "work")
    log.append(search_record("cli", "acme", "alice", "q", "dense", 1, ["a" * 64]))
    assert log.path == tmp_path / "deep" / "work" / "audit" / "retrievals.jsonl"
    assert log.path.stat().st_mode & 0o777 == 0o600
    log.path.chmod(0o644)
    log.append(fetch_record("api", "show", "acme", "alice", "b" * 64, "b" * 64))
    assert log.path.stat().st_mode & 0o777 == 0o600
    lines = log.path.read_text().splitlines()
    assert [json.loads(x)["action"] for x in lines] == ["search", "show"]
    record = AuditRecord(surface="api", action="search", tenant="t", user="u")
    assert json.loads(record.line())["count"] == 0 and record.line().endswith(b"\n")
    assert record.line().count(b"\n") == 1


@pytest.mark.scenario("F4", "safety-untrusted")
def test_concurrent_appends_are_whole_lines(tmp_path: Path) -> None:
    """Threads and processes appending big lines (over PIPE_BUF) at once: every line whole."""
    log = AuditLog(tmp_path)
    ids = [f"{n:064x}" for n in range(120)]  # ~8 KB per line

    def writer(t: int) -> None:
        for n in range(100):
            log.append(search_record("api", "acme", f"thread-{t}", str(n), "hybrid", n, ids))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    code = (
        "import sys, time\nfrom pathlib import Path\n"
        "from tessera.search.audit import AuditLog, search_record\n"
        "root = Path(sys.argv[1]); ids = [f'{n:064x}' for n in range(120)]; log = AuditLog(root)\n"
        "(root / f'ready-{sys.argv[2]}').touch()\n"
        "while not (root / 'go').exists(): time.sleep(0.001)\n"
        "user = 'proc-' + sys.argv[2]\n"
        "for n in range(100): log.append(search_record('cli', 'acme', user, str(n), 'x', n, ids))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(p)], env=env) for p in range(3)]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{p}").exists() for p in range(3)):  # all imported: start together
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.01)
    (tmp_path / "go").touch()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.wait(timeout=120) == 0 for p in procs)
    lines = log.path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    records = [json.loads(x) for x in lines[:-1]]
    assert len(records) == 1100
    by_user: dict[str, list[int]] = {}
    for r in records:
        assert r["chunk_ids"] == ids
        by_user.setdefault(r["user"], []).append(r["k"])
    assert len(by_user) == 11 and all(ks == list(range(100)) for ks in by_user.values())


@pytest.mark.scenario("F4", "safety-untrusted")
def test_no_error_body_or_log_line_carries_text_or_foreign_data(
    api: str, project: Project, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    uvicorn_logger = logging.getLogger("uvicorn")
    uvicorn_logger.addHandler(caplog.handler)
    caplog.set_level(logging.DEBUG)
    foreign_id = project.globex[0]["id"]
    bodies: list[str] = []
    try:
        cases: list[tuple[str, str | None, dict[str, Any], int]] = [
            (f"/chunks/{foreign_id}", "alice-key", {}, 404),
            (f"/chunks/tessera:globex/{foreign_id}", "alice-key", {}, 404),
            (f"/chunks/{project.acme['secret.md']['id']}", "alice-key", {}, 404),
            ("/chunks/" + "x" * 300, "alice-key", {}, 404),
            (f"/chunks/{foreign_id}", "nope", {}, 401),
            ("/search", "gina-key-guess", {"q": "weather report"}, 401),
            ("/search", None, {"q": "weather report"}, 401),
            ("/search", "alice-key", {"q": "weather report", "k": 0}, 422),
            ("/search", "alice-key", {"q": "weather report", "mode": "all"}, 422),
            ("/search", "alice-key", {"q": "weather report", "expand": "everything"}, 422),
            ("/search", "alice-key", {"q": ""}, 422),
            ("/search", "alice-key", {"q": "weather report", "as_of": "yesterday"}, 422),
            ("/search", "alice-key", {"q": "weather report", "model_version": "v0"}, 409),
        ]
        for path, key, params, status in cases:
            r = get(api, path, key=key, **params)
            assert r.status_code == status, (path, r.text)
            bodies.append(r.text)
        # alice's search for globex's words finds nothing of globex's
        found = get(api, "/search", q="zanzibar quixotic dispatcher").json()["results"]
        assert {h["doc_id"] for h in found} <= set(project.acme)
        for args in (
            ("show", "--tenant", "acme", "--user", "alice", f"tessera:globex/{foreign_id}"),
            ("show", "--tenant", "acme", "--user", "alice", foreign_id),
            ("show", "--identity", str(project.ws.root / "alice.identity"), f"tessera:globex/{foreign_id}"),
            ("show", "--tenant", "acme", "--user", "mallory", project.acme["runbook.md"]["id"]),
            ("lineage", foreign_id, "--tenant", "acme"),
        ):
            assert project.cli(*args) == 1
            out = capsys.readouterr()
            assert out.out == ""
            bodies.append(out.err)
    finally:
        uvicorn_logger.removeHandler(caplog.handler)
    client = ("httpx", "httpcore")  # the test's own HTTP client logs the URLs it requested
    logged = [r.getMessage() + (r.exc_text or "") for r in caplog.records if not r.name.startswith(client)]
    assert any(r.name.startswith(client) for r in caplog.records)  # the capture works
    for text in bodies + logged:
        for s in project.foreign():
            assert s not in text, (s, text)
        for s in project.texts():
            assert s not in text, (s, text)
    details = {json.loads(b)["detail"] for b in bodies[:7]}
    assert details == {"not found", "Not Found", "missing or invalid API key"}
    assert_clean(project)
