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
    "target_tokens": 224,
    "overlap_tokens": 0,
    "sentence_vectors": False,
}
"""``structural-224-0``: chosen in all eight folds (824 questions, all-MiniLM-L6-v2, k = 5);
held out, hybrid recall 87.2 ± 9.2 % (worst fairytaleqa_test, 73.1) and IoU 8.8 ± 5.5 %,
against Chonkie token 250/125 at 79.6 / 5.3 and LangChain recursive 200/0 at 75.0 / 7.3;
ahead of both on hybrid recall and IoU on 7 of 8 held-out corpora (not state_of_the_union)."""
