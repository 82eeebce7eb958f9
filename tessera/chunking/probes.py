"""Sentence probes: the extra texts embedded for a prose chunk when ``sentence_vectors`` is on.

A chunk's vector averages everything it says; a question about one of its sentences can rank
it below a chunk that is merely on topic. So each sentence of a prose chunk is also embedded,
with the same context the chunk's own embedding text carries (its breadcrumb), and dense
search scores the chunk by its vector and its best sentence (``tessera.search.fusion``).

Contract of :func:`sentence_probes`: every probe is ``prefix + sentence``, where ``prefix`` is
what the embedding text adds in front of the chunk text (empty when the embedding text does
not end with the text) and ``sentence`` is one of ``sentence_spans(text)`` with at least
``MIN_WORDS`` words. A chunk of one sentence, or of another kind than ``text`` (code, tables),
has none: its own vector already is that sentence. Probes are never longer than the embedding
text, so they fit the model wherever the chunk does.
"""

from __future__ import annotations

import re

from tessera.chunking.sentences import sentence_spans

MIN_WORDS = 4
"""Shorter sentences (a heading, "Thank you.") say too little to stand for a chunk."""
KINDS = frozenset({"text"})
_WORD = re.compile(r"\w+")


def sentence_probes(text: str, embedding_text: str, kind: str = "text") -> list[str]:
    """The probe texts of one chunk, in document order (see the module contract)."""
    if kind not in KINDS:
        return []
    spans = sentence_spans(text)
    if len(spans) < 2:
        return []
    prefix = embedding_text[: len(embedding_text) - len(text)] if embedding_text.endswith(text) else ""
    return [prefix + text[a:b] for a, b in spans if len(_WORD.findall(text[a:b])) >= MIN_WORDS]
