"""The int8 CPU embedder (``embedding.backend: onnx-int8``): onnxruntime on a locally derived,
dynamically quantized export of the same bundled weights (:mod:`.int8_artifact`).

It reproduces the sentence-transformers stack of the model folder: the same tokenizer
(``tokenizer.json``, truncation at ``max_seq_length``, padding to the longest text of a
batch), mean pooling, and the L2 normalization; the same prefixes; texts sorted by length
into batches of ``batch_size``. Its vectors are not the fp32 model's (cosine about 0.99 on
our texts), so its identity is another model's: the cache and the tables never mix them.
Dynamic quantization scales activations per batch, so a text's vector also depends a little
on its batch companions (cosine >= 0.98 alone vs batched; fp32 differs by float noise only).

The identity is known at construction (the weights hash is verified then); the artifact is
built or verified, and onnxruntime loaded, on the first embedding call.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tessera.config import EmbeddingConfig
from tessera.embedding.base import Vectors
from tessera.embedding.identity import ModelIdentity
from tessera.embedding.int8_artifact import (
    Artifact,
    Int8Recipe,
    default_artifact_dir,
    ensure_artifact,
    run_session,
    session,
)
from tessera.embedding.model_files import model_dir, verified_weights_hash
from tessera.embedding.sentence import declared_shape
from tessera.errors import ConfigError, ModelIdentityError

log = logging.getLogger(__name__)

BACKEND = "onnx-int8"


def cpu_threads() -> int:
    """Intra-op threads: the cores this process may run on (2 on the reference machine)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _stack(path: Path) -> tuple[bool, bool]:
    """(normalizes, lowercases) of a Transformer + mean Pooling (+ Normalize) folder; any
    other stack is a ConfigError: the int8 export reproduces only this one."""
    try:
        modules = json.loads((path / "modules.json").read_text("utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = next(m for m in modules if m["type"].endswith("Pooling"))
        pool = json.loads((path / pooling["path"] / "config.json").read_text("utf-8"))
        lower = bool(json.loads((path / "sentence_bert_config.json").read_text("utf-8")).get("do_lower_case"))
    except (OSError, KeyError, StopIteration, ValueError, TypeError) as e:
        raise ConfigError(
            "embedding.backend", f"{BACKEND}: cannot read the module stack of {path}: {e}"
        ) from e
    modes = [k for k, v in pool.items() if k.startswith("pooling_mode_") and v]
    if (
        kinds[:2] != ["Transformer", "Pooling"]
        or kinds[2:] not in ([], ["Normalize"])
        or modes != ["pooling_mode_mean_tokens"]
    ):
        raise ConfigError(
            "embedding.backend",
            f"{BACKEND} supports Transformer + mean Pooling (+ Normalize) models; {path} has {kinds} {modes}",
        )
    return kinds[2:] == ["Normalize"], lower


class OnnxInt8Embedder:
    """The configured model, quantized to int8 and run by onnxruntime on the CPU."""

    def __init__(self, cfg: EmbeddingConfig, recipe: Int8Recipe | None = None, threads: int = 0) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self._cfg = cfg
        self._path = model_dir(cfg)
        self._weights = verified_weights_hash(cfg)
        shape = declared_shape(self._path)
        if shape is None:
            raise ConfigError("embedding.backend", f"{BACKEND}: {self._path} declares no plain shape")
        self._stack_normalizes, self._lower = _stack(self._path)
        self.recipe = recipe or Int8Recipe.current()
        self.threads = threads or cpu_threads()
        self._root = cfg.artifact_dir or default_artifact_dir()
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._artifact: Artifact | None = None
        self.identity = ModelIdentity(
            name=cfg.model,
            weights_sha256=self._weights,
            dimension=shape[0],
            max_seq_length=shape[1],
            normalize=cfg.normalize,
            document_prefix=cfg.document_prefix,
            query_prefix=cfg.query_prefix,
            backend=BACKEND,
            quantization=self.recipe.describe(),
        )

    @property
    def artifact(self) -> Artifact:
        """The verified int8 model file (built on first use)."""
        self._load()
        assert self._artifact is not None
        return self._artifact

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                from tokenizers import Tokenizer

                art = ensure_artifact(self._root, self._path, self._cfg.model, self._weights, self.recipe)
                try:
                    sess = session(art.path, self.threads)
                    tok = Tokenizer.from_file(str(self._path / "tokenizer.json"))
                except Exception as e:
                    raise ModelIdentityError(f"cannot load the int8 model {art.path}: {e}") from e
                # tokenizer.json of this model pins truncation and padding at 128: override both
                tok.enable_truncation(max_length=self.identity.max_seq_length, strategy="longest_first")
                pad = _pad_token(self._path)
                pad_id = tok.token_to_id(pad)
                tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token=pad)
                dim = int(run_session(sess, _feed(tok.encode_batch(["probe"]))).shape[1])
                if dim != self.identity.dimension:
                    raise ModelIdentityError(
                        f"{art.path}: dimension {dim}, expected {self.identity.dimension}"
                    )
                self._artifact, self._tokenizer, self._session = art, tok, sess
            return self._session, self._tokenizer

    def _encode(self, texts: Sequence[str]) -> Vectors:
        sess, tok = self._load()
        dim = self.identity.dimension
        out = np.zeros((len(texts), dim), dtype=np.float32)
        items = [t.lower() for t in texts] if self._lower else list(texts)
        order = sorted(range(len(items)), key=lambda i: len(items[i]), reverse=True)
        bs = self._cfg.batch_size
        for b in range(0, len(order), bs):
            idx = order[b : b + bs]
            out[idx] = run_session(sess, _feed(tok.encode_batch([items[i] for i in idx])))
        if self._cfg.normalize or self._stack_normalizes:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._encode([self._cfg.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._encode([self._cfg.query_prefix + text])[0]
        return vector


def _pad_token(path: Path) -> str:
    try:
        pad = json.loads((path / "tokenizer_config.json").read_text("utf-8")).get("pad_token", "[PAD]")
    except (OSError, ValueError):
        return "[PAD]"
    return pad if isinstance(pad, str) else str(pad.get("content", "[PAD]"))


def _feed(encodings: list[Any]) -> dict[str, np.ndarray]:
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
