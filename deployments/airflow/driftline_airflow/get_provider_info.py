"""What Airflow's providers manager reads through the `apache_airflow_provider` entry point."""

from __future__ import annotations

from typing import Any

from driftline_airflow import __version__


def get_provider_info() -> dict[str, Any]:
    """The provider's metadata: package, versions, operators, the hook and its connection type, the
    notifier, the extra link and the `[driftline]` settings."""
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
        "hooks": [{"integration-name": "driftline", "python-modules": ["driftline_airflow.hooks.driftline"]}],
        "connection-types": [
            {
                "hook-class-name": "driftline_airflow.hooks.driftline.DriftlineHook",
                "hook-name": "driftline",
                "connection-type": "driftline",
                "conn-fields": {
                    "store_url": {
                        "label": "History store URL",
                        "schema": {"type": ["string", "null"]},
                        "description": "SQLAlchemy URL; a password left out is taken from Password",
                    },
                    "slack_channel": {"label": "Slack channel", "schema": {"type": ["string", "null"]}},
                    "slack_token": {
                        "label": "Slack bot token",
                        "schema": {"type": ["string", "null"], "format": "password"},
                    },
                    "slack_webhook_url": {
                        "label": "Slack webhook URL",
                        "schema": {"type": ["string", "null"], "format": "password"},
                    },
                    "report_url": {
                        "label": "Report URL template",
                        "schema": {"type": ["string", "null"]},
                        "description": "e.g. https://reports.example.com/{monitor}/{batch_id}/{file}",
                    },
                },
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "schema", "login", "port"],
                    "relabeling": {"password": "History store password"},
                    "placeholders": {},
                },
            }
        ],
        "notifications": ["driftline_airflow.notifications.driftline.DriftlineNotifier"],
        "extra-links": ["driftline_airflow.links.DriftlineReportLink"],
        "config": {
            "driftline": {
                "description": "driftline provider settings.",
                "options": {
                    "report_url": {
                        "description": "Link template to a run's served report, used when the driftline "
                        "connection gives none: {monitor}, {batch_id} and {file}. Unset: the file's URI.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "https://reports.example.com/{monitor}/{batch_id}/{file}",
                        "default": None,
                    }
                },
            }
        },
    }
