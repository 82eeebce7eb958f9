"""Tessera core: pure Python, no Dagster import. See README for the architecture."""

__version__ = "0.1.0"
