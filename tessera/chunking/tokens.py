"""Token counting with the embedding model's own tokenizer (``tokenizer.json``).

Counts include the special tokens the model adds ([CLS]/[SEP]), so a budget checked here
is the budget the model sees. Truncation and padding configured in the file are switched
off: we count, we never cut.

``HFTokenCounter.local_wordpiece`` says whether the tokenizer is the BERT WordPiece kind
(per-character normalizer, pre-tokenizer splitting on whitespace and punctuation only,
greedy longest-match-first WordPiece, a fixed number of special tokens), for which the
tokens of a slice cut at token boundaries differ from its tokens in context only in a word
the slice starts inside (``tessera.chunking.token`` relies on it; a counter without the
attribute counts as ``False``).
"""

from __future__ import annotations

from functools import lru_cache
from operator import ne
from pathlib import Path
from typing import Any, Protocol

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from tessera.types import file_sha256


class TokenCounter(Protocol):
    version: str

    def count(self, text: str) -> int:
        """Tokens of ``text`` as embedded, special tokens included."""
        ...

    def count_many(self, texts: list[str]) -> list[int]: ...

    def spans(self, text: str) -> tuple[list[tuple[int, int]], list[bool]]:
        """Char offsets of each token (no specials) and whether a window may start there."""
        ...


class HFTokenCounter:
    """Pickles as its file path (a worker process loads the tokenizer once, not per task)."""

    def __init__(self, tokenizer_json: Path) -> None:
        self.path = tokenizer_json
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.version = f"{tokenizer_json.parent.name}:{file_sha256(tokenizer_json)[:16]}"
        self.local_wordpiece = _local_wordpiece(self._tok)

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=True).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=True)]

    def spans(self, text: str) -> tuple[list[tuple[int, int]], list[bool]]:
        enc = self._tok.encode(text, add_special_tokens=False)
        words = enc.word_ids
        starts = [True, *map(ne, words[1:], words[:-1])] if words else []
        return list(enc.offsets), starts

    def __reduce__(self) -> tuple[Any, tuple[Path]]:
        return load_counter, (self.path.parent,)


def _local_wordpiece(tok: Tokenizer) -> bool:
    """Whether ``tok`` is a BERT WordPiece pipeline (see the module docstring)."""
    added = tok.get_added_tokens_decoder().values()
    return (
        isinstance(tok.normalizer, normalizers.BertNormalizer)
        and isinstance(tok.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
        and isinstance(tok.model, models.WordPiece)
        and (tok.post_processor is None or isinstance(tok.post_processor, processors.TemplateProcessing))
        and not any(a.lstrip or a.rstrip or a.single_word for a in added)
    )


@lru_cache(maxsize=4)
def load_counter(model_path: Path) -> HFTokenCounter:
    return HFTokenCounter(model_path / "tokenizer.json")
