"""Locate the bundled model files and verify their weights hash. Nothing is downloaded."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from tessera.config import EmbeddingConfig
from tessera.errors import ConfigError, ModelIdentityError
from tessera.types import file_sha256

WEIGHTS_FILE = "model.safetensors"


def model_dir(cfg: EmbeddingConfig) -> Path:
    """The folder holding the model: ``embedding.path``, or ``<package>/model``."""
    if cfg.path is not None:
        path = cfg.path
    else:
        assert cfg.package is not None
        spec = importlib.util.find_spec(cfg.package)
        if spec is None or spec.origin is None:
            raise ConfigError("embedding.package", f"package {cfg.package!r} is not installed")
        path = Path(spec.origin).parent / "model"
    if not (path / "tokenizer.json").is_file():
        raise ConfigError("embedding.path", f"{path} holds no tokenizer.json; not a model folder")
    return path


@lru_cache(maxsize=8)
def verified_weights_hash(cfg: EmbeddingConfig) -> str:
    """sha256 of the weights, checked against ``embedding.sha256`` when it is set."""
    weights = model_dir(cfg) / WEIGHTS_FILE
    if not weights.is_file():
        raise ModelIdentityError(f"{weights} is missing")
    digest = file_sha256(weights)
    if cfg.sha256 is not None and digest != cfg.sha256:
        raise ModelIdentityError(
            f"embedding.sha256 mismatch for {weights}: expected {cfg.sha256}, found {digest}"
        )
    return digest
