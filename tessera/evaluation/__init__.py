"""Evaluations of pipeline stages against external reference data (read by path, never copied)."""
