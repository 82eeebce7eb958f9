"""Token counting with the embedding model's own tokenizer (``tokenizer.json``).

Counts include the special tokens the model adds ([CLS]/[SEP]), so a budget checked here
is the budget the model sees. Truncation and padding configured in the file are switched
off: we count, we never cut.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Protocol

from tokenizers import Tokenizer

from tessera.embedding.model_files import file_sha256


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
    def __init__(self, tokenizer_json: Path) -> None:
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.version = f"{tokenizer_json.parent.name}:{file_sha256(tokenizer_json)[:16]}"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=True).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=True)]

    def spans(self, text: str) -> tuple[list[tuple[int, int]], list[bool]]:
        enc = self._tok.encode(text, add_special_tokens=False)
        words = enc.word_ids
        starts = [i == 0 or words[i] != words[i - 1] for i in range(len(words))]
        return list(enc.offsets), starts


@lru_cache(maxsize=4)
def load_counter(model_path: Path) -> HFTokenCounter:
    return HFTokenCounter(model_path / "tokenizer.json")
