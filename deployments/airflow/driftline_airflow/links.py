"""The monitor task's extra link to its run's report.

The task works out the report's URL while it runs (it knows the report file and may read the
`driftline` connection) and pushes it to XCom; the link reads it back. Airflow 3 calls `get_link` in
the worker once the task ends, failed or not, and the UI shows the stored URL as the task's
"driftline report" button.

Where the URL comes from, first found: the `driftline` connection's extra `report_url`, Airflow's
setting `[driftline] report_url` (`AIRFLOW__DRIFTLINE__REPORT_URL`), else the report file's `file://`
URI. A template names `{monitor}`, `{batch_id}` and `{file}` (`report.html`, or `report.md` when the
HTML report was not written): serve each spec folder's `.driftline/reports/` and point the template at
it, e.g. `https://reports.example.com/{monitor}/{batch_id}/{file}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperatorLink

REPORT_URL_KEY = "driftline_report_url"
CONFIG_SECTION, CONFIG_OPTION = "driftline", "report_url"


def configured_template() -> str | None:
    """Airflow's `[driftline] report_url` setting, checked; None when unset."""
    from airflow.sdk.configuration import conf

    from driftline_airflow.hooks.driftline import checked_report_template

    template = conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback=None)
    where = f"setting [{CONFIG_SECTION}] {CONFIG_OPTION}"
    return checked_report_template(template, where) if template else None


def run_report_url(conn_id: str | None, monitor: str, batch_id: str, report: Path) -> str:
    """The URL of a run's report: from the `driftline` connection's template, else the setting's,
    else the file's URI."""
    from driftline_airflow.connections import get_connection
    from driftline_airflow.hooks.driftline import CONN_TYPE, DriftlineHook, extra_value, report_link

    conn = get_connection(conn_id)
    if conn is not None and (conn.conn_type or "").lower() == CONN_TYPE and extra_value(conn, "report_url"):
        return DriftlineHook(conn_id or "").report_url(monitor, batch_id, report)
    return report_link(configured_template(), monitor, batch_id, report)


class DriftlineReportLink(BaseOperatorLink):
    """Opens the report of the run the task made (the URL the task pushed to XCom)."""

    name = "driftline report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The URL the task pushed, or '' before it ran (no link shown)."""
        from airflow.sdk.execution_time.xcom import XCom

        return XCom.get_value(ti_key=ti_key, key=REPORT_URL_KEY) or ""
