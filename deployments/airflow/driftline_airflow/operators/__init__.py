"""The driftline operators: a whole monitor run, and single checks on two tables."""

from __future__ import annotations

from driftline_airflow.operators.check import DriftlineCheckOperator
from driftline_airflow.operators.monitor import DriftlineMonitorOperator

__all__ = ["DriftlineCheckOperator", "DriftlineMonitorOperator"]
