"""The definitions load from any working directory, and the configuration is parsed once per
content, not once per tenant context."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from resources.config import BUNDLED_CONFIG, TesseraConfigResource, load_cached
from tessera.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def test_definitions_and_the_make_run_driver_import_outside_the_repository(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_CONFIG"}
    env["PYTHONPATH"] = str(ROOT)
    code = "import pipelines.definitions as d, pipelines.main; print(d.DEFAULT_CONFIG)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == BUNDLED_CONFIG and Path(BUNDLED_CONFIG).is_file()
    help_ = subprocess.run(
        [sys.executable, "-m", "pipelines.main", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert help_.returncode == 0, help_.stderr[-2000:]


def test_the_config_is_parsed_once_per_content_and_a_change_is_never_missed(tmp_path: Path) -> None:
    path = tmp_path / "tessera.yaml"
    base = Path(BUNDLED_CONFIG).read_text(encoding="utf-8")
    path.write_text(base, encoding="utf-8")
    res = TesseraConfigResource(config_path=str(path))
    first, again = res.load(), res.load()
    assert first is again  # one parse for many tenant contexts
    # a change of the same size within the same clock tick is still seen (content, not mtime)
    changed = base.replace("batch_size: 32", "batch_size: 16")
    assert len(changed) == len(base) and changed != base
    path.write_text(changed, encoding="utf-8")
    now = res.load()
    assert now is not first and now.embedding.batch_size == 16 and first.embedding.batch_size == 32
    path.write_text("embedding: [not, a, mapping\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        res.load()
    path.unlink()
    with pytest.raises(ConfigError, match="cannot read"):
        load_cached(str(path))


def test_dg_loads_the_project_with_owners_kinds_and_described_automation() -> None:
    """`dg` (dagster-dg-cli) finds the project from pyproject.toml and loads its definitions."""
    dg = Path(sys.executable).parent / "dg"
    env = {**os.environ, "TESSERA_FAKE_EMBEDDER": "1"}
    check = subprocess.run([str(dg), "check", "defs"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert check.returncode == 0 and "All definitions loaded successfully" in check.stdout, check.stderr[
        -2000:
    ]
    listed = subprocess.run(
        [str(dg), "list", "defs", "--json"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    defs = json.loads(listed.stdout)
    assets = {a["asset_key"]: a for a in defs["assets"]}
    assert "published_index" in assets and "source_listing" in assets
    for key, a in assets.items():
        assert a["owners"] in (["team:search-platform"], [{"team": "search-platform"}]), key
        assert a["kinds"] and a["kinds"] != ["python"], key  # the technology, not just "python"
        assert a["description"], key
    assert {s["name"] for s in defs["sensors"]} >= {"cli_activity_sensor", "source_change_sensor"}
