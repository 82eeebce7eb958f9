"""Deployment settings: executor and run storage by environment, checked by loading the definitions."""

from __future__ import annotations

import importlib.util

import pytest
import yaml

from pipelines.definitions import build_definitions
from pipelines.deployment import executor_from_env, storage_yaml
from pipelines.main import DAGSTER_YAML
from tessera.errors import ConfigError


@pytest.mark.parametrize("name", ["in_process", "multiprocess"])
def test_definitions_load_with_the_chosen_executor(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESSERA_EXECUTOR", name)
    defs = build_definitions(config_path="examples/tessera.yaml", fake_embedder=True)
    assert defs.resolve_job_def("index_tenant").executor_def.name == name


@pytest.mark.parametrize("name,module", [("celery", "dagster_celery"), ("k8s", "dagster_k8s")])
def test_cluster_executors_need_their_package(name: str, module: str) -> None:
    if importlib.util.find_spec(module) is not None:
        assert executor_from_env(name) is not None
        return
    with pytest.raises(ConfigError, match=module):
        executor_from_env(name)


def test_unknown_executor_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="TESSERA_EXECUTOR"):
        executor_from_env("threads")
    assert executor_from_env("") is None  # unset: Dagster's default


def test_postgres_storage_names_the_variable_not_the_secret() -> None:
    url = "postgresql://dagster:s3cret@db:5432/dagster"
    instance = yaml.safe_load(DAGSTER_YAML + storage_yaml({"DAGSTER_PG_URL": url}))
    assert instance["storage"] == {"postgres": {"postgres_url": {"env": "DAGSTER_PG_URL"}}}
    assert "s3cret" not in storage_yaml({"DAGSTER_PG_URL": url})
    assert "storage" not in yaml.safe_load(DAGSTER_YAML + storage_yaml({}))  # default: SQLite
