"""Retraining once per incident: a performance failure sustained over many runs retrains once, drifted
predictions with intact performance never, `retrain.when: every_run` on every failing run, and a run
without incidents (alerts off) falls back to every run. Through `conclude_run` and the real history
store, on SQLite and PostgreSQL; the retraining command appends one line per call to a file."""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from driftline.checks.columns import Columns
from driftline.checks.result import CheckResult
from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.history.models import Incident
from driftline.tasks.references.reference import PreparedReference
from driftline.tasks.run.context import RunContext, RunOptions
from driftline.tasks.run.pipeline import Ran, RunSummary, conclude_run, tracked_run

START = datetime(2025, 1, 6, tzinfo=UTC)
PREPARED = PreparedReference(pd.DataFrame({"x": [1.0, 2.0]}), Columns(numeric=["x"]), "0" * 64, None)


APPEND = "import os, sys; open(sys.argv[1], 'a').write(os.environ['DRIFTLINE_BATCH_ID'] + '\\n')"


def _spec(tmp_path: Path, url: str, calls: Path, script: str = APPEND, **retrain: Any) -> MonitorSpec:
    """A monitor whose retraining command (by default) appends the batch id of each call to `calls`."""
    data = {
        "name": "flights",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["performance.overall", "drift.prediction"],
        "store_url": url,
        "alerts": {"console": False},
        "retrain": {"command": [sys.executable, "-c", script, str(calls)], **retrain},
    }
    return MonitorSpec.model_validate({**data, "base_dir": tmp_path})


def _results(performance: str, drift: str = "none") -> list[CheckResult]:
    return [
        CheckResult("performance.overall", "accuracy", severity=performance, metrics={"current": 0.8}),
        CheckResult("drift.prediction", "prediction", severity=drift, metrics={"psi": 0.05}),
    ]


def _runs(spec: MonitorSpec, plan: list[tuple[str, str]], *, alerts: bool = True) -> list[RunSummary]:
    """One stored run per (performance, prediction drift) severity pair, a week apart."""
    context = RunContext.open(spec, options=RunOptions(alerts=alerts))
    summaries = []
    for week, (performance, drift) in enumerate(plan):
        batch_id, batch_time = f"w{week:02d}", START + timedelta(weeks=week)
        with tracked_run(context, batch_id, batch_time):
            ran = Ran(batch_id, batch_time, 100, _results(performance, drift))
            summaries.append(conclude_run(context, ran, PREPARED))
    return summaries


def _calls(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _incidents(url: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    engine = create_engine(url)
    try:
        with Session(engine) as session:
            rows = session.scalars(select(Incident).order_by(Incident.id))
            return [(r.id, r.check, r.status, dict(r.details)) for r in rows]
    finally:
        engine.dispose()


def test_a_sustained_performance_failure_retrains_once_per_incident(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls = tmp_path / "calls.txt"
    with caplog.at_level(logging.INFO, logger="driftline"):
        summaries = _runs(_spec(tmp_path, database_url, calls), [("high", "none")] * 5)
    assert _calls(calls) == ["w00"]
    [(incident, check, status, details)] = _incidents(database_url)
    assert (check, status, details["retrained"]) == ("performance.overall", "open", "w00")
    assert summaries[0].retraining == {"command": {"returncode": 0}, "incidents": [incident]}
    already = f"retraining already requested for incident {incident} at batch w00"
    assert [s.retraining for s in summaries[1:]] == [{"skipped": already}] * 4
    requested = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retraining requested")]
    failure = f"performance.overall[accuracy] high (incident {incident})"
    assert requested == [f"retraining requested for monitor flights batch w00: {failure}"]


def test_a_new_incident_after_a_resolution_retrains_again(database_url: str, tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    plan = [("high", "none"), ("none", "none"), ("none", "none"), ("none", "none"), ("high", "none")]
    _runs(_spec(tmp_path, database_url, calls), plan)
    assert _calls(calls) == ["w00", "w04"]
    assert [(status, d["retrained"]) for _, _, status, d in _incidents(database_url)] == [
        ("resolved", "w00"),
        ("open", "w04"),
    ]


def test_prediction_drift_with_intact_performance_does_not_retrain(database_url: str, tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    summaries = _runs(_spec(tmp_path, database_url, calls), [("none", "high")] * 3)
    assert _calls(calls) == [] and all(s.retraining is None for s in summaries)
    assert [(check, status) for _, check, status, _ in _incidents(database_url)] == [
        ("drift.prediction", "open")
    ]


def test_every_run_retrains_each_failing_run(database_url: str, tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    _runs(_spec(tmp_path, database_url, calls, when="every_run"), [("high", "none")] * 5)
    assert _calls(calls) == ["w00", "w01", "w02", "w03", "w04"]
    assert "retrained" not in _incidents(database_url)[0][3]


def test_without_alerts_every_failing_run_retrains(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    url = f"sqlite:///{tmp_path / 'history.db'}"
    summaries = _runs(_spec(tmp_path, url, calls), [("high", "none")] * 3, alerts=False)
    assert _calls(calls) == ["w00", "w01", "w02"]
    assert summaries[0].retraining == {"command": {"returncode": 0}} and _incidents(url) == []


def test_retraining_through_incidents_needs_them_to_open_at_its_severity(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'history.db'}"
    with pytest.raises(ValidationError, match=r"below alerts\.min_severity medium"):
        _spec(tmp_path, url, tmp_path / "calls.txt", min_severity="low")
    assert _spec(tmp_path, url, tmp_path / "calls.txt", min_severity="low", when="every_run").retrain


def test_a_request_that_failed_everywhere_is_tried_again_by_the_next_run(
    database_url: str, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.txt"
    fails_first = APPEND + "; sys.exit(3 if os.environ['DRIFTLINE_BATCH_ID'] == 'w00' else 0)"
    summaries = _runs(_spec(tmp_path, database_url, calls, script=fails_first), [("high", "none")] * 3)
    assert _calls(calls) == ["w00", "w01"]
    assert "exited with 3" in summaries[0].retraining["command"]["error"]
    assert _incidents(database_url)[0][3]["retrained"] == "w01"
