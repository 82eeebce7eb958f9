"""The HTTP API against a running server on loopback: auth, 404 for foreign chunks, OpenAPI,
and a bounded schemathesis run."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tessera.api import create_app
from tessera.search.principal import IdentityStore, key_digest
from tests.apiserver import serve

KEYS = {"alice-key": ("acme", "alice"), "mallory-key": ("acme", "mallory"), "gina-key": ("globex", "gina")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any, str]]:
    from tests.conftest import Workspace

    ws = Workspace(tmp_path_factory.mktemp("api"))
    ws.tenant("acme", {"a.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer.\n"},
              users={"alice": ["staff"], "mallory": []})  # fmt: skip
    ws.tenant("globex", {"g.md": "# Globex\n\nDispatch the night shift.\n"}, groups=["employees"],
              users={"gina": ["employees"]})  # fmt: skip
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    keys = ws.root / "keys.yaml"
    keys.write_text(
        "keys:\n"
        + "".join(f"  - {{sha256: {key_digest(k)}, tenant: {t}, user: {u}}}\n" for k, (t, u) in KEYS.items()),
        encoding="utf-8",
    )
    cfg = ws.config()
    app = create_app(cfg, ws.embedder, IdentityStore.load(cfg, keys))
    globex_chunk = ws.rows("globex")[0]["id"]
    with serve(app) as base:
        yield base, app, globex_chunk


def test_auth_is_required(server: tuple[str, Any, str]) -> None:
    base, _, _ = server
    assert httpx.get(f"{base}/search", params={"q": "page"}).status_code == 401
    assert (
        httpx.get(f"{base}/search", params={"q": "page"}, headers={"X-API-Key": "wrong"}).status_code == 401
    )
    assert httpx.get(f"{base}/chunks/{'0' * 64}", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_search_and_chunk_fetch(server: tuple[str, Any, str]) -> None:
    base, _, globex_chunk = server
    r = httpx.get(
        f"{base}/search",
        params={"q": "page the on-call", "mode": "hybrid"},
        headers={"X-API-Key": "alice-key"},
    )
    assert r.status_code == 200
    results = r.json()["results"]
    assert results and {x["doc_id"] for x in results} == {"a.md"}
    top = results[0]
    assert top["trust"] == "untrusted-source-data" and top["citation"]["citation"].startswith("tessera:acme/")
    chunk = httpx.get(f"{base}/chunks/{top['chunk_id']}", headers={"Authorization": "Bearer alice-key"})
    assert chunk.status_code == 200 and chunk.json()["source_slice"] == top["text"]
    # a chunk of another tenant, or one the principal may not read, is 404, never 403
    assert httpx.get(f"{base}/chunks/{globex_chunk}", headers={"X-API-Key": "alice-key"}).status_code == 404
    assert (
        httpx.get(f"{base}/chunks/{top['chunk_id']}", headers={"X-API-Key": "mallory-key"}).status_code == 404
    )
    assert httpx.get(f"{base}/chunks/{top['chunk_id']}", headers={"X-API-Key": "gina-key"}).status_code == 404
    empty = httpx.get(f"{base}/search", params={"q": "page"}, headers={"X-API-Key": "mallory-key"})
    assert empty.status_code == 200 and empty.json()["results"] == []
    wrong = httpx.get(
        f"{base}/search", params={"q": "x", "model_version": "v0"}, headers={"X-API-Key": "alice-key"}
    )
    assert wrong.status_code == 409 and "does not match" in wrong.json()["detail"]


def test_openapi_schema_is_served_and_valid(server: tuple[str, Any, str]) -> None:
    base, _, _ = server
    spec = httpx.get(f"{base}/openapi.json").json()
    assert spec["openapi"].startswith("3.") and {"/search", "/chunks/{chunk_id}"} <= set(spec["paths"])
    schemathesis.openapi.from_dict(spec)  # parses and validates the document


def test_schemathesis_fuzz_bounded(server: tuple[str, Any, str]) -> None:
    base, _, _ = server
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    failures: list[str] = []
    for op_result in schema.get_all_operations():
        operation = op_result.ok()
        _fuzz(operation, failures)
    assert failures == []


def _fuzz(operation: Any, failures: list[str]) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy())
    def check(case: Any) -> None:
        response = case.call(headers={"X-API-Key": "alice-key"})
        if response.status_code >= 500:
            failures.append(
                f"{operation.label}: {response.status_code} for {case.path_parameters} {case.query}"
            )
        case.validate_response(response)

    check()


def test_a_question_asked_again_by_its_caller_is_not_embedded_again(tmp_path: Path) -> None:
    """The app remembers its model's query vectors per caller: the same question, on any page,
    embeds once and answers as it did the first time; another question is embedded, and so is
    the same question from another user or tenant (a remembered vector answers sooner, so a
    shared one would tell a caller what someone else asked)."""
    from tests.conftest import Workspace

    ws = Workspace(tmp_path)
    ws.tenant("acme", {"a.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer.\n"},
              users={"alice": ["staff"], "bob": ["staff"]})  # fmt: skip
    ws.tenant("globex", {"g.md": "# Globex\n\nPage the night shift.\n"}, groups=["employees"],
              users={"gina": ["employees"]})  # fmt: skip
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    keys = ws.root / "keys.yaml"
    listed = {"alice-key": ("acme", "alice"), "bob-key": ("acme", "bob"), "gina-key": ("globex", "gina")}
    lines = [f"  - {{sha256: {key_digest(k)}, tenant: {t}, user: {u}}}\n" for k, (t, u) in listed.items()]
    keys.write_text("keys:\n" + "".join(lines), encoding="utf-8")
    asked: list[str] = []
    inner = ws.embedder

    class Counting:
        identity = inner.identity

        def embed_documents(self, texts: Sequence[str]) -> Any:
            return inner.embed_documents(texts)

        def embed_query(self, text: str) -> Any:
            asked.append(text)
            return inner.embed_query(text)

    cfg = ws.config()
    page = "page the on-call"
    asks = [("alice", page, 5), ("alice", page, 5), ("bob", page, 5), ("alice", "dispatch", 5),
            ("alice", page, 1), ("gina", page, 5), ("bob", page, 5)]  # fmt: skip
    answers: dict[tuple[str, int], list[list[str]]] = {}
    with serve(create_app(cfg, Counting(), IdentityStore.load(cfg, keys))) as base:
        for user, q, k in asks:
            r = httpx.get(f"{base}/search", params={"q": q, "k": k}, headers={"X-API-Key": f"{user}-key"})
            assert r.status_code == 200
            answers.setdefault((user, k), []).append([x["chunk_id"] for x in r.json()["results"]])
    assert asked == [page, page, "dispatch", page]  # alice, bob, alice, gina
    alice = answers[("alice", 5)]
    assert alice[0] and alice[1] == alice[0] and answers[("alice", 1)] == [alice[0][:1]]
    assert answers[("bob", 5)] == [alice[0], alice[0]]  # the same rows through the same groups
    assert answers[("gina", 5)][0] and not set(answers[("gina", 5)][0]) & set(alice[0])
