"""The HTTP API in the FastAPI idiom: declared security schemes, RFC 7235 challenges, health and
readiness probes, offline docs, one error shape, and the hit schema ``tessera search --json``
prints (the same query by the same principal gives the same JSON)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from tessera.api import create_app
from tessera.cli import main
from tessera.config import load_config
from tessera.embedding.fake import HashEmbedder
from tessera.search.identities import ReloadingIdentities
from tessera.search.principal import IdentityStore, key_digest

KEYS = {"alice-key": ("acme", "alice"), "mallory-key": ("acme", "mallory")}
ALICE = {"X-API-Key": "alice-key"}
DOCS: dict[str, str | bytes] = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "escalation.md": "# Escalation\n\nPage the manager when the on-call engineer does not answer.\n",
    "secret.md": "# Salaries\n\nSalary bands for engineers.\n",
    "_access.yaml": "documents:\n  - match: secret.md\n    groups: [hr]\n",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.conftest import Workspace

    ws = Workspace(tmp_path_factory.mktemp("api_operator"))
    ws.tenant("acme", DOCS, users={"alice": ["staff"], "mallory": []})
    ws.run("acme", "r1")
    keys = ws.root / "keys.yaml"
    keys.write_text(
        "keys:\n"
        + "".join(f"  - {{sha256: {key_digest(k)}, tenant: {t}, user: {u}}}\n" for k, (t, u) in KEYS.items()),
        encoding="utf-8",
    )
    ws.config()
    data = yaml.safe_load((ws.root / "tessera.yaml").read_text(encoding="utf-8"))
    (ws.root / "tessera.yaml").write_text(yaml.safe_dump({**data, "api_keys_file": "keys.yaml"}))
    yield ws


@pytest.fixture(scope="module")
def client(project: Any) -> TestClient:
    cfg = load_config(project.root / "tessera.yaml")
    assert cfg.api_keys_file is not None
    app = create_app(cfg, HashEmbedder(), IdentityStore.load(cfg, cfg.api_keys_file))
    return TestClient(app, raise_server_exceptions=False)


def _only_detail(body: Any) -> None:
    assert isinstance(body, dict) and set(body) == {"detail"} and isinstance(body["detail"], str), body


def test_401_carries_a_challenge_and_the_error_shape(client: TestClient) -> None:
    r = client.get("/search", params={"q": "page"})
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == 'Bearer realm="tessera"'
    _only_detail(r.json())
    for headers in ({"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}, {"X-API-Key": ""}):
        r = client.get("/search", params={"q": "page"}, headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["WWW-Authenticate"].startswith('Bearer realm="tessera"'), headers
        _only_detail(r.json())
    wrong = client.get("/search", params={"q": "page"}, headers={"X-API-Key": "wrong"})
    assert 'error="invalid_token"' in wrong.headers["WWW-Authenticate"]
    # another scheme in Authorization is no key at all; the chunk route is guarded the same way
    basic = client.get(f"/chunks/{'0' * 64}", headers={"Authorization": "Basic YWxpY2Uta2V5Og=="})
    assert basic.status_code == 401 and "WWW-Authenticate" in basic.headers
    assert client.get(
        "/search", params={"q": "page"}, headers={"Authorization": "Bearer alice-key"}
    ).is_success


def test_openapi_declares_the_security_schemes(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["ApiKey"] == {**schemes["ApiKey"], "type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert schemes["Bearer"]["type"] == "http" and schemes["Bearer"]["scheme"] == "bearer"
    for path in ("/search", "/chunks/{chunk_id}"):
        op = spec["paths"][path]["get"]
        assert {name for req in op["security"] for name in req} == {"ApiKey", "Bearer"}, path
        assert "WWW-Authenticate" in op["responses"]["401"]["headers"]
        for code in ("401", "422", "500", "503"):
            ref = op["responses"][code]["content"]["application/json"]["schema"]["$ref"]
            assert ref.endswith("/ErrorModel"), (path, code)
        names = {p["name"].lower() for p in op.get("parameters", [])}
        assert not names & {"x-api-key", "authorization"}  # credentials are a scheme, not parameters
    assert not {"/healthz", "/readyz"} & set(spec["paths"])  # probes, not API operations


def test_every_error_has_one_shape(client: TestClient) -> None:
    answers = [
        (404, client.get(f"/chunks/{'0' * 64}", headers=ALICE)),
        (404, client.get("/nowhere")),
        (405, client.post("/search", headers=ALICE)),
        (409, client.get("/search", params={"q": "x", "model_version": "v0"}, headers=ALICE)),
        (422, client.get("/search", params={"q": "x", "k": "0"}, headers=ALICE)),
        (422, client.get("/search", headers=ALICE)),
    ]
    for code, r in answers:
        assert r.status_code == code, (code, r.status_code, r.text)
        _only_detail(r.json())
    assert "query parameter k" in answers[4][1].json()["detail"]
    assert "query parameter q" in answers[5][1].json()["detail"]


class _Broken(HashEmbedder):
    def embed_query(self, text: str) -> Any:
        raise KeyError("an unexpected bug")

    def embed(self, texts: Any) -> Any:
        raise KeyError("an unexpected bug")


def test_500_has_the_error_shape_and_names_the_type_only(project: Any) -> None:
    cfg = load_config(project.root / "tessera.yaml")
    assert cfg.api_keys_file is not None
    app = create_app(cfg, _Broken(), IdentityStore.load(cfg, cfg.api_keys_file))
    r = TestClient(app, raise_server_exceptions=False).get("/search", params={"q": "page"}, headers=ALICE)
    assert r.status_code == 500 and r.json() == {"detail": "internal error (KeyError)"}


class _Untouchable:
    """Identities that fail the test if anything looks them up."""

    def principal(self, api_key: str | None) -> Any:
        raise AssertionError("a health probe looked up an identity")


def test_healthz_needs_no_key_reads_nothing_and_leaks_nothing(project: Any, tmp_path: Path) -> None:
    data = yaml.safe_load((project.root / "tessera.yaml").read_text(encoding="utf-8"))
    data["store"]["uri"] = str(tmp_path / "no-store")  # a store that does not exist
    (tmp_path / "tessera.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    cfg = load_config(tmp_path / "tessera.yaml")
    client = TestClient(create_app(cfg, HashEmbedder(), _Untouchable()), raise_server_exceptions=False)
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert str(tmp_path) not in r.text and "acme" not in r.text
    assert not (tmp_path / "no-store").exists()
    assert client.get("/healthz", headers={"X-API-Key": "wrong"}).status_code == 200  # a key is ignored


def test_readyz_is_200_then_503_when_the_store_is_gone(project: Any, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(project.root, root)
    cfg = load_config(root / "tessera.yaml")
    assert cfg.api_keys_file is not None
    client = TestClient(create_app(cfg, HashEmbedder(), IdentityStore.load(cfg, cfg.api_keys_file)))
    ok = client.get("/readyz")
    assert ok.status_code == 200 and ok.json() == {"status": "ready"}
    shutil.rmtree(cfg.store.uri)
    down = client.get("/readyz")
    assert down.status_code == 503 and down.json()["detail"].startswith("not ready: index unavailable")
    _only_detail(down.json())
    assert str(root) not in down.text  # the path goes to the server log, not to the caller
    assert client.get("/healthz").status_code == 200  # alive, though not ready


def test_readyz_is_503_while_identities_cannot_load(project: Any, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(project.root, root)
    cfg = load_config(root / "tessera.yaml")
    identities = ReloadingIdentities.from_config(cfg, ttl_s=0)
    client = TestClient(create_app(cfg, HashEmbedder(), identities))
    assert client.get("/readyz").status_code == 200
    (root / "keys.yaml").write_text("keys: [oops\n", encoding="utf-8")
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json() == {"detail": "not ready: identities unavailable"}
    assert client.get("/search", params={"q": "page"}, headers=ALICE).status_code == 503  # fail closed


def test_docs_are_served_offline(client: TestClient) -> None:
    for page in ("/docs", "/redoc"):
        r = client.get(page)
        assert r.status_code == 200, page
        urls = re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", r.text)
        assert urls, page
        assert not re.search(r"https?://", r.text), (page, re.findall(r"https?://\S+", r.text))
        for url in urls:
            assert client.get(url).status_code == 200, (page, url)


def test_cli_json_and_api_json_are_the_same_hits(project: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = project.root / "tessera.yaml"
    query = ["--k", "3", "--mode", "hybrid", "page the on-call engineer"]
    argv = ["--config", str(cfg), "--fake-embedder", "search", "--tenant", "acme", "--user", "alice"]
    assert main([*argv, "--json", *query]) == 0
    from_cli = json.loads(capsys.readouterr().out)
    loaded = load_config(cfg)
    assert loaded.api_keys_file is not None
    app = create_app(loaded, HashEmbedder(), IdentityStore.load(loaded, loaded.api_keys_file))
    params = {"q": query[-1], "k": "3", "mode": "hybrid"}
    from_api = TestClient(app).get("/search", params=params, headers=ALICE).json()["results"]
    assert len(from_cli) >= 2 and from_cli == from_api
    assert {"chunk_id", "doc_id", "text", "score", "anchor", "citation", "sources", "trust"} <= set(
        from_cli[0]
    )
    assert from_cli[0]["citation"]["id"] == from_cli[0]["citation"]["citation"]


def test_cli_show_json_is_the_api_chunk(project: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = project.root / "tessera.yaml"
    loaded = load_config(cfg)
    assert loaded.api_keys_file is not None
    client = TestClient(create_app(loaded, HashEmbedder(), IdentityStore.load(loaded, loaded.api_keys_file)))
    top = client.get("/search", params={"q": "pager tool"}, headers=ALICE).json()["results"][0]
    from_api = client.get(f"/chunks/{top['chunk_id']}", headers=ALICE).json()
    argv = ["--config", str(cfg), "--fake-embedder", "show", "--tenant", "acme", "--user", "alice"]
    assert main([*argv, "--json", top["citation"]["id"]]) == 0
    assert json.loads(capsys.readouterr().out) == from_api
