"""The Block Kit message and its plain-text fallback: content, ordering, escaping, Slack's limits."""

from __future__ import annotations

import json
from typing import Any

from driftline.tasks.alerts.incidents import IncidentChange
from driftline.tasks.alerts.messages import build_message, metric_lines, unescape
from tests.alerts.builders import result


def _change(kind: str, check: str, target: str, severity: str, previous: str | None = None, **kw: Any):
    return IncidentChange(
        kind=kind,  # type: ignore[arg-type]
        incident_id=1,
        check=check,
        target=target,
        severity=severity,
        previous_severity=previous,
        result=result(check, target, severity, **kw),
    )


def _sections(message: dict[str, Any]) -> list[str]:
    texts = []
    for block in message["blocks"]:
        if block["type"] == "section":
            texts.append(block["text"]["text"])
        elif block["type"] == "context":
            texts.extend(e["text"] for e in block["elements"])
    return texts


def test_metric_lines_show_values_with_their_graded_thresholds() -> None:
    row = result(
        "drift.numeric",
        "age",
        "high",
        metrics={"ks_pvalue": 1e-30, "psi": 0.41234},
        thresholds={"psi": [0.1, 0.2, 0.3]},
    )
    row.update(rows=5000, failing_rows=312, model_impact=0.0312)
    assert metric_lines(row) == [
        "psi = 0.4123 (thresholds: low 0.1, medium 0.2, high 0.3)",
        "ks_pvalue = 1e-30",
        "rows 5000, failing rows 312, model impact 0.0312",
    ]
    # One threshold marks "high", two mark medium/high; lower-is-worse lists are shown as given.
    single = result("c", "t", metrics={"auc_drop": 0.05}, thresholds={"auc_drop": [0.02]})
    assert metric_lines(single)[0] == "auc_drop = 0.05 (thresholds: high 0.02)"
    pair = result("c", "t", metrics={"p": None}, thresholds={"p": [0.05, 0.01]})
    assert metric_lines(pair)[0] == "p = n/a (thresholds: medium 0.05, high 0.01)"


def test_message_lists_worst_first_then_resolved_errors_and_link() -> None:
    changes = [
        _change("opened", "drift.numeric", "income", "medium", metrics={"psi": 0.25}),
        _change("escalated", "drift.numeric", "age", "high", "medium", metrics={"psi": 0.5}),
        _change("resolved", "subset.auc", "SEX=1", "low", "high"),
    ]
    results = [c.result for c in changes] + [
        result("fairness.statistical_parity", "SEX", status="error", reason="label column 'y' missing")
    ]
    message = build_message(
        monitor="acs", batch_id="2018-06", changes=changes, results=results, run_url="https://ui/runs/1"
    )
    blocks = message["blocks"]
    assert blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": ":red_circle: acs: worst severity high", "emoji": True},
    }
    texts = _sections(message)
    assert texts[0] == "*Batch* `2018-06` · 1 opened, 1 escalated, 1 resolved"
    assert texts[1] == (
        ":red_circle: *[HIGH] drift.numeric · age: escalated from medium*\n"
        "psi = 0.5 (thresholds: low 0.1, medium 0.2, high 0.3)\nrows 1000"
    )
    assert texts[2].startswith(":large_orange_circle: *[MEDIUM] drift.numeric · income: opened*")
    assert texts[3] == ":white_check_mark: *Resolved*\n• subset.auc · SEX=1: resolved (now low, was high)"
    assert texts[4] == (
        ":warning: *Could not run*\n• fairness.statistical_parity · SEX: label column 'y' missing"
    )
    assert texts[5] == "<https://ui/runs/1|Open the run>"
    assert message["text"].splitlines() == [
        "driftline: acs, batch 2018-06: worst severity high (1 opened, 1 escalated, 1 resolved)",
        "[HIGH] drift.numeric · age: escalated from medium",
        "    psi = 0.5 (thresholds: low 0.1, medium 0.2, high 0.3)",
        "    rows 1000",
        "[MEDIUM] drift.numeric · income: opened",
        "    psi = 0.25 (thresholds: low 0.1, medium 0.2, high 0.3)",
        "    rows 1000",
        "subset.auc · SEX=1: resolved (now low, was high)",
        "Could not run:",
        "    fairness.statistical_parity · SEX: label column 'y' missing",
        "Run: https://ui/runs/1",
    ]


def test_worst_severity_comes_from_all_graded_results() -> None:
    changes = [_change("opened", "a", "x", "medium")]
    still_high = result("b", "y", "high")
    message = build_message(
        monitor="m", batch_id="b", changes=changes, results=[changes[0].result, still_high]
    )
    assert message["blocks"][0]["text"]["text"] == ":red_circle: m: worst severity high"
    without_results = build_message(monitor="m", batch_id="b", changes=changes)
    assert without_results["blocks"][0]["text"]["text"] == ":large_orange_circle: m: worst severity medium"


def test_no_link_without_a_url() -> None:
    message = build_message(monitor="m", batch_id="b", changes=[_change("opened", "a", "x", "high")])
    assert not any("Open the run" in t for t in _sections(message))
    assert "Run:" not in message["text"]


def test_control_characters_are_escaped_and_the_console_restores_them() -> None:
    change = _change("opened", "text.drift", "a<b>&c", "high")
    message = build_message(monitor="m", batch_id="b&1", changes=[change], run_url="https://ui/r?a=1&b=<2>")
    texts = _sections(message)
    assert "a&lt;b&gt;&amp;c" in texts[1] and "a<b>" not in json.dumps(message["blocks"])
    assert texts[0].startswith("*Batch* `b&amp;1`")
    assert texts[-1] == "<https://ui/r?a=1&amp;b=%3C2%3E|Open the run>"
    assert "text.drift · a<b>&c: opened" in unescape(message["text"])


def test_large_runs_stay_within_slack_limits() -> None:
    changes = [_change("opened", "drift.numeric", f"feature_{i:03d}" + "x" * 400, "high") for i in range(60)]
    changes += [
        _change("resolved", "drift.numeric", f"old_{i:03d}" + "y" * 400, "none", "high") for i in range(40)
    ]
    errors = [result("rubric", f"t{i}", status="error", reason="r" * 5000) for i in range(30)]
    message = build_message(
        monitor="m" * 300, batch_id="b", changes=changes, results=errors, run_url="https://u/" + "z" * 4000
    )
    blocks = message["blocks"]
    assert len(blocks) <= 50
    assert len(blocks[0]["text"]["text"]) <= 150
    assert all(len(text) <= 3000 for text in _sections(message))
    assert len(message["text"]) <= 3000
    texts = _sections(message)
    assert sum(t.startswith(":red_circle:") for t in texts) == 10
    assert "…and 50 more opened or escalated" in texts
    resolved = next(t for t in texts if t.startswith(":white_check_mark:"))
    assert resolved.count("\n• ") == 11 and resolved.endswith("• …and 30 more resolved")
    failed = next(t for t in texts if t.startswith(":warning:"))
    assert failed.count("\n• ") == 11 and failed.endswith("• …and 20 more errors")


def test_thread_state_lists_open_incidents_worst_first_then_resolved() -> None:
    from driftline.tasks.alerts.messages import build_thread_state

    def incident(target: str, status: str, severity: str, last: str | None = None) -> dict:
        return {
            "check": "drift.numeric",
            "target": target,
            "status": status,
            "severity": severity,
            "last_severity": last or severity,
            "opened_batch": "b1",
            "last_batch": "b3",
        }

    state = build_thread_state(
        monitor="acs",
        incidents=[
            incident("a", "open", "medium"),
            incident("b", "resolved", "high"),
            incident("c", "open", "high", "low"),
        ],
        last_batch="b3",
    )
    assert state["blocks"][0]["text"]["text"] == "acs: 2 of 3 incident(s) open, worst high"
    assert state["text"].splitlines() == [
        "driftline: acs: 2 of 3 incident(s) open, worst high (updated at batch b3)",
        "[HIGH] drift.numeric · c: open since batch b1, now low",
        "[MEDIUM] drift.numeric · a: open since batch b1",
        "drift.numeric · b: resolved at batch b3 (reached high)",
    ]
    done = build_thread_state(monitor="acs", incidents=[incident("b", "resolved", "high")], last_batch="b4")
    assert done["blocks"][0]["text"]["text"] == "acs: all 1 incident(s) resolved"
    many = build_thread_state(
        monitor="m", incidents=[incident(str(i), "open", "high") for i in range(40)], last_batch="b"
    )
    assert len(many["blocks"]) == 3 and "…and 30 more open" in many["blocks"][2]["text"]["text"]
    # The latest run's likely causes lead, for the targets of open incidents only.
    gone = [result("abnormal.nulls", name, "high", metrics={"reference_null_rate": 0.0}) for name in "ab"]
    for row in gone:
        row["details"] = {"null_rate": 1.0}
    caused = build_thread_state(
        monitor="acs",
        incidents=[incident("a", "open", "medium"), incident("b", "resolved", "high")],
        last_batch="b3",
        results=gone,
    )
    assert caused["blocks"][2]["text"]["text"] == (
        ":mag: *Likely cause*\n• a: every value is null (reference 0%) — the column is no longer filled"
    )
    assert caused["text"].splitlines()[1] == (
        "Likely cause: a: every value is null (reference 0%) — the column is no longer filled"
    )


def _graded(check: str, target: str, severity: str, share: float | None = None) -> dict[str, Any]:
    """A stored drift result with its evidence, shares and (for a feature) its importance."""
    row = result(check, target, severity, metrics={"psi": 0.5, "psi_bound": 0.45})
    row["evidence"] = {"psi": {"estimate": 0.5, "noise": "scaled_chi2", "scale": 0.001, "df": 8.0}}
    row["details"] = {"edges": [0, 1], "reference_shares": [0.3, 0.4, 0.3], "current_shares": [0.2, 0.3, 0.5]}
    if share is not None:
        row["details"]["importance"] = {"share": share, "rank": 21 - int(share * 100), "of": 21}
    return row


def _opened(results: list[dict[str, Any]]) -> list[IncidentChange]:
    """An incident opened at high for each result."""
    return [
        IncidentChange(
            kind="opened",
            incident_id=i,
            check=r["check"],
            target=r["target"],
            severity="high",
            previous_severity=None,
            result=r,
        )
        for i, r in enumerate(results)
    ]


def test_prediction_drift_is_listed_first_and_features_by_importance() -> None:
    """Twenty high features in column order and the prediction's drift last: the prediction's drift
    leads the message, the features follow by importance, the least important are the ones counted."""
    results = [_graded("drift.numeric", f"X{i}", "high", share=(i + 1) / 100) for i in range(20)]
    results.append(_graded("drift.prediction", "score", "high"))
    changes = _opened(results)
    message = build_message(monitor="credit", batch_id="b1", changes=changes, results=results)
    texts = _sections(message)
    assert texts[1] == (
        ":red_circle: *[HIGH] drift.prediction · score: opened*\n"
        "share of rows with score &gt; 1: batch 50% vs reference 30%, "
        "psi 0.5 (bound 0.45; high threshold 0.3)\n"
        "rows 1000"
    )
    # X19 has the largest share (20%, rank 1), then X18, ...; ten listed in all, the other 11 counted.
    assert texts[2].startswith(
        ":red_circle: *[HIGH] drift.numeric · X19: opened · importance 20% (rank 1 of 21)*"
    )
    listed = [t.split("*")[1].split(":")[0] for t in texts[1:11]]
    assert listed == ["[HIGH] drift.prediction · score"] + [
        f"[HIGH] drift.numeric · X{i}" for i in range(19, 10, -1)
    ]
    assert "…and 11 more opened or escalated" in texts


def test_fairness_lines_compare_the_index_and_do_not_count_failing_rows() -> None:
    row = result(
        "fairness.statistical_parity",
        "SEX",
        "high",
        metrics={
            "disparity_change": 0.25,
            "value": 0.26,
            "reference_value": 0.01,
            "disparity_change_bound": 0.21,
        },
        thresholds={"disparity_change": [0.05, 0.1, 0.2]},
    )
    row.update(failing_rows=2000, rows=2000)
    row["evidence"] = {"disparity_change": {"estimate": 0.25, "noise": "normal", "scale": 0.02}}
    assert metric_lines(row) == [
        "disparity: batch 0.26 vs reference 0.01, change +0.25 (bound +0.21; high threshold +0.2)",
        "rows 2000",
    ]


def test_long_comparison_lines_are_cut_and_slack_limits_hold() -> None:
    results = [
        _graded("drift.numeric", f"feature_{i:03d}" + "x" * 600, "high", share=0.01) for i in range(30)
    ]
    changes = _opened(results)
    message = build_message(monitor="m", batch_id="b", changes=changes, results=results)
    assert all(len(line) <= 280 for r in results for line in metric_lines(r))
    assert len(message["blocks"]) <= 50
    assert all(len(text) <= 3000 for text in _sections(message)) and len(message["text"]) <= 3000


def test_the_likely_cause_comes_first_escaped_for_slack() -> None:
    unit = result("abnormal.out_of_range", "<b>LIMIT_BAL", "high", metrics={"failing_share": 1.0})
    unit["details"] = {
        "reference_range": [10000.0, 1000000.0],
        "batch_range": [10.0, 1000.0],
        "reference_median": 140000.0,
        "batch_median": 140.0,
    }
    changes = [_change("opened", "abnormal.out_of_range", "<b>LIMIT_BAL", "high")]
    message = build_message(monitor="credit", batch_id="b7", changes=changes, results=[unit])
    batch_section = message["blocks"][1]["text"]["text"]
    assert batch_section.splitlines()[1:] == [
        ":mag: *Likely cause*",
        "• &lt;b&gt;LIMIT_BAL: all values ~1000× smaller than the reference (median 140 against "
        "140,000) — looks like a unit change",
    ]
    assert (
        unescape(message["text"]).splitlines()[1].startswith("Likely cause: <b>LIMIT_BAL: all values ~1000×")
    )
    clean = build_message(monitor="credit", batch_id="b7", changes=changes, results=[])
    assert "Likely cause" not in clean["text"] and len(clean["blocks"]) == len(message["blocks"])


def test_what_labels_said_about_the_run_is_a_warning_line() -> None:
    """The run's warnings (`details.warning`: an estimate's failed assumption, an in-sample
    reference) close the message, escaped."""
    assumption = "assumption failed: realised auc 0.61 outside the estimate's band [0.7, 0.78] <x>"
    results = [
        {
            "check": "performance.estimated",
            "target": "auc",
            "status": "ok",
            "severity": "none",
            "details": {"warning": assumption},
        },
        {
            "check": "run.reference",
            "target": "*",
            "status": "ok",
            "severity": "none",
            "details": {"warning": "the reference looks in-sample"},
        },
    ]
    message = build_message(
        monitor="m", batch_id="b", changes=[_change("opened", "a", "x", "high")], results=results
    )
    assert _sections(message)[-1] == (
        ":eyes: *Warnings*\n• performance.estimated · auc: assumption failed: realised auc 0.61 outside "
        "the estimate's band [0.7, 0.78] &lt;x&gt;\n• the reference looks in-sample"
    )
    assert unescape(message["text"]).endswith(
        f"Warning: performance.estimated · auc: {assumption}\nWarning: the reference looks in-sample"
    )
