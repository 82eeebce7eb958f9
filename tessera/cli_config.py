"""``tessera config``: the configuration checked beyond its syntax.

Loading already checks every key and value; this also checks what the values point at: each
folder (and git) source path exists, the embedding weights are there and match ``sha256``
(and those of ``embedding.previous``), every ``_access.yaml`` under a folder source parses, and
``api_keys_file`` exists and parses. Every problem is one line naming the dotted key
(``tenants.acme.source.path: ...``); any problem exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tessera.boundary import EXIT_ERROR
from tessera.config import EmbeddingConfig, TenantConfig, TesseraConfig
from tessera.errors import ConfigError, ModelIdentityError


@dataclass(frozen=True)
class Problem:
    key: str
    message: str


def _weights(key: str, emb: EmbeddingConfig) -> list[Problem]:
    from tessera.embedding.model_files import verified_weights_hash

    try:
        verified_weights_hash(emb)
    except (ModelIdentityError, ConfigError) as e:
        message = str(e).removeprefix(f"{e.key}: ") if isinstance(e, ConfigError) else str(e)
        return [Problem(f"{key}.sha256" if "mismatch" in message else key, message)]
    return []


def _policies(key: str, tenant: TenantConfig, root: Path) -> list[Problem]:
    from tessera.sources.policy import POLICY_FILE, parse_policy

    problems: list[Problem] = []
    for folder, _dirs, files in os.walk(root, followlinks=False):  # links are never followed
        if POLICY_FILE not in files:
            continue
        path = Path(folder) / POLICY_FILE
        rel = path.relative_to(root).as_posix()
        try:
            parse_policy(path.read_bytes(), tenant.default_access, rel)
        except ConfigError as e:
            problems.append(Problem(f"{key}.path", f"{rel}: {str(e).removeprefix(f'{e.key}: ')}"))
        except OSError as e:
            problems.append(Problem(f"{key}.path", f"{rel}: cannot read access policy: {e.strerror or e}"))
    return problems


def _sources(cfg: TesseraConfig) -> list[Problem]:
    problems: list[Problem] = []
    for tenant_id, tenant in sorted(cfg.tenants.items()):
        key, src = f"tenants.{tenant_id}.source", tenant.source
        if src.kind == "folder" and src.path is not None:
            if not src.path.is_dir():
                problems.append(Problem(f"{key}.path", f"folder {src.path} does not exist"))
            else:
                problems += _policies(key, tenant, src.path)
        elif src.kind == "git" and src.repo is not None and not src.repo.is_dir():
            problems.append(Problem(f"{key}.repo", f"repository {src.repo} does not exist"))
    return problems


def _api_keys(cfg: TesseraConfig) -> list[Problem]:
    if cfg.api_keys_file is None:
        return []
    if not cfg.api_keys_file.is_file():
        return [Problem("api_keys_file", f"{cfg.api_keys_file} does not exist")]
    from tessera.search.principal import IdentityStore

    try:
        IdentityStore.load(cfg, cfg.api_keys_file)
    except ConfigError as e:
        return [Problem("api_keys_file", str(e))]
    return []


def check_config(cfg: TesseraConfig) -> list[Problem]:
    """Every problem found, in a stable order (sources, model weights, API keys)."""
    problems = _sources(cfg) + _weights("embedding", cfg.embedding)
    for n, prev in enumerate(cfg.embedding.previous):
        problems += _weights(f"embedding.previous[{n}]", prev)
    return problems + _api_keys(cfg)


def cmd_config(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    problems = check_config(cfg)
    if args.json:
        out: dict[str, Any] = {
            "config": str(cfg.path),
            "ok": not problems,
            "tenants": sorted(cfg.tenants),
            "store": cfg.store.uri,
            "problems": [{"key": p.key, "message": p.message} for p in problems],
        }
        print(json.dumps(out, indent=2))
    elif not problems:
        print(f"{cfg.path}: ok, tenants {sorted(cfg.tenants)}, store {cfg.store.uri}")
    for p in problems:
        print(f"tessera: ConfigError: {p.key}: {p.message}", file=sys.stderr)
    return EXIT_ERROR if problems else 0


def add_parser(sub: Any) -> None:
    c = sub.add_parser("config", help="validate the configuration: keys, paths, weights, policies, API keys")
    c.add_argument("--json", action="store_true", help="print the result and the problems as JSON")
    c.set_defaults(func=cmd_config)
