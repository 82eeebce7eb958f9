"""``GET /ops/diagnose``: keyed like ``/search``, for the tenant's operators only (fail closed),
within their own tenant, answering the report ``tessera diagnose --json`` prints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from tessera.api import create_app
from tessera.cli import main
from tessera.config import load_config
from tessera.embedding.fake import HashEmbedder
from tessera.search.principal import IdentityStore, key_digest
from tests.conftest import Workspace

KEYS = {
    "olga-key": ("acme", "olga"),  # an operator of acme
    "alice-key": ("acme", "alice"),  # a user of acme, not an operator
    "gus-key": ("globex", "gus"),  # an operator of globex
    "ivan-key": ("initech", "ivan"),  # initech lists no operators: none by default
}
OLGA, ALICE, GUS, IVAN = ({"X-API-Key": k} for k in KEYS)
DOCS: dict[str, str | bytes] = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "secret.md": "# Salaries\n\nSalary bands for engineers are reviewed yearly.\n",
    "_access.yaml": "documents:\n  - match: secret.md\n    groups: [hr]\n",
}
AS_OF = "2026-01-01T00:00:00Z"
OK = {"user": "alice", "q": "page the on-call engineer", "doc": "runbook.md", "as_of": AS_OF}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    ws = Workspace(tmp_path_factory.mktemp("api_diagnose"))
    ws.tenant("acme", DOCS, users={"alice": ["staff"], "olga": ["ops"]})
    ws.tenant("globex", {"runbook.md": DOCS["runbook.md"]}, users={"gus": ["staff"]})
    ws.tenant("initech", {"runbook.md": DOCS["runbook.md"]}, users={"ivan": ["staff"]})
    ws.tenants["acme"]["access"]["operators"] = ["olga"]
    ws.tenants["globex"]["access"]["operators"] = ["gus"]
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    lines = "".join(
        f"  - {{sha256: {key_digest(k)}, tenant: {t}, user: {u}}}\n" for k, (t, u) in KEYS.items()
    )
    (ws.root / "keys.yaml").write_text("keys:\n" + lines, encoding="utf-8")
    data = yaml.safe_load((ws.root / "tessera.yaml").read_text(encoding="utf-8"))
    (ws.root / "tessera.yaml").write_text(yaml.safe_dump({**data, "api_keys_file": "keys.yaml"}))
    yield ws


@pytest.fixture(scope="module")
def client(project: Workspace) -> TestClient:
    cfg = load_config(project.root / "tessera.yaml")
    assert cfg.api_keys_file is not None
    app = create_app(cfg, HashEmbedder(), IdentityStore.load(cfg, cfg.api_keys_file))
    return TestClient(app, raise_server_exceptions=False)


def _only_detail(body: Any) -> str:
    assert isinstance(body, dict) and set(body) == {"detail"} and isinstance(body["detail"], str), body
    return str(body["detail"])


def test_an_operator_gets_the_cli_report(
    project: Workspace, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    r = client.get("/ops/diagnose", params=OK, headers=OLGA)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["verdict_stage"] == "retrieved" and body["rank"] == 1 and body["tenant"] == "acme"
    cfg = str(project.root / "tessera.yaml")
    args = ["--tenant", "acme", "--as", "alice", "--question", OK["q"], "--doc", "runbook.md"]
    assert main(["--config", cfg, "--fake-embedder", "diagnose", *args, "--as-of", AS_OF, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == body  # one report, one serializer
    assert client.get("/ops/diagnose", params=OK, headers={"Authorization": "Bearer olga-key"}).is_success


def test_the_operator_sees_why_a_user_is_denied_without_the_text(client: TestClient) -> None:
    params = {**OK, "q": "salary bands", "doc": "secret.md"}
    r = client.get("/ops/diagnose", params=params, headers=OLGA)
    assert r.status_code == 200 and r.json()["verdict_stage"] == "authorization"
    assert "Salary bands" not in r.text and "reviewed yearly" not in r.text


def test_non_operators_are_403(client: TestClient) -> None:
    for headers in (ALICE, IVAN):  # a plain user; a tenant with no operators configured
        r = client.get("/ops/diagnose", params=OK, headers=headers)
        assert r.status_code == 403, (headers, r.text)
        assert "not an operator" in _only_detail(r.json())
    assert client.get("/ops/failures", headers=ALICE).status_code == 403  # the same dependency


def test_another_tenants_operator_is_403(project: Workspace, client: TestClient) -> None:
    r = client.get("/ops/diagnose", params={**OK, "tenant": "acme"}, headers=GUS)
    assert r.status_code == 403 and "own tenant" in _only_detail(r.json())
    chunk = next(row["id"] for row in project.rows("acme") if row["doc_id"] == "secret.md")
    cited = {"user": "gus", "q": "salary", "citation": f"tessera:acme/{chunk}"}
    r = client.get("/ops/diagnose", params=cited, headers=GUS)
    assert r.status_code == 403 and "own tenant" in _only_detail(r.json())
    # acme's chunk id under globex's own name: not in globex's table, nothing of acme's shown
    r = client.get("/ops/diagnose", params={**cited, "citation": chunk}, headers=GUS)
    assert r.status_code == 422 and "not in the live table of tenant 'globex'" in _only_detail(r.json())
    # within its own tenant, it works; naming its own tenant too
    own = {**OK, "user": "gus", "tenant": "globex"}
    r = client.get("/ops/diagnose", params=own, headers=GUS)
    assert r.status_code == 200 and r.json()["tenant"] == "globex", r.text


def test_missing_or_wrong_key_is_401(client: TestClient) -> None:
    for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
        for params in (OK, {}):  # before any parameter is looked at
            r = client.get("/ops/diagnose", params=params, headers=headers)
            assert r.status_code == 401, (headers, params, r.status_code)
            assert r.headers["WWW-Authenticate"].startswith('Bearer realm="tessera"')
            _only_detail(r.json())


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({"user": "alice", "doc": "runbook.md"}, "query parameter q"),
        ({**OK, "k": "0"}, "query parameter k"),
        ({**OK, "range": "x"}, "query parameter range"),
        ({**OK, "range": "9:2"}, "query parameter range"),
        ({**OK, "expect": "x", "range": "0:4"}, "query parameter range"),
        ({"user": "alice", "q": "x"}, "query parameter doc"),
        ({**OK, "citation": "tessera:acme/" + "0" * 64}, "query parameter doc"),
        ({**OK, "doc": None, "citation": "nope"}, "query parameter citation"),
        ({**OK, "as_of": "yesterday"}, "query parameter as_of"),
    ],
)
def test_bad_parameters_are_422(client: TestClient, params: dict[str, Any], names: str) -> None:
    r = client.get("/ops/diagnose", params={k: v for k, v in params.items() if v is not None}, headers=OLGA)
    assert r.status_code == 422, r.text
    assert names in _only_detail(r.json())


def test_openapi_declares_the_operator_answers(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    op = spec["paths"]["/ops/diagnose"]["get"]
    assert {name for req in op["security"] for name in req} == {"ApiKey", "Bearer"}
    assert "WWW-Authenticate" in op["responses"]["401"]["headers"]
    for code in ("401", "403", "422", "500", "503"):
        ref = op["responses"][code]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/ErrorModel"), code
    ok = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ok.endswith("/Diagnosis")
    names = {p["name"] for p in op["parameters"]}
    assert {"user", "q", "doc", "citation", "range", "expect", "k", "as_of"} <= names


def test_every_operator_answer_is_audited_first_and_never_quotes_content(
    project: Workspace, client: TestClient, tmp_path: Any
) -> None:
    from tessera.search.audit import AuditLog, audit_path

    path = audit_path(load_config(project.root / "tessera.yaml").store.work_dir)
    before = len(path.read_text().splitlines()) if path.exists() else 0
    params = {**OK, "q": "salary bands", "doc": "secret.md"}
    assert client.get("/ops/diagnose", params=params, headers=OLGA).status_code == 200
    assert client.get("/ops/failures", headers=OLGA).status_code == 200
    assert client.get("/ops/diagnose", params=OK, headers=ALICE).status_code == 403  # refused: no answer
    lines = [json.loads(x) for x in path.read_text().splitlines()[before:]]
    assert [(r["action"], r["user"], r.get("subject")) for r in lines] == [
        ("diagnose", "olga", "alice"),
        ("failures", "olga", None),
    ]
    assert lines[0]["query_len"] == len("salary bands") and lines[0]["requested_sha256"]
    assert lines[1]["k"] == 0  # how many queued documents were answered
    text = path.read_text()
    assert "salary bands" not in text and "secret.md" not in text  # digests only
    # no answer without its audit line: an unwritable log is 503 and the report is withheld
    cfg = load_config(project.root / "tessera.yaml")
    blocked = tmp_path / "audit-dir-is-a-file"
    blocked.write_text("")
    keys = IdentityStore.load(cfg, project.root / "keys.yaml")
    app = create_app(cfg, HashEmbedder(), keys, audit=AuditLog(blocked))
    broken = TestClient(app, raise_server_exceptions=False)
    for url, kw in (("/ops/diagnose", {"params": OK}), ("/ops/failures", {})):
        r = broken.get(url, headers=OLGA, **kw)
        assert r.status_code == 503 and "audit" in _only_detail(r.json()), url
        assert "verdict_stage" not in r.text and "failures" not in r.json()


def test_operators_reload_with_the_identities(project: Workspace, tmp_path: Any) -> None:
    """A server that reloads its identities also reloads who its operators are: an operator
    removed from the configuration is refused from the next reload on, one added is let in."""
    from tessera.search.identities import ReloadingIdentities

    cfg_path = project.root / "tessera.yaml"
    original = cfg_path.read_text(encoding="utf-8")
    data = yaml.safe_load(original)
    data["api_keys_file"] = "keys.yaml"
    now = [0.0]

    def write(operators: list[str]) -> None:
        data["tenants"]["acme"]["access"]["operators"] = operators
        cfg_path.write_text(yaml.safe_dump(data), encoding="utf-8")
        now[0] += 10.0  # past the reload bound

    try:
        write(["olga"])
        ids = ReloadingIdentities(cfg_path, ttl_s=5.0, clock=lambda: now[0])
        app = create_app(load_config(cfg_path), HashEmbedder(), ids)
        live = TestClient(app, raise_server_exceptions=False)
        assert live.get("/ops/failures", headers=OLGA).status_code == 200
        assert live.get("/ops/failures", headers=ALICE).status_code == 403
        write(["alice"])  # olga removed, alice added
        assert live.get("/ops/failures", headers=OLGA).status_code == 403
        assert live.get("/ops/failures", headers=ALICE).status_code == 200
        write([])  # none: fail closed
        assert live.get("/ops/failures", headers=ALICE).status_code == 403
        assert live.get("/ops/diagnose", params=OK, headers=ALICE).status_code == 403
    finally:
        cfg_path.write_text(original, encoding="utf-8")
