"""The run printed on the terminal: verdicts in rank order, the likely causes under them, the data
summary counted rather than listed."""

from __future__ import annotations

import io

from driftline.flows.render import SafeConsole, print_summary


def result(check: str, target: str, severity: str = "none", **extra: object) -> dict:
    return {
        "check": check,
        "target": target,
        "status": "ok",
        "severity": severity,
        "metrics": {},
        "thresholds": {},
        "rows": 100,
        "failing_rows": None,
        "model_impact": None,
        "details": {},
        "reason": None,
        **extra,
    }


def printed(results: list[dict], show_ok: bool = True, **summary_fields: object) -> str:
    out = io.StringIO()
    summary = {
        "monitor": "m",
        "batch_id": "b",
        "rows": 100,
        "status": "failed",
        "worst_severity": "high",
        "results": results,
        "stored": "sqlite",
        **summary_fields,
    }
    print_summary(SafeConsole(file=out, width=200), summary, show_ok=show_ok)
    return out.getvalue()


def test_verdicts_are_listed_the_summary_counted_and_the_cause_named() -> None:
    nulls = result(
        "abnormal.nulls",
        "EDUCATION",
        "high",
        metrics={"reference_null_rate": 0.0},
        details={"null_rate": 1.0},
    )
    text = printed([nulls, result("data.summary", "AGE"), result("data.summary", "EDUCATION")])
    assert "data.summary" not in text
    assert "data summary: 2 column(s) described (in the report)" in text
    assert "likely cause: EDUCATION: every value is null (reference 0%)" in text
    assert text.index("abnormal.nulls") < text.index("likely cause:")


def test_a_clean_batch_without_ok_rows_prints_no_empty_table() -> None:
    text = printed([result("drift.numeric", "AGE"), result("data.summary", "AGE")], show_ok=False)
    assert "1 result(s): 1 none; those at none not listed (--verbose lists them)" in text
    assert "┏" not in text and "check" not in text  # no table of headers alone
    shown = printed([result("drift.numeric", "AGE", "low")], show_ok=False)
    assert "drift.numeric" in shown and "not listed" not in shown


def test_the_counts_line_adds_up_severities_and_statuses_and_names_the_report() -> None:
    results = [
        result("drift.numeric", "A", "high"),
        result("drift.numeric", "B", "low"),
        result("drift.numeric", "C"),
        result("drift.numeric", "D"),
        result("drift.text", "E", status="skipped", reason="no text column"),
        result("drift.numeric", "F", status="error", reason="boom"),
    ]
    text = printed(results, show_ok=False, report="/tmp/reports/m/b/report.html")
    assert "6 result(s): 1 high, 1 low, 2 none, 1 error, 1 skipped; those at none not listed" in text
    assert "report: /tmp/reports/m/b/report.html" in text
    assert "│ C " not in text and "│ A " in text
