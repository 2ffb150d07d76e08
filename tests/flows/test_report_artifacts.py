"""The run's Prefect artifacts: the results table worst first, and a link artifact only to a served
report (`alerts.slack.report_url`), never to a file on the worker."""

from __future__ import annotations

from typing import Any

import pytest

from driftline.flows.report import publish_artifacts


def result(check: str, status: str, severity: str) -> dict[str, Any]:
    return {
        "check": check,
        "target": "*",
        "status": status,
        "severity": severity,
        "metrics": {},
        "thresholds": {},
        "failing_rows": None,
        "reason": None,
    }


SUMMARY = {
    "monitor": "acs",
    "batch_id": "2018-12",
    "status": "failed",
    "worst_severity": "high",
    "report": "/worker/.driftline/reports/acs/2018-12/report.html",
    "results": [
        result("a", "ok", "none"),
        result("b", "skipped", "none"),
        result("c", "ok", "medium"),
        result("d", "error", "none"),
        result("e", "ok", "high"),
    ],
}


@pytest.fixture
def artifacts(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[dict[str, Any]]]:
    """The artifacts created, by kind, instead of sending them to Prefect."""
    import prefect.artifacts

    calls: dict[str, list[dict[str, Any]]] = {}
    for kind in ("link", "markdown", "table"):
        record = calls.setdefault(kind, [])
        monkeypatch.setattr(prefect.artifacts, f"create_{kind}_artifact", lambda _r=record, **k: _r.append(k))
    return calls


def test_the_table_is_sorted_worst_first_and_the_link_goes_to_report_url(artifacts: dict) -> None:
    publish_artifacts(SUMMARY, [], "https://reports.example/acs/2018-12.html")
    [table] = artifacts["table"]
    assert [row["check"] for row in table["table"]] == ["e", "c", "a", "d", "b"]
    [link] = artifacts["link"]
    assert link["link"] == "https://reports.example/acs/2018-12.html"
    assert link["key"] == "driftline-acs-report"


def test_without_report_url_no_link_points_at_the_worker(artifacts: dict) -> None:
    publish_artifacts(SUMMARY, [])
    assert artifacts["link"] == []
    [note] = artifacts["markdown"]
    assert SUMMARY["report"] in note["markdown"] and "report_url" in note["markdown"]
