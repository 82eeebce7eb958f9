"""A tenant's quality gate (``tenants.T.quality``): golden questions and the allowed drop."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tessera.config_values import check_keys, choice, integer, mapping, number, string


@dataclass(frozen=True)
class QualityGateConfig:
    """A tenant's golden questions and how much recall@k a new version may lose.

    ``questions`` is a CSV with ``question,references,corpus_id`` (the Chroma evaluation
    format): ``references`` is a JSON list of ``{content, start_index, end_index}``, code
    point offsets into the source document whose doc id is ``corpus_id``.
    """

    questions: Path
    k: int = 5
    max_recall_drop: float = 0.05
    mode: str = "hybrid"


def parse_quality(data: object, key: str, base: Path) -> QualityGateConfig | None:
    if data is None:
        return None
    m = mapping(data, key)
    check_keys(m, key, {"questions", "k", "max_recall_drop", "mode"})
    path = Path(string(m, "questions", key))
    return QualityGateConfig(
        questions=path if path.is_absolute() else (base / path).resolve(),
        k=integer(m, "k", key, 5, 1, 100),
        max_recall_drop=number(m, "max_recall_drop", key, 0.05, 0.0, 1.0),
        mode=choice(m, "mode", key, "hybrid", ("dense", "hybrid")),
    )
