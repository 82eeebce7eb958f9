"""The int8 ONNX model, derived locally from the verified bundled weights. Nothing is downloaded.

Recipe: export the transformer plus mean pooling to ONNX (torch's TorchScript exporter), fuse
the BERT attention, GELU and layer-norm subgraphs (onnxruntime's transformer optimizer), then
quantize the MatMul weights to int8 with dynamic activation quantization (onnxruntime).

The artifact lives in ``<artifact_dir>/<model>-<weights sha256[:16]>-<recipe hash[:12]>/``:
``model.onnx`` and ``manifest.json`` (the source weights hash, the recipe, the artifact's own
sha256 and size). It is built in a scratch folder beside it and renamed into place, so a
reader never sees half an artifact; on every load the artifact's hash is checked against the
manifest and a mismatch (a corrupted or tampered file) rebuilds it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from tessera.errors import ModelIdentityError
from tessera.types import canonical_hash, file_sha256

log = logging.getLogger(__name__)

RECIPE_VERSION = 1
MODEL_FILE = "model.onnx"
MANIFEST_FILE = "manifest.json"
MIN_PROBE_COSINE = 0.97
"""The built artifact must agree with the fp32 model on the probe texts at least this well
(cosine); measured minimum on the bench texts: see ``bench/results/embed_int8.json``."""
PROBES = (
    "How do I renew a driver's license by mail?",
    "The fox waited by the river until the moon rose over the hills.",
    "def embed(texts): return model.encode(texts, batch_size=32)",
)
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "missing"


@dataclass(frozen=True)
class Int8Recipe:
    """Everything that changes the derived weights; its hash names the artifact folder."""

    fuse: bool = True
    weight_type: str = "qint8"
    per_channel: bool = True
    reduce_range: bool = False
    op_types: tuple[str, ...] = ("MatMul", "Attention")
    """Not ``Gather``/``EmbedLayerNormalization``: int8 word embeddings cost too much accuracy."""
    opset: int = 17
    recipe: int = RECIPE_VERSION
    onnxruntime: str = ""
    torch: str = ""

    @staticmethod
    def current(**kw: Any) -> Int8Recipe:
        return Int8Recipe(onnxruntime=_version("onnxruntime"), torch=_version("torch"), **kw)

    def as_json(self) -> dict[str, Any]:
        """The fields as they read back from the manifest (tuples become lists)."""
        data: dict[str, Any] = json.loads(json.dumps(asdict(self)))
        return data

    @property
    def hash(self) -> str:
        return canonical_hash(self.as_json())

    def describe(self) -> str:
        """One line for the model identity, e.g. ``dynamic-int8 qint8 per-tensor fused ...``."""
        return (
            f"dynamic-int8 {self.weight_type} {'per-channel' if self.per_channel else 'per-tensor'}"
            f"{' reduce-range' if self.reduce_range else ''}{' fused' if self.fuse else ''}"
            f" ops={'+'.join(self.op_types)}"
            f" opset{self.opset} recipe{self.recipe} onnxruntime={self.onnxruntime} torch={self.torch}"
        )


@dataclass(frozen=True)
class Artifact:
    path: Path
    sha256: str
    bytes: int
    source_weights_sha256: str
    recipe: Int8Recipe
    built: bool
    """True when this call built it; False when a verified artifact was reused."""
    build_seconds: float = 0.0
    probe_cosine: float = 1.0


def default_artifact_dir() -> Path:
    """``$XDG_CACHE_HOME/tessera/models`` (``~/.cache/tessera/models``)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "tessera" / "models"


def artifact_folder(root: Path, model: str, weights_sha256: str, recipe: Int8Recipe) -> Path:
    slug = "".join(c if c.isalnum() else "-" for c in model.rsplit("/", 1)[-1].lower())[:40]
    return root / f"{slug}-{weights_sha256[:16]}-{recipe.hash[:12]}"


def _verified(folder: Path, weights_sha256: str, recipe: Int8Recipe) -> Artifact | None:
    """The artifact in ``folder`` if its manifest matches and its file hash is the recorded one."""
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text("utf-8"))
        model = folder / MODEL_FILE
        if manifest["source_weights_sha256"] != weights_sha256 or manifest["recipe"] != recipe.as_json():
            log.warning("int8 artifact %s was built from other weights or settings: rebuilding", folder)
            return None
        digest = file_sha256(model)
        if digest != manifest["sha256"]:
            log.warning("int8 artifact %s fails its hash check (sha256 %s): rebuilding", model, digest)
            return None
        seconds, cosine = float(manifest["build_seconds"]), float(manifest["probe_cosine"])
        return Artifact(model, digest, model.stat().st_size, weights_sha256, recipe, False, seconds, cosine)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_artifact(
    root: Path, model_path: Path, model: str, weights_sha256: str, recipe: Int8Recipe
) -> Artifact:
    """The verified artifact for these weights and recipe, built (atomically) if absent or bad."""
    folder = artifact_folder(root, model, weights_sha256, recipe)
    found = _verified(folder, weights_sha256, recipe)
    if found is not None:
        return found
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        t0 = time.perf_counter()
        cosine = _build(model_path, scratch, recipe)
        seconds = round(time.perf_counter() - t0, 2)
        out = scratch / MODEL_FILE
        digest = file_sha256(out)
        manifest = {
            "source_weights_sha256": weights_sha256,
            "recipe": recipe.as_json(),
            "sha256": digest,
            "bytes": out.stat().st_size,
            "build_seconds": seconds,
            "probe_cosine": round(cosine, 6),
            "model": model,
            "built_from": str(model_path),
        }
        (scratch / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        _install(scratch, folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    done = _verified(folder, weights_sha256, recipe)
    if done is None:
        raise ModelIdentityError(f"int8 artifact {folder} does not verify right after its build")
    log.info(
        "built int8 model %s (%d bytes, %.1f s, probe cosine %.4f)", done.path, done.bytes, seconds, cosine
    )
    return Artifact(done.path, done.sha256, done.bytes, weights_sha256, recipe, True, seconds, cosine)


def _install(scratch: Path, folder: Path) -> None:
    """Rename ``scratch`` to ``folder``; a bad ``folder`` is moved aside first. If another
    process installed a good one meanwhile, the rename fails and that one is kept."""
    if folder.exists():
        stale = folder.with_name(f".stale-{folder.name}-{os.getpid()}-{time.monotonic_ns()}")
        with contextlib.suppress(OSError):
            folder.rename(stale)
        shutil.rmtree(stale, ignore_errors=True)
    try:
        scratch.rename(folder)
    except OSError as e:  # another builder won the race: its artifact is checked by the caller
        log.info("int8 artifact %s appeared during the build (%s); keeping it", folder, e)


def _build(model_path: Path, scratch: Path, recipe: Int8Recipe) -> float:
    """Export, fuse and quantize into ``scratch/model.onnx``; the probe texts' minimum cosine
    between the fp32 torch model and the result (a build below the bound is an error)."""
    try:
        import onnx
        import torch
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        raise ModelIdentityError(f"the onnx-int8 backend needs {e.name}: pip install -e .") from e
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    config = json.loads((model_path / "config.json").read_text("utf-8"))
    try:
        bert = AutoModel.from_pretrained(str(model_path), local_files_only=True, attn_implementation="eager")
        tok = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
    except Exception as e:
        raise ModelIdentityError(f"cannot load {model_path} for the int8 export: {e}") from e
    module = _mean_pooled(bert).eval()  # the exporter restores the mode it found: keep it eval
    fp32 = scratch / "fp32.onnx"
    example = tok(list(PROBES), padding=True, return_tensors="pt")
    args = tuple(example[n] for n in INPUTS)
    axes = {n: {0: "batch", 1: "sequence"} for n in INPUTS} | {"sentence_embedding": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        reference = module(*args).numpy()
        warnings.simplefilter("ignore")  # TracerWarnings and the legacy exporter's deprecation
        torch.onnx.export(
            module,
            args,
            str(fp32),
            dynamo=False,
            input_names=list(INPUTS),
            output_names=["sentence_embedding"],
            dynamic_axes=axes,
            opset_version=recipe.opset,
        )
    source = fp32
    if recipe.fuse and config.get("model_type") == "bert":
        from onnxruntime.transformers.optimizer import optimize_model

        fused = optimize_model(
            str(fp32),
            model_type="bert",
            num_heads=int(config["num_attention_heads"]),
            hidden_size=int(config["hidden_size"]),
            opt_level=0,
        )
        source = scratch / "fused.onnx"
        fused.save_model_to_file(str(source))
    weight = {"qint8": QuantType.QInt8, "quint8": QuantType.QUInt8}[recipe.weight_type]
    quantize_dynamic(
        source,
        scratch / MODEL_FILE,
        weight_type=weight,
        op_types_to_quantize=list(recipe.op_types),
        per_channel=recipe.per_channel,
        reduce_range=recipe.reduce_range,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    for p in {fp32, source}:
        p.unlink()
    got = run_session(session(scratch / MODEL_FILE, 1), {n: example[n].numpy() for n in INPUTS})
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    cosine = float(np.min((reference * got).sum(axis=1) / np.linalg.norm(got, axis=1)))
    if cosine < MIN_PROBE_COSINE:
        raise ModelIdentityError(
            f"the int8 model of {model_path} diverges from fp32: "
            f"probe cosine {cosine:.4f} < {MIN_PROBE_COSINE}"
        )
    return cosine


def _mean_pooled(bert: Any) -> Any:
    """The transformer and mean pooling as one torch module (the sentence-transformers stack
    up to the normalization, which the embedder applies)."""
    import torch

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    return MeanPooled()


def session(path: Path, threads: int) -> Any:
    """An onnxruntime CPU session: ``threads`` intra-op threads, one inter-op, sequential."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def run_session(sess: Any, feed: dict[str, np.ndarray]) -> np.ndarray:
    wanted = {i.name for i in sess.get_inputs()}
    out = sess.run(None, {k: v.astype(np.int64) for k, v in feed.items() if k in wanted})[0]
    return np.asarray(out, dtype=np.float32)
