"""Reference splitters from other libraries, run through the same harness (bench-only extras).

- LangChain ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer`` (sizes in MiniLM
  word pieces, special tokens not counted, as LangChain counts them);
- Chonkie ``TokenChunker`` over the model's own ``tokenizer.json``.

Each returns code point ranges of the text; a missing library raises ImportError, which
the sweep reports as a skipped peer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tessera.evaluation.chunking.harness import locate

Splitter = Callable[[str], list[tuple[int, int]]]


@dataclass(frozen=True)
class Peer:
    name: str
    library: str
    size: int
    overlap: int


PEERS = (
    Peer("langchain-recursive-128-0", "langchain", 128, 0),
    Peer("langchain-recursive-200-0", "langchain", 200, 0),
    Peer("chonkie-token-250-125", "chonkie", 250, 125),
)


def splitter(peer: Peer, model_path: Path) -> Splitter:
    if peer.library == "langchain":
        from langchain_text_splitters import RecursiveCharacterTextSplitter
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(str(model_path))
        lc = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
            hf, chunk_size=peer.size, chunk_overlap=peer.overlap
        )
        return lambda text: locate(text, lc.split_text(text))
    if peer.library == "chonkie":
        from chonkie import TokenChunker
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        chunker = TokenChunker(tokenizer=tok, chunk_size=peer.size, chunk_overlap=peer.overlap)  # type: ignore[arg-type,unused-ignore]
        return lambda text: [(c.start_index, c.end_index) for c in chunker.chunk(text)]
    raise ValueError(f"unknown peer library {peer.library!r}")
