"""Golden questions: a CSV with ``question,references,corpus_id`` (the format of the Chroma
chunking study). ``references`` is a JSON list of ``{content, start_index, end_index}``, code
point offsets into the decoded document named by ``corpus_id``. Used by the quality gate and
by ``tessera eval chunking``."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from tessera.errors import EvaluationError
from tessera.golden.metrics import Span


@dataclass(frozen=True)
class Question:
    text: str
    corpus: str
    references: tuple[Span, ...]


def read_questions(path: Path) -> list[tuple[str, str, list[dict[str, object]]]]:
    try:
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise EvaluationError(f"cannot read questions {path}: {e}") from e
    out = []
    for n, row in enumerate(rows, 2):
        try:
            refs = json.loads(row["references"])
            out.append((row["question"], row["corpus_id"], refs))
        except (KeyError, TypeError, json.JSONDecodeError) as e:
            raise EvaluationError(f"{path}:{n}: expected question,references(JSON),corpus_id: {e}") from e
    return out
