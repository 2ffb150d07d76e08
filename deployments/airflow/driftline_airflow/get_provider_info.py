"""What Airflow's providers manager reads through the `apache_airflow_provider` entry point."""

from __future__ import annotations

from typing import Any

from driftline_airflow import __version__


def get_provider_info() -> dict[str, Any]:
    """The provider's metadata: package, versions, operators and the connections it reads."""
    return {
        "package-name": "driftline-airflow",
        "name": "driftline",
        "description": "Continuous monitoring of deployed ML models (drift, abnormal input, performance, "
        "fairness) with driftline, run in-process by Airflow tasks.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "driftline",
                "tags": ["ml", "monitoring"],
            }
        ],
        "operators": [
            {
                "integration-name": "driftline",
                "python-modules": [
                    "driftline_airflow.operators.monitor",
                    "driftline_airflow.operators.check",
                ],
            }
        ],
    }
