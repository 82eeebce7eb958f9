"""The public Python API: a tenant opened as one principal searches, shows and traces only what
that principal may read, and every retrieval is audited.

Attacks: an unknown user, another tenant's API key, both or neither identity, a restricted
chunk's citation, another tenant's citation, a citation for a chunk that does not exist. Each
is refused the same way, and the legitimate calls still work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tessera.client import TenantReader, open_tenant
from tessera.errors import AccessDenied, ConfigError
from tessera.search.audit import audit_path
from tessera.search.principal import key_digest

ACME: dict[str, str | bytes] = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "secret.md": "# Salaries\n\nSalary bands for engineers are reviewed yearly.\n",
    "_access.yaml": "documents:\n  - match: secret.md\n    groups: [hr]\n",
}


@pytest.fixture
def indexed(ws: Any) -> Any:
    ws.tenant("acme", ACME, users={"alice": ["staff"], "hank": ["staff", "hr"]})
    ws.tenant("globex", {"plan.md": "# Plan\n\nQuixotic dispatcher schedules for the launch.\n"})
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    return ws


def _open(ws: Any, tenant: str, user: str) -> TenantReader:
    return open_tenant(ws.root / "tessera.yaml", tenant, user=user, embedders=[ws.embedder])


def _audit(ws: Any) -> list[dict[str, Any]]:
    path = audit_path(ws.config().store.work_dir)
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_search_show_and_lineage_as_a_principal(indexed: Any) -> None:
    ws = indexed
    alice = _open(ws, "acme", "alice")
    hits = alice.search("page the on-call engineer pager tool", k=5)
    assert hits and {h.doc_id for h in hits} == {"runbook.md"}  # the hr document never shows
    top = hits[0]
    shown = alice.show(str(top.citation))
    source = (ws.root / "corpus" / "acme" / "runbook.md").read_bytes()
    assert shown.text == source[top.byte_start : top.byte_end].decode()
    trace = alice.lineage(str(top.citation))
    assert trace.as_dict()["chunk_id"] == top.chunk_id
    hank = _open(ws, "acme", "hank")
    assert "secret.md" in {h.doc_id for h in hank.search("salary bands reviewed", k=5)}
    surfaces = {(r["surface"], r["action"], r["outcome"]) for r in _audit(ws)}
    assert {("python", "search", "ok"), ("python", "show", "ok"), ("python", "lineage", "ok")} <= surfaces
    assert all("Salary" not in json.dumps(r) for r in _audit(ws))  # no content in the audit log


def test_what_the_principal_may_not_read_is_not_found(indexed: Any) -> None:
    ws = indexed
    hank, alice = _open(ws, "acme", "hank"), _open(ws, "acme", "alice")
    secret = next(h for h in hank.search("salary bands reviewed", k=5) if h.doc_id == "secret.md")
    globex_hit = _open(ws, "globex", "alice").search("quixotic dispatcher", k=1)[0]
    missing = "tessera:acme/" + "0" * 64
    for citation in (str(secret.citation), str(globex_hit.citation), globex_hit.chunk_id, missing):
        with pytest.raises(AccessDenied, match="not found"):
            alice.show(citation)
        with pytest.raises(AccessDenied, match="not found"):
            alice.lineage(citation)
    assert alice.show(str(alice.search("pager tool", k=1)[0].citation)).text  # still works
    refused = [r for r in _audit(ws) if r["outcome"] == "not_found"]
    assert len(refused) == 8 and all(r["chunk_ids"] == [] and r["requested_sha256"] for r in refused)


def test_only_a_known_principal_of_the_tenant_opens_it(indexed: Any, tmp_path: Path) -> None:
    ws = indexed
    cfg_path = ws.root / "tessera.yaml"
    with pytest.raises(AccessDenied):
        open_tenant(cfg_path, "acme", user="mallory", embedders=[ws.embedder])
    with pytest.raises(ConfigError):
        open_tenant(cfg_path, "initech", user="alice", embedders=[ws.embedder])
    with pytest.raises(ValueError, match="exactly one"):
        open_tenant(cfg_path, "acme", embedders=[ws.embedder])
    with pytest.raises(ValueError, match="exactly one"):
        open_tenant(cfg_path, "acme", user="alice", api_key="k", embedders=[ws.embedder])
    keys = tmp_path / "keys.yaml"
    entries = [
        {"sha256": key_digest("globex-key"), "tenant": "globex", "user": "alice"},
        {"sha256": key_digest("acme-key"), "tenant": "acme", "user": "alice"},
    ]
    keys.write_text(yaml.safe_dump({"keys": entries}), encoding="utf-8")
    data = yaml.safe_load(cfg_path.read_text())
    data["api_keys_file"] = str(keys)
    cfg_path.write_text(yaml.safe_dump(data))
    with pytest.raises(AccessDenied):  # a globex key never opens acme
        open_tenant(cfg_path, "acme", api_key="globex-key", embedders=[ws.embedder])
    with pytest.raises(AccessDenied):
        open_tenant(cfg_path, "acme", api_key="no-such-key", embedders=[ws.embedder])
    by_key = open_tenant(cfg_path, "acme", api_key="acme-key", embedders=[ws.embedder])
    assert by_key.principal.user == "alice" and by_key.search("pager tool", k=1)


def test_lineage_names_only_copies_the_principal_may_read(ws: Any) -> None:
    same = "# Policy\n\nBadges are renewed every year at the front desk.\n"
    ws.tenant(
        "acme",
        {"public.md": same, "copy.md": same, "restricted.md": same, **{"_access.yaml": ACME["_access.yaml"]}},
        users={"alice": ["staff"], "hank": ["staff", "hr"]},
    )
    (ws.root / "corpus" / "acme" / "_access.yaml").write_text(
        "documents:\n  - match: restricted.md\n    groups: [hr]\n", encoding="utf-8"
    )
    ws.run("acme", "r1")
    alice, hank = _open(ws, "acme", "alice"), _open(ws, "acme", "hank")
    rows = {r["doc_id"]: r["id"] for r in ws.rows("acme")}
    mine = f"tessera:acme/{rows['public.md']}"
    assert set(hank.lineage(mine).duplicates) == {rows["copy.md"], rows["restricted.md"]}
    assert alice.lineage(mine).duplicates == [rows["copy.md"]]  # the hr copy is not named to alice


def test_the_python_api_example_runs(indexed: Any, capsys: Any) -> None:
    import runpy

    example = Path(__file__).resolve().parents[1] / "examples" / "python_api.py"
    main = runpy.run_path(str(example))["main"]
    args = ["--config", str(indexed.root / "tessera.yaml"), "--fake-embedder", "--query", "pager tool"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "runbook.md" in out and "show tessera:acme/" in out and "lineage: parser" in out
    assert "LangChain: ['tessera:acme/" in out and "LlamaIndex: [('tessera:acme/" in out
