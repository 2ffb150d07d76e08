"""Incidents opened, escalated and resolved across runs, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from driftline.tasks.alerts.incidents import IncidentChange, apply_incidents, graded_results
from driftline.tasks.history.models import Incident
from tests.alerts.builders import result


def _run(
    engine: Engine,
    batch_id: str,
    results: Sequence[dict[str, Any]],
    min_severity: str = "medium",
    resolve_after: int = 1,
) -> list[tuple[str, str, str, str, str | None]]:
    """The changes of one run; `resolve_after` 1 (resolve on the first quiet run) unless given."""
    with Session(engine) as session, session.begin():
        changes = apply_incidents(
            session,
            monitor="m",
            batch_id=batch_id,
            results=results,
            min_severity=min_severity,
            resolve_after=resolve_after,
        )
    return sorted(_summary(c) for c in changes)


def _summary(change: IncidentChange) -> tuple[str, str, str, str, str | None]:
    return (change.kind, change.check, change.target, change.severity, change.previous_severity)


def _incidents(engine: Engine) -> list[tuple[str, str, str, str, str, str]]:
    with Session(engine) as session:
        rows = session.scalars(select(Incident).order_by(Incident.id))
        return [(r.check, r.target, r.status, r.severity, r.opened_batch, r.last_batch) for r in rows]


def test_open_escalate_resolve_across_three_runs(engine: Engine) -> None:
    first = [
        result("drift.numeric", "age", "medium"),
        result("drift.numeric", "income", "low"),
        result("subset.auc", "*", status="error"),
    ]
    assert _run(engine, "b1", first) == [("opened", "drift.numeric", "age", "medium", None)]

    second = [
        result("drift.numeric", "age", "high"),
        result("drift.numeric", "income", "medium"),
        result("subset.auc", "*", "high"),
    ]
    assert _run(engine, "b2", second) == [
        ("escalated", "drift.numeric", "age", "high", "medium"),
        ("opened", "drift.numeric", "income", "medium", None),
        ("opened", "subset.auc", "*", "high", None),
    ]

    third = [
        result("drift.numeric", "age", "none"),
        result("drift.numeric", "income", "low"),
        result("subset.auc", "*", status="skipped"),
    ]
    assert _run(engine, "b3", third) == [
        ("resolved", "drift.numeric", "age", "none", "high"),
        ("resolved", "drift.numeric", "income", "low", "medium"),
    ]
    assert _incidents(engine) == [
        ("drift.numeric", "age", "resolved", "high", "b1", "b3"),
        ("drift.numeric", "income", "resolved", "medium", "b2", "b3"),
        ("subset.auc", "*", "open", "high", "b2", "b2"),
    ]


def test_reprocessing_a_batch_opens_no_duplicates(engine: Engine) -> None:
    batch = [result("drift.numeric", "age", "high"), result("drift.numeric", "income", "medium")]
    assert len(_run(engine, "b1", batch)) == 2
    assert _run(engine, "b1", batch) == []
    assert _run(engine, "b1", batch) == []
    assert [(c, t, s) for c, t, s, *_ in _incidents(engine)] == [
        ("drift.numeric", "age", "open"),
        ("drift.numeric", "income", "open"),
    ]


def test_skipped_and_error_results_neither_open_nor_resolve(engine: Engine) -> None:
    assert _run(engine, "b1", [result("perf.auc", "model", status="error")]) == []
    assert _run(engine, "b2", [result("perf.auc", "model", "high")]) == [
        ("opened", "perf.auc", "model", "high", None)
    ]
    assert _run(engine, "b3", [result("perf.auc", "model", status="error")]) == []
    assert _run(engine, "b4", [result("perf.auc", "model", status="skipped")]) == []
    assert _run(engine, "b5", []) == []
    assert _incidents(engine) == [("perf.auc", "model", "open", "high", "b2", "b2")]


def test_severity_drop_above_the_minimum_keeps_the_incident_at_its_peak(engine: Engine) -> None:
    _run(engine, "b1", [result("drift.numeric", "age", "high")])
    assert _run(engine, "b2", [result("drift.numeric", "age", "medium")]) == []
    assert _run(engine, "b3", [result("drift.numeric", "age", "high")]) == []
    with Session(engine) as session:
        incident = session.scalars(select(Incident)).one()
        assert (incident.severity, incident.last_batch) == ("high", "b3")
        assert incident.details["last_severity"] == "high"


def test_min_severity_decides_what_opens_and_what_resolves(engine: Engine) -> None:
    batch = [result("a", "x", "medium"), result("b", "y", "high")]
    assert _run(engine, "b1", batch, min_severity="high") == [("opened", "b", "y", "high", None)]
    assert _run(engine, "b2", [result("b", "y", "medium")], min_severity="high") == [
        ("resolved", "b", "y", "medium", "high")
    ]


def test_monitors_keep_separate_incidents(engine: Engine) -> None:
    _run(engine, "b1", [result("drift.numeric", "age", "high")])
    with Session(engine) as session, session.begin():
        other = apply_incidents(
            session,
            monitor="other",
            batch_id="b1",
            results=[result("drift.numeric", "age", "high")],
            min_severity="medium",
            resolve_after=1,
        )
    assert [c.kind for c in other] == ["opened"]


def test_worst_ok_result_of_a_key_counts() -> None:
    graded = graded_results(
        [
            result("c", "t", "low"),
            result("c", "t", "high"),
            result("c", "t", status="error"),
            result("c", "u", "medium"),
        ]
    )
    assert {k: v["severity"] for k, v in graded.items()} == {("c", "t"): "high", ("c", "u"): "medium"}


def test_change_carries_the_result_and_incident_id(engine: Engine) -> None:
    row = result("drift.numeric", "age", "high", metrics={"psi": 0.41})
    with Session(engine) as session, session.begin():
        (change,) = apply_incidents(
            session, monitor="m", batch_id="b1", results=[row], min_severity="low", resolve_after=1
        )
        assert change.result["metrics"] == {"psi": 0.41}
    with Session(engine) as session:
        assert session.get(Incident, change.incident_id) is not None


def test_a_resolved_condition_that_returns_opens_a_new_incident(engine: Engine) -> None:
    assert _run(engine, "b1", [result("drift.numeric", "age", "high")]) == [
        ("opened", "drift.numeric", "age", "high", None)
    ]
    assert _run(engine, "b2", [result("drift.numeric", "age", "none")])[0][0] == "resolved"
    assert _run(engine, "b3", [result("drift.numeric", "age", "medium")]) == [
        ("opened", "drift.numeric", "age", "medium", None)
    ]
    assert _run(engine, "b4", [result("drift.numeric", "age", "low")])[0][0] == "resolved"
    assert _run(engine, "b5", [result("drift.numeric", "age", "high")])[0][0] == "opened"
    assert [(s, o) for _, _, s, _, o, _ in _incidents(engine)] == [
        ("resolved", "b1"),
        ("resolved", "b3"),
        ("open", "b5"),
    ]


def test_the_database_refuses_a_second_open_incident_for_a_key(engine: Engine) -> None:
    _run(engine, "b1", [result("drift.numeric", "age", "high")])
    duplicate = Incident(
        monitor="m",
        check="drift.numeric",
        target="age",
        status="open",
        severity="high",
        opened_batch="b2",
        last_batch="b2",
        details={},
    )
    with pytest.raises(IntegrityError), Session(engine) as session, session.begin():
        session.add(duplicate)
    assert [s for _, _, s, *_ in _incidents(engine)] == ["open"]


def _quiet_runs(engine: Engine) -> list[tuple[str, int]]:
    with Session(engine) as session:
        rows = session.scalars(select(Incident).order_by(Incident.id))
        return [(r.status, r.details["quiet_runs"]) for r in rows]


def test_an_alternating_target_stays_one_incident_until_three_quiet_runs_in_a_row(engine: Engine) -> None:
    """high/none/high/none opens once and never resolves; the third quiet run in a row resolves it."""
    age = "drift.numeric", "age"
    severities = ["high", "none", "high", "none", "high", "none", "none", "none", "none"]
    changes = [_run(engine, f"b{i}", [result(*age, s)], resolve_after=3) for i, s in enumerate(severities)]
    assert changes[0] == [("opened", *age, "high", None)]
    assert changes[1:7] == [[]] * 6
    assert changes[7] == [("resolved", *age, "none", "high")]
    assert changes[8] == []  # quiet after the resolution: nothing is open, nothing opens
    assert _incidents(engine) == [(*age, "resolved", "high", "b0", "b7")]
    assert _quiet_runs(engine) == [("resolved", 3)]


def test_a_run_at_the_minimum_resets_the_quiet_runs_and_below_it_counts_as_quiet(engine: Engine) -> None:
    age = "drift.numeric", "age"
    _run(engine, "b1", [result(*age, "medium")], resolve_after=3)
    _run(engine, "b2", [result(*age, "low")], resolve_after=3)
    _run(engine, "b3", [result(*age, "none")], resolve_after=3)
    assert _quiet_runs(engine) == [("open", 2)]
    assert _run(engine, "b4", [result(*age, "medium")], resolve_after=3) == []
    assert _quiet_runs(engine) == [("open", 0)]


def test_skipped_and_error_results_neither_count_as_quiet_nor_reset(engine: Engine) -> None:
    auc = "perf.auc", "model"
    runs = ["high", "none", "error", "skipped", "none", "error", "none"]
    found = []
    for i, outcome in enumerate(runs):
        row = result(*auc, status=outcome) if outcome in ("error", "skipped") else result(*auc, outcome)
        found.append(_run(engine, f"b{i}", [row], resolve_after=3))
    assert [c[0][0] if c else None for c in found] == ["opened", None, None, None, None, None, "resolved"]


def test_a_rerun_of_a_quiet_batch_counts_once(engine: Engine) -> None:
    age = "drift.numeric", "age"
    _run(engine, "b1", [result(*age, "high")], resolve_after=2)
    assert _run(engine, "b2", [result(*age, "none")], resolve_after=2) == []
    assert _run(engine, "b2", [result(*age, "none")], resolve_after=2) == []
    assert _quiet_runs(engine) == [("open", 1)]
    assert _run(engine, "b3", [result(*age, "none")], resolve_after=2)[0][0] == "resolved"
