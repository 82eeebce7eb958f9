"""The overlap benchmark's modelled device: the hash embedder's vectors, then time off the CPU."""

from __future__ import annotations

import time

import numpy as np

from bench.embed_overlap import DeviceModel
from tessera.embedding.fake import HashEmbedder


def test_the_modelled_device_gives_the_hash_vectors_and_waits_off_the_cpu() -> None:
    texts = [f"text {i} about topic {i % 3}" for i in range(40)]
    model = DeviceModel(ms_per_text=2.0)
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = model.embed_documents(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert np.array_equal(vectors, HashEmbedder().embed_documents(texts))
    assert wall >= 0.08 and cpu < wall / 2  # 40 texts at 2 ms: waited, not computed
    assert model.identity == HashEmbedder().identity and model.calls == [40]
