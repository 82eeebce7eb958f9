"""A small table of clustered unit vectors with the columns the index builders read (shared by
the vector-index tests)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def clustered_rows(n: int = 600, dim: int = 16, seed: int = 3) -> tuple[pa.Table, np.ndarray]:
    """``n`` rows around 20 centres (as real embeddings cluster by topic) and their vectors."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, dim)).astype(np.float32)
    vec = centres[rng.integers(0, 20, n)] + 0.2 * rng.standard_normal((n, dim)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    table = pa.table(
        {
            "id": [str(i) for i in range(n)],
            "embedding_text": [f"text {i}" for i in range(n)],
            "readers": [["u"]] * n,
            "groups": [["g"]] * n,
            "effective_from_us": [0] * n,
            "effective_to_us": [1] * n,
            "doc_id": ["d"] * n,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), dim),
        }
    )
    return table, vec
