"""The driftline notifier: a monitor task's verdict sent to Slack (or the task log)."""

from __future__ import annotations

from driftline_airflow.notifications.driftline import DriftlineNotifier

__all__ = ["DriftlineNotifier"]
