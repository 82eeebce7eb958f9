"""``tessera diagnose``: which stage lost a document for a principal and a question."""

from tessera.diagnose.engine import DiagnoseRequest, diagnose, parse_range
from tessera.diagnose.report import STAGES, Diagnosis

__all__ = ["STAGES", "DiagnoseRequest", "Diagnosis", "diagnose", "parse_range"]
