"""The report files under Airflow: private, written whole, strict JSON, and Markdown whose table keeps
its shape whatever the data's names and reasons hold."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from driftline.checks.result import CheckResult
from driftline_airflow.report import REPORT_JSON, REPORT_MARKDOWN, write_report

HOSTILE = "<img src=x onerror=alert(1)>|a\nb\r\nc"


def summary() -> dict[str, Any]:
    """A run summary whose target, reason and side fields carry what a batch may carry."""
    hit = CheckResult(
        check="drift.categorical",
        target=HOSTILE,
        severity="high",
        metrics={"psi": 0.7},
        thresholds={"psi": [0.1, 0.2, 0.3]},
        failing_rows=3,
        reason="new category '<b>x</b>'\nsecond | line",
    )
    plain = CheckResult(check="drift.numeric", target="age\u202egnp.exe", metrics={"psi": 0.01})
    return {
        "monitor": "unit",
        "batch_id": "2024-01-01",
        "status": "failed",
        "worst_severity": "high",
        "rows": 10,
        "stored": "stored run 1 (4 metric rows)",
        "results": [hit.to_dict(), plain.to_dict()],
        "labels": [{"auc": float("nan"), "gap": float("inf")}],
    }


def table_cells(line: str) -> list[str]:
    """The cells of one Markdown table row (pipes preceded by a backslash are text)."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_report_files_are_private_even_over_old_readable_ones(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    for name in (REPORT_JSON, REPORT_MARKDOWN):
        (folder / name).write_text("old")
        (folder / name).chmod(0o644)
    write_report(summary(), [], folder)
    for name in (REPORT_JSON, REPORT_MARKDOWN):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name


def test_a_failed_write_keeps_the_previous_report_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / REPORT_JSON).write_text('{"old": true}')

    def refuse(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_report(summary(), [], tmp_path)
    assert json.loads((tmp_path / REPORT_JSON).read_text()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == [REPORT_JSON]  # no temporary file left


def test_summary_json_is_strict(tmp_path: Path) -> None:
    write_report(summary(), [], tmp_path)

    def refuse_constant(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    document = json.loads((tmp_path / REPORT_JSON).read_text(), parse_constant=refuse_constant)
    assert document["labels"] == [{"auc": None, "gap": None}]
    assert document["results"][0]["target"] == HOSTILE  # the JSON keeps the text as it is


def test_markdown_cells_hold_no_html_pipes_or_line_breaks(tmp_path: Path) -> None:
    page = write_report(summary(), [tmp_path / "drift <x>|y.png"], tmp_path).read_text()
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    assert len(rows) == 1 + 2  # the header and one row per result: no line break split a row
    assert {len(table_cells(line)) for line in rows} == {7}
    hit = table_cells(rows[1])
    assert hit[1].strip() == "&lt;img src=x onerror=alert(1)&gt;\\|a<br>b<br>c"
    assert "<b>" not in page and "<img" not in page
    assert table_cells(rows[2])[1].strip() == "age\\u202egnp.exe"  # a bidi override shown, not obeyed
    assert "![drift &lt;x&gt;\\|y](drift%20%3Cx%3E%7Cy.png)" in page
