"""Every CLI subcommand and every API endpoint, fed bad input: the documented exit code or
status, one typed error that names the bad parameter, no traceback, no document text, and
nothing changed on disk (the files of the project with their sizes and mtimes, the tenant's
table version and rows). Then the failures that are not about arguments: a missing source
blob, a damaged store, a full disk, an unexpected exception."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tessera import boundary
from tessera.api import create_app
from tessera.cli import build_parser, main
from tessera.config import load_config
from tessera.embedding.fake import HashEmbedder
from tessera.errors import TesseraError
from tessera.search.principal import IdentityStore, key_digest
from tessera.store.db import connect
from tessera.store.index import TenantIndex
from tests.apiserver import serve

SECRET = "Salary bands for engineers are reviewed yearly"
ACME: dict[str, str | bytes] = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "secret.md": f"# Salaries\n\n{SECRET}.\n",
    "_access.yaml": "documents:\n  - match: secret.md\n    groups: [hr]\n",
}
KEY = {"X-API-Key": "alice-key"}
KEYS_YAML = f"keys:\n  - {{sha256: {key_digest('alice-key')}, tenant: acme, user: alice}}\n"
NOT_FOUND = "not found"  # the one line for an absent or unreadable chunk: `tessera: not found`
W = ("--tenant", "acme", "--user", "alice")
LONG = "pager " * 2000  # 12,000 characters


@dataclass(frozen=True)
class Row:
    args: tuple[str, ...]
    code: int
    error: str | None  # the error type on stderr, NOT_FOUND, or None for a documented success
    param: str | None  # what the message must name
    config: str = "main"  # main | plain (no api_keys_file) | missing | badkey | badvalue | none


def _all_subclasses(cls: type) -> set[str]:
    return {cls.__name__} | {n for sub in cls.__subclasses__() for n in _all_subclasses(sub)}


ROWS: list[Row] = [
    # search: values checked before anything is read
    Row(("search", *W, "--k", "0", "pager"), 2, "InvalidArgument", "--k"),
    Row(("search", *W, "--k", "-1", "pager"), 2, "InvalidArgument", "--k"),
    Row(("search", *W, "--k", "abc", "pager"), 2, "InvalidArgument", "--k"),
    Row(("search", *W, "--k", "1001", "pager"), 2, "InvalidArgument", "--k"),
    Row(("search", *W, "--as-of", "yesterday", "pager"), 2, "InvalidArgument", "--as-of"),
    Row(("search", *W, "--as-of", "2025-13-45", "pager"), 2, "InvalidArgument", "--as-of"),
    Row(("search", *W, "--expand", "sideways", "pager"), 2, "InvalidArgument", "--expand"),
    Row(("search", *W, "--expand", "neighbors:999", "pager"), 2, "InvalidArgument", "--expand"),
    Row(("search", *W, "--expand", "neighbors:-1", "pager"), 2, "InvalidArgument", "--expand"),
    Row(("search", *W, "--expand", "neighbors:\u00b2", "pager"), 2, "InvalidArgument", "--expand"),
    Row(("search", *W, "--budget", "0", "pager"), 2, "InvalidArgument", "--budget"),
    Row(("search", *W, "--budget", "-5", "pager"), 2, "InvalidArgument", "--budget"),
    Row(("search", *W, "--mode", "x", "pager"), 2, "InvalidArgument", "--mode"),
    Row(("search", *W, ""), 2, "InvalidArgument", "query"),
    Row(("search", *W, LONG), 2, "InvalidArgument", "query"),
    Row(("search", *W), 2, "InvalidArgument", "query"),
    Row(("search", "--tenant", "nope", "--user", "alice", "pager"), 1, "ConfigError", "tenant"),
    Row(("search", "--tenant", "acme", "pager"), 2, "InvalidArgument", "--identity"),
    Row(("search", "--identity", "/nonexistent/alice.identity", "pager"), 1, "ConfigError", "identity"),
    Row(("search", *W, "--model-version", "other", "pager"), 1, "ModelIdentityError", "model version"),
    Row(("search", "--tenant", "acme", "--user", "nobody", "pager"), 0, None, None),  # no hint: "no results"
    # show: a malformed citation is refused by syntax; a well-formed one you may not read is "not found"
    Row(("show", *W, "notacitation"), 2, "InvalidArgument", "citation"),
    Row(("show", *W, "tessera:acme/xyz"), 2, "InvalidArgument", "citation"),
    Row(("show", *W, "tessera:ACME/{cid}"), 2, "InvalidArgument", "citation"),
    Row(("show", *W, "tessera:acme/{cid}/extra"), 2, "InvalidArgument", "citation"),
    Row(("show", *W, "x" * 10_000), 2, "InvalidArgument", "citation"),
    Row(("show", *W), 2, "InvalidArgument", "citation"),
    Row(("show", *W, "tessera:globex/{cid}"), 1, NOT_FOUND, None),
    Row(("show", *W, "{secret}"), 1, NOT_FOUND, None),
    Row(("show", "--tenant", "acme", "--user", "nobody", "{cid}"), 1, NOT_FOUND, None),
    Row(("show", "--tenant", "nope", "--user", "alice", "{cid}"), 1, "ConfigError", "tenant"),
    # serve: checked before the configuration is read
    Row(("serve", "--port", "99999"), 2, "InvalidArgument", "--port"),
    Row(("serve", "--port", "0"), 2, "InvalidArgument", "--port"),
    Row(("serve", "--port", "http"), 2, "InvalidArgument", "--port"),
    Row(("serve",), 1, "ConfigError", "api_keys_file", config="plain"),
    # versions
    Row(("versions", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("versions", "--tenant", "a,b"), 1, "ConfigError", "tenant"),
    Row(("versions",), 2, "InvalidArgument", "--tenant"),
    # restore
    Row(("restore", "--tenant", "acme", "--version", "-5"), 2, "InvalidArgument", "--version"),
    Row(("restore", "--tenant", "acme", "--version", "0"), 2, "InvalidArgument", "--version"),
    Row(("restore", "--tenant", "acme", "--version", "abc"), 2, "InvalidArgument", "--version"),
    Row(("restore", "--tenant", "acme", "--version", "999"), 1, "PublishError", "version 999"),
    Row(("restore", "--tenant", "acme", "--tag", "nope"), 1, "PublishError", "tag 'nope'"),
    Row(("restore", "--tenant", "acme", "--version", "1", "--tag", "x"), 2, "InvalidArgument", "--tag"),
    Row(("restore", "--tenant", "acme"), 2, "InvalidArgument", "--version"),
    Row(("restore", "--tenant", "nope", "--version", "1"), 1, "ConfigError", "tenant"),
    Row(
        ("restore", "--tenant", "acme", "--version", "1", "--run-id", "../x"),
        2,
        "InvalidArgument",
        "--run-id",
    ),
    # sources check
    Row(("sources", "check", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("sources", "check"), 2, "InvalidArgument", "--tenant"),
    Row(("sources",), 2, "InvalidArgument", "sources_cmd"),
    # tenant purge
    Row(("tenant", "purge", "BAD!"), 1, "ConfigError", "tenant"),
    Row(("tenant", "purge", "a,b", "--yes"), 1, "ConfigError", "tenant"),
    Row(("tenant", "purge", "acme"), 2, "InvalidArgument", "--yes"),
    Row(("tenant",), 2, "InvalidArgument", "tenant_cmd"),
    # lineage
    Row(("lineage", "notanid", "--tenant", "acme"), 2, "InvalidArgument", "chunk_id"),
    Row(("lineage", "0" * 63, "--tenant", "acme"), 2, "InvalidArgument", "chunk_id"),
    Row(("lineage", "{cid}\n", "--tenant", "acme"), 2, "InvalidArgument", "chunk_id"),
    Row(("lineage", "--tenant", "acme"), 2, "InvalidArgument", "chunk_id"),
    Row(("lineage", "{cid}"), 2, "InvalidArgument", "--tenant"),
    Row(("lineage", "{cid}", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("lineage", "0" * 64, "--tenant", "acme"), 1, NOT_FOUND, None),
    Row(("lineage", "--tenant", "acme", "--html", "/dev/null/report"), 1, "ConfigError", "--html"),
    # eval (needs no configuration; global options may come first)
    Row(("eval", "bogus"), 2, "InvalidArgument", "kind"),
    Row(("eval", "html", "--data", "/nonexistent"), 2, "InvalidArgument", "--data"),
    Row(("eval", "code", "--data", "/nonexistent"), 2, "InvalidArgument", "--data"),
    Row(("eval", "chunking", "--corpus", "/nonexistent"), 2, "InvalidArgument", "--corpus"),
    Row(("eval", "chunking"), 2, "InvalidArgument", "--corpus"),
    Row(("eval", "chunking", "--corpus", "{root}", "--k", "0"), 2, "InvalidArgument", "--k"),
    Row(("eval", "chunking", "--corpus", "{root}", "--sizes", "x"), 2, "InvalidArgument", "--sizes"),
    Row(("eval", "chunking", "--corpus", "/nonexistent"), 2, "InvalidArgument", "--corpus", config="none"),
    # config
    Row(("config",), 1, "ConfigError", "missing.yaml", config="missing"),
    Row(("config",), 1, "ConfigError", "bogus", config="badkey"),
    Row(("config",), 1, "ConfigError", "chunking.overlap_tokens", config="badvalue"),
    # model status / rollback
    Row(("model", "status", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("model", "rollback", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("model", "rollback", "--tenant", "acme"), 1, "PublishError", "tenant 'acme'"),
    Row(("model", "rollback", "--tenant", "acme", "--run-id", "a b"), 2, "InvalidArgument", "--run-id"),
    Row(("model", "rollback"), 2, "InvalidArgument", "--tenant"),
    Row(("model", "bogus"), 2, "InvalidArgument", "model_cmd"),
    # maintain
    Row(("maintain", "--tenant", "acme", "--keep-versions", "0"), 2, "InvalidArgument", "--keep-versions"),
    Row(("maintain", "--tenant", "acme", "--keep-run-tags", "-1"), 2, "InvalidArgument", "--keep-run-tags"),
    Row(("maintain", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    # run
    Row(("run", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("run", "--tenant", "acme", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("run", "--run-id", "../escape"), 2, "InvalidArgument", "--run-id"),
    Row(("run", "--run-id", ""), 2, "InvalidArgument", "--run-id"),
    # status, failures, retry
    Row(("status", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("failures", "--tenant", "nope"), 1, "ConfigError", "tenant"),
    Row(("failures",), 2, "InvalidArgument", "--tenant"),
    Row(("retry", "--tenant", "acme", "missing.md"), 1, "DocumentNotListed", "missing.md"),
    Row(("retry", "--tenant", "acme", "../secret.md"), 1, "DocumentNotListed", "../secret.md"),
    Row(("retry", "--tenant", "nope", "runbook.md"), 1, "ConfigError", "tenant"),
    Row(("retry", "--tenant", "acme", "runbook.md", "--run-id", "../x"), 2, "InvalidArgument", "--run-id"),
    Row(("retry", "--tenant", "acme"), 2, "InvalidArgument", "DOC"),
    # directory (the project has no tenant with a directory)
    Row(("directory", "refresh"), 1, "ConfigError", "tenants"),
    Row(("directory", "refresh", "--tenant", "nope"), 1, "ConfigError", "nope"),
    Row(("directory", "refresh", "--tenant", "acme"), 1, "ConfigError", "tenants.acme.directory"),
    Row(("directory", "show", "--tenant", "acme", "--user", "alice"), 2, "InvalidArgument", "--tenant"),
    Row(("directory", "show", "--tenant", "acme"), 2, "InvalidArgument", "--user"),
    Row(("directory", "bogus"), 2, "InvalidArgument", "directory_cmd"),
    # diagnose
    Row(
        ("diagnose", "--tenant", "nope", "--as", "alice", "--question", "q", "--doc", "runbook.md"),
        1,
        "ConfigError",
        "tenant",
    ),
    Row(("diagnose", "--tenant", "acme", "--as", "alice", "--question", "q"), 2, "InvalidArgument", "--doc"),
    Row(
        (
            "diagnose",
            "--tenant",
            "acme",
            "--as",
            "alice",
            "--question",
            "q",
            "--doc",
            "runbook.md",
            "-k",
            "0",
        ),
        2,
        "InvalidArgument",
        "-k",
    ),
    Row(
        (
            "diagnose",
            "--tenant",
            "acme",
            "--as",
            "alice",
            "--question",
            "q",
            "--doc",
            "runbook.md",
            "--range",
            "9:3",
        ),
        2,
        "InvalidArgument",
        "--range",
    ),
    Row(
        (
            "diagnose",
            "--tenant",
            "acme",
            "--as",
            "alice",
            "--question",
            "q",
            "--citation",
            "tessera:acme/xyz",
        ),
        2,
        "InvalidArgument",
        "citation",
    ),
    # the command itself
    Row(("bogus",), 2, "InvalidArgument", "command"),
    Row((), 2, "InvalidArgument", "command"),
]
DOCTOR = [Row(("doctor", "--tenant", "nope"), 1, "ConfigError", "tenant")]  # when the command exists


def _subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for action in parser._actions:  # argparse keeps its sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= {(*prefix, name)} | _subcommands(sub, (*prefix, name))
    return found


SUBCOMMANDS = _subcommands(build_parser())
CLI_ROWS = ROWS + (DOCTOR if ("doctor",) in SUBCOMMANDS else [])


@dataclass
class Project:
    root: Path
    cfg_path: Path
    cid: str
    secret: str


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    from tests.conftest import Workspace

    ws = Workspace(tmp_path_factory.mktemp("bad-inputs"))
    ws.tenant("acme", ACME, users={"alice": ["staff"], "carol": ["staff", "hr"]})
    ws.run("acme", "r1")
    rows = {r["doc_id"]: r["id"] for r in ws.rows("acme")}
    root = ws.root
    # its own files: the workspace rewrites tessera.yaml on each use
    text = (root / "tessera.yaml").read_text(encoding="utf-8")
    (root / "tessera-api.yaml").write_text(text + "api_keys_file: keys.yaml\n", encoding="utf-8")
    (root / "tessera-badkey.yaml").write_text(text + "bogus: 1\n", encoding="utf-8")
    bad = text.replace("overlap_tokens: 16", "overlap_tokens: 400")
    assert bad != text
    (root / "tessera-badvalue.yaml").write_text(bad, encoding="utf-8")
    (root / "keys.yaml").write_text(
        f"keys:\n  - {{sha256: {key_digest('alice-key')}, tenant: acme, user: alice}}\n"
    )
    return Project(root, root / "tessera-api.yaml", rows["runbook.md"], rows["secret.md"])


def snapshot(p: Project) -> tuple[dict[str, tuple[int, int]], int, list[dict[str, Any]]]:
    """Every file of the project with its size and mtime, and every folder (its entries are
    listed, so its own mtime adds nothing), except the audit log, which records lookups on
    purpose; the tenant's live table version and its rows."""
    files = {}
    for path in sorted(p.root.rglob("*")):
        rel = path.relative_to(p.root)
        if rel.parts[:2] != ("work", "audit"):
            st = path.lstat()
            files[str(rel)] = (-1, -1) if path.is_dir() else (st.st_size, st.st_mtime_ns)
    ident = HashEmbedder().identity
    table = TenantIndex(connect(str(p.root / "index")), "acme", ident.key, ident.dimension).table()
    assert table is not None
    rows = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    return files, int(table.version), rows


def _argv(p: Project, row: Row) -> list[str]:
    args = [
        a.replace("{cid}", p.cid).replace("{secret}", p.secret).replace("{root}", str(p.root))
        for a in row.args
    ]
    configs = {
        "main": p.cfg_path,
        "plain": p.root / "tessera.yaml",
        "missing": p.root / "missing.yaml",
        "badkey": p.root / "tessera-badkey.yaml",
        "badvalue": p.root / "tessera-badvalue.yaml",
    }
    if row.config == "none":
        return ["--fake-embedder", *args]
    return ["--config", str(configs[row.config]), "--fake-embedder", *args]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_table_covers_every_subcommand() -> None:
    covered = {row.args[: len(cmd)] for row in CLI_ROWS for cmd in SUBCOMMANDS if row.args[: len(cmd)] == cmd}
    assert SUBCOMMANDS - covered == set(), "add rows for these subcommands"


@pytest.mark.scenario("F4")
@pytest.mark.parametrize("row", CLI_ROWS, ids=[" ".join(r.args)[:60] or "(none)" for r in CLI_ROWS])
def test_cli_bad_input(project: Project, row: Row) -> None:
    before = snapshot(project)
    code, out, err = run_cli(_argv(project, row))
    assert code == row.code, (out, err)
    assert "Traceback" not in err + out and SECRET not in err + out
    if row.error is None:
        assert err == "" and out.strip() == "no results"  # fail closed, no hint of what exists
    elif row.error == NOT_FOUND:
        assert err == "tessera: not found\n" and out == ""
    else:
        last = err.strip().splitlines()[-1]
        m = re.fullmatch(r"tessera: (\w+): (.+)", last)
        assert m, err
        assert m[1] == row.error, last
        assert row.param is not None and row.param in m[2], last
        assert m[1] in _all_subclasses(TesseraError)
        if row.code == 2:  # bad usage shows the usage of the command it was given to
            assert err.startswith("usage: ") or "usage:" not in err
    assert snapshot(project) == before


# ---- the HTTP API: one body shape, {"detail": str}, for every error ----


@pytest.fixture(scope="module")
def api(project: Project) -> Iterator[str]:
    cfg = load_config(project.cfg_path)
    assert cfg.api_keys_file is not None
    with serve(create_app(cfg, HashEmbedder(), IdentityStore.load(cfg, cfg.api_keys_file))) as base:
        yield base


API_ROWS: list[tuple[str, str, dict[str, str], dict[str, str], int, str | None]] = [
    # (method, path, params, headers, status, what the detail must name)
    ("GET", "/search", {"q": "pager", "k": "0"}, KEY, 422, "k"),
    ("GET", "/search", {"q": "pager", "k": "1000"}, KEY, 422, "k"),
    ("GET", "/search", {"q": "pager", "k": "abc"}, KEY, 422, "k"),
    ("GET", "/search", {"q": "pager", "mode": "x"}, KEY, 422, "mode"),
    ("GET", "/search", {"q": "pager", "as_of": "garbage"}, KEY, 422, "as_of"),
    ("GET", "/search", {"q": "pager", "expand": "x"}, KEY, 422, "expand"),
    ("GET", "/search", {"q": "pager", "expand": "neighbors:999"}, KEY, 422, "expand"),
    ("GET", "/search", {"q": "pager", "token_budget": "0"}, KEY, 422, "token_budget"),
    ("GET", "/search", {"q": "pager", "model_version": "m" * 300}, KEY, 422, "model_version"),
    ("GET", "/search", {}, KEY, 422, "q"),
    ("GET", "/search", {"q": ""}, KEY, 422, "q"),
    ("GET", "/search", {"q": "x" * 10_000}, KEY, 422, "q"),
    ("GET", "/search", {"q": "pager", "k": "0", "mode": "x"}, KEY, 422, "mode"),
    ("GET", "/search", {"q": "pager", "model_version": "v0"}, KEY, 409, "model version"),
    ("GET", "/search", {"q": "pager"}, {}, 401, "API key"),
    ("GET", "/search", {"q": "pager"}, {"X-API-Key": "wrong"}, 401, "API key"),
    ("GET", "/search", {"q": "pager"}, {"Authorization": "Basic abc"}, 401, "API key"),
    ("POST", "/search", {"q": "pager"}, KEY, 405, "POST"),
    ("GET", "/chunks/" + "x" * 300, {}, KEY, 404, None),  # absent, unreadable or malformed: one 404
    ("GET", "/chunks/" + "0" * 64, {}, KEY, 404, None),
    ("GET", "/chunks/%0A", {}, KEY, 404, None),
    ("GET", "/chunks/{secret}", {}, {"X-API-Key": "alice-key"}, 404, None),
    ("GET", "/chunks/{cid}", {}, {}, 401, "API key"),
    ("DELETE", "/chunks/{cid}", {}, KEY, 405, "DELETE"),
    ("POST", "/openapi.json", {}, {}, 405, "POST"),
    ("GET", "/nope", {}, KEY, 404, None),
]


@pytest.mark.scenario("F4")
@pytest.mark.parametrize("row", API_ROWS, ids=[f"{r[0]} {r[1][:30]} {sorted(r[2])}" for r in API_ROWS])
def test_api_bad_input(project: Project, api: str, row: tuple[Any, ...]) -> None:
    method, path, params, headers, status, param = row
    path = path.replace("{cid}", project.cid).replace("{secret}", project.secret)
    before = snapshot(project)
    r = httpx.request(method, api + path, params=params, headers=headers, timeout=30)
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"detail"} and isinstance(body["detail"], str), body  # one shape for all
    assert "Traceback" not in r.text and SECRET not in r.text and "x" * 100 not in r.text
    if status == 422:  # FastAPI's own validation, in the same shape, naming the parameter
        assert f"query parameter {param}: " in body["detail"], body
    elif param is not None:
        assert param in body["detail"], body
    elif status == 404:
        assert body["detail"] in ("not found", "Not Found")
    assert snapshot(project) == before


def test_openapi_documents_the_one_error_body(api: str) -> None:
    spec = httpx.get(f"{api}/openapi.json").json()
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for path, item in spec["paths"].items():
        for op in item.values():
            codes = {int(c) for c in op["responses"] if c != "200"}
            assert {401, 422, 500, 503} <= codes, (path, codes)
            for code, resp in op["responses"].items():
                if code != "200":
                    ref = resp["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorModel"), (path, code, ref)


# ---- failures that are not about arguments ----


@pytest.fixture
def broken(ws: Any) -> Any:
    """A fresh tenant with a published version, and its config file with api_keys_file."""
    ws.tenant("acme", ACME, users={"alice": ["staff"]})
    ws.run("acme", "r1")
    text = (ws.root / "tessera.yaml").read_text(encoding="utf-8")
    (ws.root / "api.yaml").write_text(text + "api_keys_file: keys.yaml\n", encoding="utf-8")
    (ws.root / "keys.yaml").write_text(
        f"keys:\n  - {{sha256: {key_digest('alice-key')}, tenant: acme, user: alice}}\n"
    )
    ws.cfg_path = ws.root / "api.yaml"
    return ws


def _error(err: str) -> tuple[str, str]:
    assert "Traceback" not in err and SECRET not in err, err
    m = re.fullmatch(r"tessera: (\w+): (.+)", err.strip().splitlines()[-1])
    assert m, err
    assert m[1] in _all_subclasses(TesseraError), m[1]
    return m[1], m[2]


def test_show_with_a_missing_source_blob_names_the_revision(broken: Any) -> None:
    row = next(r for r in broken.rows("acme") if r["doc_id"] == "runbook.md")
    base = ["--config", str(broken.cfg_path), "--fake-embedder"]
    cite = f"tessera:acme/{row['id']}"
    assert run_cli([*base, "show", *W, cite])[0] == 0  # legitimate work first
    blob = broken.root / "index" / "_sources" / "acme" / row["revision"]
    blob.unlink()
    code, out, err = run_cli([*base, "show", *W, cite])
    assert code == 1 and out == ""
    kind, message = _error(err)
    assert kind == "SourceBlobMissing" and row["revision"] in message and cite in message
    code, _, err = run_cli([*base, "lineage", row["id"], "--tenant", "acme"])
    assert code == 1 and _error(err)[0] == "SourceBlobMissing" and row["revision"] in err
    code, _, err = run_cli([*base, "lineage", "--tenant", "acme", "--html", str(broken.root / "report")])
    assert code == 1 and _error(err)[0] == "SourceBlobMissing"
    cfg = load_config(broken.cfg_path)
    assert cfg.api_keys_file is not None
    with serve(create_app(cfg, HashEmbedder(), IdentityStore.load(cfg, cfg.api_keys_file))) as api:
        r = httpx.get(f"{api}/chunks/{row['id']}", headers=KEY)
        assert r.status_code == 503 and set(r.json()) == {"detail"}
        assert r.json()["detail"].startswith("SourceBlobMissing: ") and row["revision"] in r.json()["detail"]
        assert httpx.get(f"{api}/search", params={"q": "pager"}, headers=KEY).status_code == 200
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(b"tampered")  # corrupt bytes are no better than none
    code, _, err = run_cli([*base, "show", *W, cite])
    assert code == 1 and _error(err)[0] == "SourceBlobMissing" and "sha256" in err


def _data_files_gone(ws: Any) -> None:
    (table,) = (ws.root / "index").glob("chunks__acme__*.lance")
    shutil.rmtree(table / "data")


def _store_is_a_file(ws: Any) -> None:
    shutil.rmtree(ws.root / "index")
    (ws.root / "index").write_text("not a store\n", encoding="utf-8")


ALL_READERS = ("search", "show", "lineage", "run", "restore", "model", "maintain", "sources")


@pytest.mark.parametrize(
    ("damage", "commands"),
    [(_data_files_gone, ALL_READERS), (_store_is_a_file, ALL_READERS)],  # ~2 s each here
    ids=["data-gone", "store-is-a-file"],
)
def test_a_damaged_store_is_a_typed_error_on_every_command(broken: Any, damage: Any, commands: Any) -> None:
    cid = broken.rows("acme")[0]["id"]
    damage(broken)
    base = ["--config", str(broken.cfg_path), "--fake-embedder"]
    every = {
        "search": ["search", *W, "pager"],
        "show": ["show", *W, cid],
        "lineage": ["lineage", cid, "--tenant", "acme"],
        "run": ["run", "--run-id", "r2"],
        "restore": ["restore", "--tenant", "acme", "--version", "1", "--dry-run"],
        "model": ["model", "status"],
        "maintain": ["maintain", "--tenant", "acme"],
        "sources": ["sources", "check", "--tenant", "acme"],
    }
    for args in (every[c] for c in commands):
        code, _, err = run_cli([*base, *args])
        if code == 0:  # a command that does not read the damaged part may still succeed
            assert damage is _data_files_gone and "Traceback" not in err, (args, err)
            continue
        assert code == 1, (args, err)
        kind, _ = _error(err)
        assert kind != "InternalError", (args, err)  # a damaged store is not a bug
    cfg = load_config(broken.cfg_path)
    assert cfg.api_keys_file is not None
    with serve(create_app(cfg, HashEmbedder(), IdentityStore.load(cfg, cfg.api_keys_file))) as api:
        r = httpx.get(f"{api}/search", params={"q": "pager"}, headers=KEY)
        assert r.status_code == 503 and set(r.json()) == {"detail"} and "Traceback" not in r.text


def _snapshot_table(ws: Any) -> tuple[int, list[dict[str, Any]]]:
    return ws.table("acme").version, ws.rows("acme")


def test_an_unwritable_work_dir_fails_before_publish_and_changes_nothing(broken: Any) -> None:
    before = _snapshot_table(broken)
    (broken.root / "corpus" / "acme" / "new.md").write_text(
        "# New\n\nA change that waits.\n", encoding="utf-8"
    )
    shutil.rmtree(broken.root / "work")
    (broken.root / "work").write_text("a file where the work dir should be\n", encoding="utf-8")
    code, out, err = run_cli(["--config", str(broken.cfg_path), "--fake-embedder", "run", "--run-id", "r2"])
    assert code == 1
    kind, message = _error(err)
    assert (
        kind == "PublishError" and str(broken.root / "work") in message and "nothing was published" in message
    )
    line = json.loads(out.strip().splitlines()[-1])
    assert line["ok"] is False and line["error"]["type"] == "PublishError"
    (broken.root / "work").unlink()
    assert _snapshot_table(broken) == before
    assert run_cli(["--config", str(broken.cfg_path), "--fake-embedder", "run", "--run-id", "r3"])[0] == 0
    assert any(r["doc_id"] == "new.md" for r in broken.rows("acme"))  # the fix: it goes through


def _can_mount_tmpfs(where: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k none {where}"], capture_output=True
    )
    return probe.returncode == 0


def test_a_full_disk_before_publish_is_a_publish_error(broken: Any) -> None:
    """A real full filesystem: the work dir on a 256 KB tmpfs (a private mount namespace)
    filled up before the run."""
    work = broken.root / "work"
    if not _can_mount_tmpfs(work):
        pytest.skip("needs unshare and tmpfs in a user namespace")
    before = _snapshot_table(broken)
    (broken.root / "corpus" / "acme" / "new.md").write_text(
        "# New\n\n" + "A change. " * 500, encoding="utf-8"
    )
    cli = [sys.executable, "-m", "tessera.cli", "--config", str(broken.cfg_path), "--fake-embedder"]
    script = (
        f"mount -t tmpfs -o size=256k none {work} && "
        f"dd if=/dev/zero of={work}/fill bs=1k count=400 2>/dev/null; "
        f"exec {' '.join(cli)} run --run-id full"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    kind, message = _error(proc.stderr)
    assert kind == "PublishError" and "No space left on device" in message and str(work) in message
    assert "nothing was published" in message
    assert _snapshot_table(broken) == before


def _buggy() -> None:
    {"text": "a value"}[f"{SECRET} as a key"]  # a real KeyError, the secret in its message


def test_an_unexpected_exception_is_typed_and_never_quotes_its_message(capsys: Any, monkeypatch: Any) -> None:
    try:
        _buggy()
    except KeyError as e:
        assert boundary.report(ValueError(f"{SECRET} in a value")) == 1
        err = capsys.readouterr().err
        assert err.startswith("tessera: InternalError: unexpected ValueError") and SECRET not in err
        assert boundary.report(e) == 1
        err = capsys.readouterr().err
        assert "InternalError: unexpected KeyError at tests/test_bad_inputs.py" in err or "_buggy" in err
        assert SECRET not in err and "Traceback" not in err
        monkeypatch.setenv("TESSERA_TRACEBACK", "1")
        assert boundary.report(e) == 1
        assert "Traceback" in capsys.readouterr().err  # on request, never by default


def test_serve_on_a_busy_port_is_a_typed_error(project: Project) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, err = run_cli(
            ["--config", str(project.cfg_path), "--fake-embedder", "serve", "--port", str(port)]
        )
    assert code == 1 and out == ""
    kind, message = _error(err)
    assert kind == "ConfigError" and message.startswith(f"--port: cannot listen on 127.0.0.1:{port}")


def _raised_in(package: str, exc: BaseException) -> BaseException:
    """``exc`` raised from a frame of ``package`` (as a store library raises it)."""
    try:
        code = compile("raise exc", f"{package}/table.py", "exec")
        exec(code, {"__name__": f"{package}.table", "exc": exc})
    except BaseException as e:
        return e
    raise AssertionError("not raised")


def test_a_store_library_refusal_is_not_called_damage_and_never_quoted(capsys: Any, monkeypatch: Any) -> None:
    refused = _raised_in("lancedb", RuntimeError(f"lance error: Cleanup error: tag {SECRET}"))
    assert boundary.report(refused, "/srv/index") == 1
    err = capsys.readouterr().err
    assert err.startswith("tessera: StoreUnavailable: the store /srv/index refused an operation (")
    assert "damaged" not in err and SECRET not in err and "TESSERA_TRACEBACK=1" in err
    broken = _raised_in("lance", RuntimeError("LanceError(IO): Not found: /srv/index/t.lance/_versions"))
    assert boundary.report(broken, "/srv/index") == 1
    err = capsys.readouterr().err  # an I/O failure still names what is missing, and damage
    assert "could not be read" in err and "Not found: /srv/index" in err and "may be damaged" in err
    assert boundary.report(_raised_in("json", RuntimeError(SECRET)), "/srv/index") == 1
    assert capsys.readouterr().err.startswith("tessera: InternalError")  # not a store library: a bug
    monkeypatch.setenv("TESSERA_TRACEBACK", "1")
    assert boundary.report(refused, "/srv/index") == 1
    assert "Cleanup error" in capsys.readouterr().err  # the message, on request
