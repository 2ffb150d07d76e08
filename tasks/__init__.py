"""Prefect tasks and the I/O they need: sources, the history store, alerting, retraining."""
