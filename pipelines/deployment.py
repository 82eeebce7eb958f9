"""From the embedded default to a cluster, by configuration only.

- ``TESSERA_EXECUTOR``: ``in_process``, ``multiprocess`` (``TESSERA_MAX_CONCURRENT`` steps),
  ``celery`` or ``k8s``. Unset: Dagster's default (multiprocess, in-process for
  ``execute_in_process``). Celery and Kubernetes need the ``cluster`` extra
  (``pip install -e .[cluster]``: dagster-celery, dagster-k8s, dagster-postgres).
- ``DAGSTER_PG_URL``: when set, the instance written by ``pipelines.main`` keeps runs, events
  and schedules in Postgres instead of SQLite under ``$DAGSTER_HOME`` (the URL itself stays
  in the environment; the file only names the variable).
- Embedding on a GPU is the tessera.yaml setting ``embedding.device: cuda`` with a larger
  ``embedding.batch_size`` (128–256); the code path is the same.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from dagster import ExecutorDefinition, in_process_executor, multiprocess_executor

from tessera.errors import ConfigError

_PLUGINS = {"celery": ("dagster_celery", "celery_executor"), "k8s": ("dagster_k8s", "k8s_job_executor")}


def executor_from_env(name: str | None = None) -> ExecutorDefinition | None:
    choice = name if name is not None else os.environ.get("TESSERA_EXECUTOR", "")
    if not choice:
        return None
    if choice == "in_process":
        return in_process_executor
    if choice == "multiprocess":
        limit = int(os.environ.get("TESSERA_MAX_CONCURRENT", "2"))
        return multiprocess_executor.configured({"max_concurrent": limit})
    if choice not in _PLUGINS:
        raise ConfigError(
            "TESSERA_EXECUTOR", f"unknown executor {choice!r}; use in_process, multiprocess, celery, k8s"
        )
    module, attr = _PLUGINS[choice]
    try:
        executor: ExecutorDefinition = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise ConfigError("TESSERA_EXECUTOR", f"{choice} needs {module} (pip install -e .[cluster])") from e
    return executor


def storage_yaml(env: Any = None) -> str:
    """The ``storage:`` section of dagster.yaml: Postgres when ``DAGSTER_PG_URL`` is set, else none."""
    environ = os.environ if env is None else env
    if not environ.get("DAGSTER_PG_URL"):
        return ""
    return "storage:\n  postgres:\n    postgres_url:\n      env: DAGSTER_PG_URL\n"
