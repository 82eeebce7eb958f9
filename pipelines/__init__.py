"""Dagster wiring: Definitions, jobs, sensors. Loaded by workspace.yaml."""
