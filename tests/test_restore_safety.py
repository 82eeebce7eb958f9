"""Safe restore: publications by default, counts before changes, the guard, a dry run (C6).

Attacks: ``restore --version 1`` (the empty internal version of a new table), another untagged
internal version (an index refresh), a publication that would empty the tenant or remove most
of it, a tag that does not exist. Each is refused with nothing changed, and a legitimate
restore of a publication (by version or tag) still works and is logged.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tessera.cli import main
from tessera.errors import RestoreBlocked
from tessera.store.restore import RestoreGuard

from .test_lifecycle import md_sections


def _cli(ws: Any, *args: str) -> int:
    return main(["--config", str(ws.config().path), "--fake-embedder", *args])


@pytest.fixture
def history(ws: Any) -> tuple[Any, dict[str, int]]:
    src = ws.tenant("acme", {f"d{i:02d}.md": md_sections(f"D{i}", 1) for i in range(12)})
    versions = {"r1": ws.run("acme", "r1")["publish"]["version"]}
    for i in range(6, 12):
        (src / f"d{i:02d}.md").unlink()
    versions["r2"] = ws.run("acme", "r2", allow_mass_delete=True)["publish"]["version"]  # 6 left
    (src / "d00.md").write_text(md_sections("D0", 2, title="D0 v3"), encoding="utf-8")
    versions["r3"] = ws.run("acme", "r3")["publish"]["version"]
    return ws, versions


@pytest.mark.scenario("safety-restore", "C6")
def test_internal_versions_need_the_explicit_flag(history: tuple[Any, dict[str, int]], capsys: Any) -> None:
    ws, versions = history
    before, version = ws.rows("acme"), ws.table("acme").version
    capsys.readouterr()
    assert _cli(ws, "restore", "--tenant", "acme", "--version", "1") == 1  # the empty first version
    err = capsys.readouterr().err
    assert "RestoreBlocked" in err and "not a publication" in err and "holds no documents" in err
    untagged = versions["r1"] - 1  # the data commit before r1's index refresh: no publication names it
    known = {int(v["version"]) for v in ws.table("acme").list_versions()}
    tagged = {int(t["version"]) for t in ws.table("acme").tags.list().values()}
    assert untagged in known and untagged not in tagged
    assert _cli(ws, "restore", "--tenant", "acme", "--version", str(untagged)) == 1
    assert "not a publication" in capsys.readouterr().err
    assert _cli(ws, "restore", "--tenant", "acme", "--tag", "no-such-tag") == 1
    assert "does not exist" in capsys.readouterr().err
    assert ws.rows("acme") == before and ws.table("acme").version == version  # nothing changed
    # the explicit flag still refuses to empty the tenant without the override
    assert _cli(ws, "restore", "--tenant", "acme", "--version", "1", "--allow-untagged") == 1
    assert "holds no documents" in capsys.readouterr().err
    assert ws.rows("acme") == before


@pytest.mark.scenario("safety-restore", "C6")
def test_a_restore_beyond_the_guard_needs_the_override(
    history: tuple[Any, dict[str, int]], capsys: Any
) -> None:
    ws, versions = history
    ws.tenants["acme"]["guard"] = {"max_delete_fraction": 0.3, "min_documents": 4}
    ws.run("acme", "r3b")  # nothing changes; the guard now covers this 6-document tenant
    rc = ws.context("acme", "probe")
    plan = rc.index.plan_restore(versions["r1"])
    assert (len(plan.added), len(plan.removed), len(plan.changed)) == (6, 0, 1)
    src = ws.root / "corpus" / "acme"
    for i in range(6, 12):  # back to 12 documents; the r2 publication (6 documents) now removes half
        (src / f"d{i:02d}.md").write_text(md_sections(f"D{i}", 1), encoding="utf-8")
    ws.run("acme", "r4")
    before = ws.rows("acme")
    capsys.readouterr()
    assert (
        _cli(ws, "restore", "--tenant", "acme", "--version", str(versions["r2"]), "--dry-run", "--json") == 0
    )
    dry = json.loads(capsys.readouterr().out)
    assert dry["removed"]["count"] == 6 and dry["documents_live"] == 12 and dry["documents_target"] == 6
    assert any("would remove 6 of 12" in b for b in dry["blocked"])
    assert ws.rows("acme") == before  # a dry run changes nothing
    assert _cli(ws, "restore", "--tenant", "acme", "--version", str(versions["r2"])) == 1
    assert "would remove 6 of 12 documents" in capsys.readouterr().err
    assert ws.rows("acme") == before
    with pytest.raises(RestoreBlocked) as err:
        rc.index.restore(versions["r2"], "core-call", RestoreGuard(0.3, 4))  # the core refuses as well
    assert err.value.plan["removed"]["count"] == 6
    flags = ["--allow-mass-delete", "--run-id", "rb-r2"]
    assert _cli(ws, "restore", "--tenant", "acme", "--version", str(versions["r2"]), *flags) == 0
    assert "6 removed" in capsys.readouterr().out
    assert len({r["doc_id"] for r in ws.rows("acme")}) == 6
    assert ws.context("acme", "probe").index.publications()[-1]["kind"] == "restore"


@pytest.mark.scenario("safety-restore", "C6")
def test_publications_restore_by_version_and_tag(history: tuple[Any, dict[str, int]], capsys: Any) -> None:
    ws, versions = history
    ws.run("acme", "noop")
    capsys.readouterr()
    assert _cli(ws, "restore", "--tenant", "acme", "--tag", "run-r2", "--dry-run") == 0
    assert "would: add 0, remove 0, change 1 documents" in capsys.readouterr().out
    assert _cli(ws, "restore", "--tenant", "acme", "--tag", "run-r2", "--run-id", "back") == 0
    r2_rows = {(r["id"], r["text"]) for r in ws.rows("acme")}
    assert not any("D0 v3" in t for _, t in r2_rows)
    table = ws.table("acme")
    table.tags.create("release-1", versions["r3"])  # an operator tag is a publication too
    assert _cli(ws, "restore", "--tenant", "acme", "--tag", "release-1", "--run-id", "rel") == 0
    assert any("D0 v3" in r["text"] for r in ws.rows("acme"))
    assert _cli(ws, "restore", "--tenant", "acme", "--version", str(versions["r2"]), "--run-id", "v") == 0
    assert {(r["id"], r["text"]) for r in ws.rows("acme")} == r2_rows
