"""Chunking evaluation: span metrics, the harness for one configuration, the sweep, plots."""
