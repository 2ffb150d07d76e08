"""The run's Prefect artifacts: the results table worst first, a link artifact only to a served report
(`alerts.report_url`), never to a file on the worker, and each figure as an SVG image."""

from __future__ import annotations

import base64
import re
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


def test_each_figure_is_a_markdown_artifact_with_its_svg_as_a_data_uri(artifacts: dict, tmp_path) -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>é &amp; ×</text></svg>'
    figure = tmp_path / "attribution-auc-tree.svg"
    figure.write_text(svg, encoding="utf-8")
    publish_artifacts(SUMMARY, [figure], "https://reports.example/acs/2018-12.html")
    [markdown] = artifacts["markdown"]
    assert markdown["key"] == "driftline-acs-attribution-auc-tree"
    uri = re.search(r"!\[attribution-auc-tree\]\((data:[^)]+)\)", markdown["markdown"]).group(1)
    prefix = "data:image/svg+xml;base64,"
    assert uri.startswith(prefix)
    assert base64.b64decode(uri.removeprefix(prefix)) == svg.encode("utf-8")
