"""Orchestration of assay runs: the local engine, the Prefect flow, the CLI."""
