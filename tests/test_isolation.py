"""Failures stay where they happen: a file name never blocks its tenant, a failing tenant never
stops another tenant's publish (the CLI and Dagster, scenario D3), and tenant ids with odd
characters never reach a table, a partition run or a folder (D4)."""

from __future__ import annotations

import contextlib
import html
import io
import json
import logging
import re
import unicodedata
from typing import Any

import pytest
from dagster import DagsterInstance, DagsterRunStatus, build_sensor_context

from pipelines.definitions import build_definitions
from pipelines.sensors import tenant_partitions_sensor
from resources import TesseraConfigResource
from tessera.cli import main
from tessera.config import load_config
from tessera.lineage_html import provenance_sample
from tessera.store.db import chunks_table_name

NFC, NFD = unicodedata.normalize("NFC", "café.md"), unicodedata.normalize("NFD", "café.md")
INDEXED = [
    "quote'single.md",
    'quote"double.md',
    "back\\slash.md",
    "pct%41%.md",
    "-leading-dash.md",
    "--rm -rf.md",
    "sp ace.md",
    "semi;colon' OR '1'='1.md",
    "pipe|and <b>tag</b> & [link](x).md",
    "back`tick`*star*_under_.md",
    "emoji 😀 ✓ ñ 中文.md",
    "rtl\u202eoverride.md",
    "zero\u200bwidth.md",
    NFC,
    NFD,  # a twin: another name on this filesystem, so another document
    "L" * 251 + ".md",  # 254 bytes: the longest name ext4 allows, nearly
    "é" * 125 + ".md",  # 253 bytes in UTF-8
    "deep/" * 20 + "leaf.md",
]
SKIPPED = [
    "new\nline.md",
    "cr\rreturn.md",
    "tab\there.md",
    "del\x7f.md",
    "nel\x85.md",
    "line\u2028separator.md",
    "folder\nwith/inner.md",  # a folder with a control character: skipped whole
]


def _marker(i: int) -> str:
    return f"kw{i:02d}zq"


def _cli(cfg_path: Any, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--config", str(cfg_path), "--fake-embedder", *args])
    return code, out.getvalue(), err.getvalue()


def _search(cfg_path: Any, query: str) -> list[dict[str, Any]]:
    code, out, err = _cli(cfg_path, "search", "--tenant", "acme", "--user", "alice", "--mode", "lexical",
                          "--json", "--k", "3", query)  # fmt: skip
    assert code == 0, err
    hits: list[dict[str, Any]] = json.loads(out)
    return hits


def test_any_file_name_is_indexed_or_skipped_by_name_and_never_blocks_the_tenant(
    ws: Any, caplog: pytest.LogCaptureFixture
) -> None:
    files: dict[str, str | bytes] = {"plain.md": "# Plain\n\nAn ordinary document.\n"}
    for i, name in enumerate(INDEXED + SKIPPED):
        files[name] = f"# Odd {i}\n\nThe document {_marker(i)} with an odd name.\n"
    ws.tenant("acme", files)
    caplog.set_level(logging.WARNING)
    first = ws.run("acme", "r1")
    assert first["publish"]["committed"]
    assert first["listing"]["documents"] == len(INDEXED) + 1
    assert first["listing"]["skipped"] == {"control_char_name": len(SKIPPED)}
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "'folder\\\\nwith' (control_char_name)" in warned and "\n" not in warned  # named, escaped
    assert {r["doc_id"] for r in ws.rows("acme")} == {"plain.md", *INDEXED}
    second = ws.run("acme", "r2")  # the second run is a no-op
    assert second["publish"]["committed"] is False and second["embed"]["embedded"] == 0
    assert second["listing"]["changed"] == 0 and second["listing"]["removed"] == 0
    cfg = ws.config()
    for i, name in enumerate(INDEXED):  # each odd name is found, under exactly its own id
        hits = _search(cfg.path, _marker(i))
        assert [h["doc_id"] for h in hits] == [name], (name, hits)
        code, out, err = _cli(
            cfg.path, "show", "--tenant", "acme", "--user", "alice", hits[0]["citation"]["id"]
        )
        assert code == 0 and _marker(i) in out, err
    for i, _ in enumerate(SKIPPED, start=len(INDEXED)):
        assert _search(cfg.path, _marker(i)) == []
    # a later change to an odd-named document publishes like any other
    (ws.root / "corpus" / "acme" / NFD).write_text("# Odd\n\nThe NFD twin, rewritten: kwnfdzq.\n")
    third = ws.run("acme", "r3")
    assert third["publish"]["committed"] and third["publish"]["docs_changed"] == 1
    assert [h["doc_id"] for h in _search(cfg.path, "kwnfdzq")] == [NFD]
    assert [h["doc_id"] for h in _search(cfg.path, _marker(INDEXED.index(NFC)))] == [NFC]
    # the lineage report: one page per document, and a provenance table no name can split
    code, out, err = _cli(cfg.path, "lineage", "--tenant", "acme", "--html", str(ws.root / "report"))
    assert code == 0, err
    pages = list((ws.root / "report").glob("*.html"))
    diffs = [p for p in pages if p.name.startswith("diff-")]
    assert len(pages) - len(diffs) == len(INDEXED) + 2
    publications = ws.context("acme").index.publications()
    assert len(diffs) == len({p["table_version"] for p in publications}) - 1  # one per consecutive pair
    last = max(diffs, key=lambda p: int(p.stem.split("-")[-1])).read_text()
    assert 'data-doc="' + html.escape(NFD, quote=True) + '"' in last  # r3's change, its name escaped
    ctx = ws.context("acme")
    sample = provenance_sample(ctx.index, set(INDEXED), n=len(INDEXED))
    lines = sample.splitlines()
    assert len(lines) == 2 + len(INDEXED)
    for line in lines:
        assert len(re.findall(r"(?<!\\)\|", line)) == 8, line


def test_a_line_separator_inside_a_document_never_blocks_the_tenant(ws: Any) -> None:
    ws.tenant("acme", {"a.md": "# A\n\nOne\u2028two, and a paragraph\u2029separator.\n"})
    assert ws.run("acme", "r1")["publish"]["committed"]
    assert "\u2028" in "".join(r["text"] for r in ws.rows("acme"))
    assert ws.run("acme", "r2")["publish"]["committed"] is False  # and the next run is a no-op


def _two_tenants(ws: Any) -> Any:
    ws.tenant("acme", {"a.md": "# Acme\n\nThe acme runbook.\n"})
    ws.tenant("globex", {"g.md": "# Globex\n\nThe globex runbook.\n"})
    return ws.config()


def _break_policy(ws: Any, tenant: str) -> None:
    (ws.root / "corpus" / tenant / "_access.yaml").write_text("documents: [\n", encoding="utf-8")


def _change(ws: Any, tenant: str) -> None:
    path = next((ws.root / "corpus" / tenant).glob("*.md"))
    path.write_text(f"# Changed\n\nThe {tenant} runbook, rewritten.\n", encoding="utf-8")


@pytest.mark.scenario("D3")
@pytest.mark.parametrize("broken", ["acme", "globex"])  # the failing tenant runs first, then last
def test_a_failing_tenant_never_stops_another_tenants_publish(ws: Any, broken: str) -> None:
    cfg = _two_tenants(ws)
    code, out, _ = _cli(cfg.path, "run", "--run-id", "r1")
    assert code == 0
    assert [json.loads(x)["ok"] for x in out.splitlines()] == [True, True]
    other = "globex" if broken == "acme" else "acme"
    kept = ws.table(broken).version, ws.rows(broken)
    _break_policy(ws, broken)
    _change(ws, broken)
    _change(ws, other)
    code, out, err = _cli(cfg.path, "run", "--run-id", "r2")
    assert code == 1 and "Traceback" not in err
    lines = {x["tenant"]: x for x in map(json.loads, out.splitlines())}
    assert list(lines) == ["acme", "globex"]  # every tenant attempted, one line each
    failed, done = lines[broken], lines[other]
    assert failed["ok"] is False and failed["error"]["type"] == "PolicyError"
    assert "_access.yaml" in failed["error"]["message"]
    assert f"tessera: PolicyError: tenant {broken}: " in err
    assert done["ok"] is True and done["publish"]["committed"] and done["publish"]["docs_changed"] == 1
    assert any("rewritten" in r["text"] for r in ws.rows(other))
    assert (ws.table(broken).version, ws.rows(broken)) == kept  # the failed one kept its version
    (ws.root / "corpus" / broken / "_access.yaml").write_text("documents: []\n", encoding="utf-8")
    code, out, _ = _cli(cfg.path, "run", "--run-id", "r3")  # fixed: it goes through, the other is a no-op
    assert code == 0
    lines = {x["tenant"]: x for x in map(json.loads, out.splitlines())}
    assert lines[broken]["publish"]["committed"] and lines[other]["publish"]["committed"] is False


@pytest.mark.scenario("D3")
def test_one_failing_partition_leaves_the_others_published(ws: Any) -> None:
    cfg = _two_tenants(ws)
    job = build_definitions(config_path=str(cfg.path), fake_embedder=True).resolve_job_def("index_tenant")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme", "globex"])

    def backfill() -> dict[str, Any]:  # one run per partition, as a backfill launches them
        return {
            t: job.execute_in_process(partition_key=t, instance=instance, raise_on_error=False)
            for t in ("acme", "globex")
        }

    assert all(r.success for r in backfill().values())
    kept = ws.table("acme").version, ws.rows("acme")
    _break_policy(ws, "acme")
    _change(ws, "acme")
    _change(ws, "globex")
    results = backfill()
    assert not results["acme"].success and results["globex"].success
    assert results["globex"].output_for_node("published_index")["docs_changed"] == 1
    assert any("rewritten" in r["text"] for r in ws.rows("globex"))
    assert (ws.table("acme").version, ws.rows("acme")) == kept  # its previous version stays current
    statuses = {r.tags.get("dagster/partition"): r.status for r in instance.get_runs(limit=2)}
    assert statuses == {"acme": DagsterRunStatus.FAILURE, "globex": DagsterRunStatus.SUCCESS}
    assert all(r.status in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE) for r in instance.get_runs())
    failure = next(e for e in results["acme"].all_events if e.event_type_value == "STEP_FAILURE")
    assert "PolicyError" in str(failure.event_specific_data)


ODD_IDS = ["a,b", "a|b", "a...b", "a b", "café", "Acme", "a__b", "-a", "a/b", "", "x" * 64]
EDGE_IDS = ["a", "0", "a-b", "a_b-c", "9lives", "x" * 63]


@pytest.mark.scenario("D4")
@pytest.mark.parametrize("tenant", ODD_IDS, ids=[repr(t)[:20] for t in ODD_IDS])
def test_odd_tenant_ids_are_refused_by_name_before_any_table_or_folder(ws: Any, tenant: str) -> None:
    ws.tenant("acme", {"a.md": "# A\n\nText.\n"})
    cfg = ws.config()
    text = (ws.root / "tessera.yaml").read_text(encoding="utf-8")
    (ws.root / "odd.yaml").write_text(text.replace("  acme:", f"  {json.dumps(tenant)}:"), encoding="utf-8")
    code, out, err = _cli(ws.root / "odd.yaml", "config")  # the configuration names the bad key
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.startswith(f"tessera: ConfigError: tenants.{tenant}: invalid tenant id")
    code, _, err = _cli(cfg.path, "tenant", "purge", "--yes", "--", tenant)  # never a path or a table
    assert code == 1 and err.startswith("tessera: ConfigError: tenant: invalid tenant id"), err
    code, _, err = _cli(cfg.path, "run", f"--tenant={tenant}")
    assert code == 1 and err.startswith("tessera: ConfigError: tenants: unknown tenant"), err
    assert not (ws.root / "index").exists() and not (ws.root / "work").exists()


@pytest.mark.scenario("D4")
def test_tenant_partitions_round_trip_and_odd_keys_are_removed(ws: Any) -> None:
    for t in EDGE_IDS:
        ws.tenant(t, {"a.md": f"# {t}\n\nText of {t}.\n"})
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    resources = {"tessera_config": TesseraConfigResource(config_path=str(cfg.path))}

    def sense() -> Any:
        result = tenant_partitions_sensor(build_sensor_context(instance=instance, resources=resources))
        for req in result.dynamic_partitions_requests:
            if type(req).__name__.startswith("Add"):
                instance.add_dynamic_partitions("tenants", list(req.partition_keys))
            else:
                for key in req.partition_keys:
                    instance.delete_dynamic_partition("tenants", key)
        return result.dynamic_partitions_requests

    assert [sorted(r.partition_keys) for r in sense()] == [sorted(EDGE_IDS)]
    assert sorted(instance.get_dynamic_partitions("tenants")) == sorted(EDGE_IDS)  # keys exactly as given
    assert sense() == []  # adding twice does nothing
    for t in EDGE_IDS:  # table names decode back to the tenant
        assert chunks_table_name(t, "model").split("__")[1] == t
    instance.add_dynamic_partitions("tenants", ["a,b", "a|b", "café"])  # added by hand, not configured
    job = build_definitions(config_path=str(cfg.path), fake_embedder=True).resolve_job_def("index_tenant")
    result = job.execute_in_process(partition_key="a,b", instance=instance, raise_on_error=False)
    assert not result.success and not (ws.root / "index").exists()  # fails cleanly, touches nothing
    (removed,) = sense()
    assert sorted(removed.partition_keys) == sorted(["a,b", "a|b", "café"])
    assert sorted(instance.get_dynamic_partitions("tenants")) == sorted(EDGE_IDS)
    longest = "x" * 63
    assert job.execute_in_process(partition_key=longest, instance=instance, raise_on_error=False).success
    assert load_config(cfg.path).tenant(longest) and ws.rows(longest)


@pytest.mark.scenario("D3")
def test_make_run_driver_attempts_every_tenant(ws: Any, tmp_path: Any, monkeypatch: Any, capsys: Any) -> None:
    """``python -m pipelines.main`` (what ``make run`` calls) publishes the healthy tenant and
    exits 1 naming the failed one, whose previous version stays current."""
    from pipelines import main as driver

    monkeypatch.setattr(driver, "instance_home", lambda: None)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    ws.tenant("acme", {"a.md": "# Acme\n\nThe acme runbook.\n"})
    bad = ws.tenant("globex", {"g.md": "# Globex\n\nThe globex runbook.\n"})
    (bad / "_access.yaml").write_text("", encoding="utf-8")  # fails closed
    code = driver.main(["--config", str(ws.config().path), "--fake-embedder", "--query", "runbook"])
    out, err = capsys.readouterr()
    assert code == 1 and "globex" in err and "FAILED" in out
    assert {r["doc_id"] for r in ws.rows("acme")} == {"a.md"} and ws.table("globex") is None
