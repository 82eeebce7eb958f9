"""``embedding.backend`` and ``embedding.artifact_dir``: parsed, validated (errors name the key),
and the factory builds the backend the configuration names. No model is loaded here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tessera.config import EmbeddingConfig
from tessera.embedding.factory import build_embedder
from tessera.embedding.identity import ModelIdentity
from tessera.embedding.onnx_int8 import OnnxInt8Embedder
from tessera.embedding.sentence import SentenceTransformerEmbedder
from tessera.errors import ConfigError
from tessera.types import canonical_hash
from tests.test_config import base, load

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def test_backend_defaults_to_torch_and_artifacts_to_the_work_dir(tmp_path: Path) -> None:
    cfg = load(base(), tmp_path)
    assert cfg.embedding.backend == "torch"
    assert cfg.embedding.artifact_dir == cfg.store.work_dir / "_models"  # `_`: never a tenant id
    assert EmbeddingConfig(model=MODEL).artifact_dir is None  # built in code: the user cache


def test_onnx_int8_backend_and_artifact_dir_parse(tmp_path: Path) -> None:
    data = base()
    data["embedding"] |= {"backend": "onnx-int8", "artifact_dir": "models"}
    data["embedding"]["previous"] = [{"model": MODEL}]
    cfg = load(data, tmp_path)
    assert cfg.embedding.backend == "onnx-int8"
    assert cfg.embedding.artifact_dir == tmp_path / "models"
    prev = cfg.embedding.previous[0]
    assert prev.backend == "torch" and prev.artifact_dir == cfg.store.work_dir / "_models"


@pytest.mark.parametrize(
    ("embedding", "key"),
    [
        ({"backend": "tensorrt"}, "embedding.backend"),
        ({"backend": "ONNX-INT8"}, "embedding.backend"),
        ({"backend": 8}, "embedding.backend"),
        ({"backend": "onnx-int8", "device": "cuda"}, "embedding.backend"),
        ({"artifact_dir": 3}, "embedding.artifact_dir"),
        ({"previous": [{"model": MODEL, "backend": "int4"}]}, "embedding.previous[0].backend"),
    ],
)
def test_bad_backend_settings_name_the_key(embedding: dict[str, Any], key: str, tmp_path: Path) -> None:
    data = base()
    data["embedding"] |= embedding
    with pytest.raises(ConfigError) as e:
        load(data, tmp_path)
    assert e.value.key == key
    assert str(e.value).startswith(f"{key}: ")


def test_factory_builds_the_configured_backend(tmp_path: Path) -> None:
    torch_cfg = EmbeddingConfig(model=MODEL)
    int8_cfg = EmbeddingConfig(model=MODEL, backend="onnx-int8", artifact_dir=tmp_path)
    fp32, int8 = build_embedder(torch_cfg), build_embedder(int8_cfg)
    assert isinstance(fp32, SentenceTransformerEmbedder) and isinstance(int8, OnnxInt8Embedder)
    assert not any(tmp_path.iterdir())  # construction builds nothing: the first embedding does
    with pytest.raises(ConfigError) as e:
        build_embedder(EmbeddingConfig(model=MODEL, backend="tflite"))  # built in code, unvalidated
    assert e.value.key == "embedding.backend"


def test_int8_identity_is_another_model_and_fp32_hashes_are_unchanged(tmp_path: Path) -> None:
    fp32 = build_embedder(EmbeddingConfig(model=MODEL)).identity
    int8 = build_embedder(EmbeddingConfig(model=MODEL, backend="onnx-int8", artifact_dir=tmp_path)).identity
    assert int8.weights_sha256 == fp32.weights_sha256  # derived from the same verified weights
    assert (int8.dimension, int8.max_seq_length) == (fp32.dimension, fp32.max_seq_length) == (384, 256)
    assert int8.hash != fp32.hash and int8.key != fp32.key
    assert int8.key.startswith("all-minilm-l6-v2-onnx-int8-") and fp32.key.startswith("all-minilm-l6-v2-")
    assert "onnxruntime=" in int8.quantization and "int8" in int8.quantization
    # the fp32 identity hashes as before the backend field existed: existing tables stay valid
    old = {k: getattr(fp32, k) for k in ("name", "weights_sha256", "dimension", "normalize")}
    old |= {"document_prefix": "", "query_prefix": ""}
    assert fp32.hash == canonical_hash(old)
    other_recipe = ModelIdentity(**{**int8.__dict__, "quantization": int8.quantization + " x"})
    assert other_recipe.hash != int8.hash  # another quantizer setting or version: another model
