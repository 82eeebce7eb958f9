"""The profile ``tessera eval chunking`` recommends, recorded in code.

Chosen by leave-one-corpus-out over the eight development corpora (``../shared/data/chroma``
and ``../shared/data/retrieval_dev``, pooled into one collection per configuration); the run
is ``docs/eval/chunking/report.json``. :class:`tessera.chunking.profile.ChunkingConfig`'s
defaults must equal it (``tests/test_chunking_eval.py`` keeps them equal).
"""

from __future__ import annotations

from typing import Any

RECOMMENDED: dict[str, Any] = {
    "strategy": "structural",
    "max_tokens": 256,
    "target_tokens": 256,
    "overlap_tokens": 0,
    "sentence_vectors": False,
}
"""``structural-256-0``: chosen in all eight folds (824 questions, all-MiniLM-L6-v2, k = 5);
held out, hybrid recall 86.8 ± 10.1 % (worst doc2dial_studentaid, 71.4) and IoU 7.8 ± 5.2 %,
against Chonkie token 250/125 at 78.1 / 5.2 and LangChain recursive 200/0 at 74.1 / 7.2."""
