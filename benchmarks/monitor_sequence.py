"""One monitor fed a sequence of batches through the real run path, and what its store and Slack saw.

A `MonitoredSequence` is a monitor folder of its own: the data set's spec (the demo's for the census,
its checks and roles otherwise) with a SQLite history store, alerts to a Slack stand-in on 127.0.0.1
and a `retrain.command` that appends the batch id to a file. Each batch is written as a Parquet file
named by a date and evaluated as `driftline backfill --alerts --retrain` evaluates it (`run_monitor`
with alerts on, retraining always, one profile cache shared by every monitor of the data set), so
incidents open, escalate and resolve, messages are posted and edited, and retraining starts as in
production. `tally()` then counts only what the store, the stand-in and the retraining file hold.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from sqlalchemy import create_engine, select

from benchmarks.alert_data import DataSet
from driftline.checks.result import severity_rank, worst_severity
from driftline.data import demo
from driftline.tasks.history.models import Incident, ResultRow, Run
from driftline.tasks.references.profiles import ProfileCache
from driftline.tasks.retraining.actions import RETRAIN_ALWAYS
from tests.alerts.slack_server import POST_PATH, SlackStandIn

TOKEN_ENV = "DRIFTLINE_BENCH_SLACK_TOKEN"
CHANNEL = "#ml-alerts"
MIN_SEVERITY = "medium"
FIRST_DAY = date(2020, 1, 1)
# Verdicts do not depend on how checks are isolated; one thread keeps a run cheap on a shared machine.
EXECUTION = {"isolation": "thread", "workers": 1}


def batch_id(index: int) -> str:
    """The id (a date, one day apart) of the sequence's `index`-th batch, counted from 1."""
    return (FIRST_DAY + timedelta(days=index - 1)).isoformat()


def batch_index(batch: str) -> int:
    """The position (from 1) of a batch id in the sequence."""
    return (date.fromisoformat(batch) - FIRST_DAY).days + 1


def monitor_spec(data: DataSet, reference: Path, roles: dict[str, Any] | None = None) -> dict[str, Any]:
    """The data set's default monitor: the demo's spec for the census, otherwise the demo's settings
    with the data set's roles and checks; `roles` replaces the columns section."""
    spec = yaml.safe_load(demo.SPEC_TEMPLATE.read_text())
    if data.name != "census":
        spec["name"] = f"{data.name}-model"
        spec["columns"] = dict(data.roles)
        spec["checks"] = list(data.checks)
    if roles is not None:
        spec["columns"] = roles
    spec["reference"] = {"path": str(reference)}
    spec["batches"] = {"path": "batches/{batch}.parquet"}
    spec["execution"] = dict(EXECUTION)
    return spec


@dataclass
class Tally:
    """What one sequence caused: runs stored and those whose worst result reached the alert severity,
    incidents (pages: at or above the alert severity) and
    the batch that opened the first, their openings and resolutions per check and target, Slack
    messages posted and edited, retraining calls."""

    runs: int
    alerting_runs: int
    incidents: int
    pages: int
    paging_runs: int
    first_page: int | None
    posts: int
    edits: int
    retrains: int
    opened: Counter[str] = field(default_factory=Counter)
    resolved: Counter[str] = field(default_factory=Counter)


class MonitoredSequence:
    """A fresh monitor folder under `folder` for one sequence of batches (see the module docstring)."""

    def __init__(
        self,
        data: DataSet,
        folder: Path,
        slack: SlackStandIn,
        cache: ProfileCache,
        reference: Path,
        roles: dict[str, Any] | None = None,
        sustained: dict[str, Any] | None = None,
    ) -> None:
        from driftline.tasks.config.spec import load_spec

        folder.mkdir(parents=True)
        (folder / "batches").mkdir()
        self.folder, self.slack, self.cache = folder, slack, cache
        self.retrain_log = folder / "retrain.log"
        self.database = folder / "history.db"
        spec = monitor_spec(data, reference, roles)
        spec["store_url"] = f"sqlite:///{self.database}"
        spec["alerts"] = {
            "min_severity": MIN_SEVERITY,
            "slack": {"channel": CHANNEL, "token_env": TOKEN_ENV, "base_url": slack.api_url},
            **({"sustained": sustained} if sustained else {}),
        }
        append = f'echo "$DRIFTLINE_BATCH_ID" >> {shlex.quote(str(self.retrain_log))}'
        spec["retrain"] = {**(spec.get("retrain") or {}), "command": ["/bin/sh", "-c", append]}
        (folder / "monitor.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        os.environ.setdefault(TOKEN_ENV, "xoxb-stand-in")
        self.spec = load_spec(folder / "monitor.yaml")
        self.runs = 0
        self.posts_before = self._posts()
        self.edits_before = len(slack.updates)

    def _posts(self) -> int:
        """Messages the stand-in has accepted for posting so far (top-level and replies)."""
        return sum(r.path == POST_PATH for r in self.slack.accepted())

    def run(self, batch: pd.DataFrame) -> dict[str, Any]:
        """Write the next batch and evaluate it as a backfill with alerts and retraining does."""
        from driftline.tasks.run.pipeline import run_monitor

        self.runs += 1
        name = batch_id(self.runs)
        batch.to_parquet(self.folder / "batches" / f"{name}.parquet", index=False)
        summary = run_monitor(self.spec, name, cache=self.cache, alerts=True, retrain=RETRAIN_ALWAYS)
        alerts = summary.alerts or {}
        if alerts.get("failed") or alerts.get("pending"):
            logging.getLogger(__name__).warning("batch %s: alerts not delivered: %s", name, alerts)
        return summary.to_dict()

    def paged(self) -> bool:
        """Whether the store holds an incident at or above the alert severity."""
        return self.tally(slack=False).pages > 0

    def query(self, statement: Any) -> list[Any]:
        """The rows a SELECT returns from the sequence's store."""
        engine = create_engine(f"sqlite:///{self.database}")
        try:
            with engine.connect() as conn:
                return list(conn.execute(statement).all())
        finally:
            engine.dispose()

    def tally(self, slack: bool = True) -> Tally:
        """The counts read back from the store, the Slack stand-in and the retraining file."""
        worst = [r.worst_severity for r in self.query(select(Run.worst_severity))]
        rows = self.query(
            select(Incident.check, Incident.target, Incident.severity, Incident.status, Incident.opened_batch)
        )
        pages = [r for r in rows if severity_rank(r.severity) >= severity_rank(MIN_SEVERITY)]
        opened = {r.opened_batch for r in pages}
        calls = self.retrain_log.read_text().splitlines() if self.retrain_log.exists() else []
        return Tally(
            runs=len(worst),
            alerting_runs=sum(severity_rank(w) >= severity_rank(MIN_SEVERITY) for w in worst),
            incidents=len(rows),
            pages=len(pages),
            paging_runs=len(opened),
            first_page=min((batch_index(b) for b in opened), default=None),
            posts=self._posts() - self.posts_before if slack else 0,
            edits=len(self.slack.updates) - self.edits_before if slack else 0,
            retrains=len(calls),
            opened=Counter(f"{r.check}: {r.target}" for r in rows),
            resolved=Counter(f"{r.check}: {r.target}" for r in rows if r.status == "resolved"),
        )

    def target_severities(self, target: str) -> list[dict[str, str]]:
        """Per run in order, each check's worst graded severity on `target`, read from the store."""
        rows = self.query(
            select(ResultRow.batch_id, ResultRow.check, ResultRow.severity).where(
                ResultRow.target == target, ResultRow.status == "ok"
            )
        )
        runs: list[dict[str, list[str]]] = [{} for _ in range(self.runs)]
        for row in rows:
            runs[batch_index(row.batch_id) - 1].setdefault(row.check, []).append(row.severity)
        return [{check: worst_severity(s) for check, s in run.items()} for run in runs]
