"""The driftline hook: its own connection type for the history store, alert credentials and report links."""

from __future__ import annotations

from driftline_airflow.hooks.driftline import DriftlineHook

__all__ = ["DriftlineHook"]
