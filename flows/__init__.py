"""Prefect flows (monitor, backfill, retrain), the monitor spec and the `driftline` CLI."""
