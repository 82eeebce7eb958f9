"""Evaluation inputs: a folder of corpus files and a questions CSV with reference spans.

The questions file has the columns ``question,references,corpus_id`` (the format of the
Chroma chunking study): ``references`` is a JSON list of ``{content, start_index,
end_index}``, code point offsets into the UTF-8 decoded corpus file named by ``corpus_id``
(its stem or its path relative to the folder). Every reference is checked on load:
``corpus[start:end] == content``, else :class:`EvaluationError` names the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tessera.errors import EvaluationError
from tessera.golden.metrics import Span
from tessera.golden.questions import Question, read_questions


@dataclass(frozen=True)
class Corpus:
    """Corpus id -> (path, raw bytes, decoded text), plus the questions over them."""

    files: dict[str, Path]
    raw: dict[str, bytes]
    texts: dict[str, str]
    questions: tuple[Question, ...]


def find_questions(folder: Path) -> Path:
    hits = sorted(folder.glob("questions*.csv"))
    if not hits:
        raise EvaluationError(f"no questions*.csv in {folder}")
    return hits[0]


def _corpus_files(folder: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.suffix.lower() in (".md", ".markdown", ".txt", ".html", ".htm"):
            rel = p.relative_to(folder).as_posix()
            files[rel] = p
            files.setdefault(p.stem, p)
    return files


def load_corpus(folder: Path, questions: Path | None = None) -> Corpus:
    """Load and validate; ``folder`` may hold the corpus files directly or in ``corpora/``."""
    if not folder.is_dir():
        raise EvaluationError(f"corpus folder {folder} does not exist")
    qpath = questions or find_questions(folder)
    available = _corpus_files(folder / "corpora" if (folder / "corpora").is_dir() else folder)
    files: dict[str, Path] = {}
    raw: dict[str, bytes] = {}
    texts: dict[str, str] = {}
    out: list[Question] = []
    for n, (question, corpus_id, refs) in enumerate(read_questions(qpath), 2):
        if corpus_id not in available:
            raise EvaluationError(f"{qpath}:{n}: corpus {corpus_id!r} not found in {folder}")
        if corpus_id not in texts:
            files[corpus_id] = available[corpus_id]
            raw[corpus_id] = available[corpus_id].read_bytes()
            texts[corpus_id] = raw[corpus_id].decode("utf-8")
        text = texts[corpus_id]
        spans = []
        for ref in refs:
            try:
                s, e, content = int(ref["start_index"]), int(ref["end_index"]), str(ref["content"])  # type: ignore[call-overload]
            except (KeyError, TypeError, ValueError) as err:
                raise EvaluationError(f"{qpath}:{n}: malformed reference {ref!r}") from err
            if not 0 <= s < e <= len(text) or text[s:e] != content:
                raise EvaluationError(f"{qpath}:{n}: reference [{s}:{e}] does not match {corpus_id!r}")
            spans.append(Span(corpus_id, s, e))
        if not spans:
            raise EvaluationError(f"{qpath}:{n}: question without references")
        out.append(Question(question, corpus_id, tuple(spans)))
    if not out:
        raise EvaluationError(f"{qpath} has no questions")
    return Corpus(files, raw, texts, tuple(out))


def pool(corpora: Sequence[Corpus]) -> Corpus:
    """Several corpus folders as one collection (the Chroma study pools its corpora so);
    a corpus id present in two folders is an error, never silently merged."""
    files: dict[str, Path] = {}
    raw: dict[str, bytes] = {}
    texts: dict[str, str] = {}
    for c in corpora:
        clash = sorted(set(c.texts) & set(texts))
        if clash:
            raise EvaluationError(f"corpus ids {clash} appear in more than one folder")
        files.update(c.files)
        raw.update(c.raw)
        texts.update(c.texts)
    return Corpus(files, raw, texts, tuple(q for c in corpora for q in c.questions))
