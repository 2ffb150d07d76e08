"""What the site shows of one monitor, gathered from its stored history: its recent runs, a batch × check
heat map, the share of drift results at medium or worse per batch, and its estimated performance
against the realised one once labels are in.

Every function here takes the frame of `read_history` (one row per metric value) and the batches
shown, oldest first, so that the numbers can be checked by hand without a database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from driftline.checks.roles import DRIFT_ROLES
from driftline.checks.catalog_index import DATA_SUMMARY
from driftline.checks.registry import declaration
from driftline.checks.result import SEVERITIES, severity_rank
from driftline.tasks.views.drift_overview import OVERVIEW_CHECK
from driftline.tasks.history.query import list_runs, read_history
from driftline.tasks.history.store import NO_METRIC

NOTABLE = "medium"  # counted "at medium or worse": in heat-map cells, and as drifted in the drift share
REALISED_METRIC = "current"
ESTIMATE_METRICS = ("estimated", "lower", "upper")
GRADED_RUNS = frozenset({"passed", "failed"})  # run statuses whose worst severity is a verdict
UNGRADED = -1  # the rank of a result that is skipped or an error, and of a severity no run wrote
SEVERITY_RANKS = {name: rank for rank, name in enumerate(SEVERITIES)}


def rank_of(severity: str) -> int:
    """`severity_rank`, but `UNGRADED` for a name that is not a severity (the store is data too)."""
    return SEVERITY_RANKS.get(severity, UNGRADED)


@dataclass(frozen=True)
class HeatCell:
    """One check in one batch: its worst severity over the targets it graded, or `skipped` / `error`
    when it graded none (`error` when any target failed), with the counts behind it and the metric
    values of its worst target."""

    batch_id: str
    check: str
    state: str
    graded: int
    at_medium: int
    skipped: int
    errors: int
    worst_target: str | None
    values: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class HeatMap:
    """The cells of the checks (sorted by name) over the batches (oldest first); a check that did not
    run in a batch has no cell there."""

    batches: list[str]
    checks: list[str]
    cells: dict[tuple[str, str], HeatCell]

    def cell(self, batch_id: str, check: str) -> HeatCell | None:
        return self.cells.get((batch_id, check))


@dataclass(frozen=True)
class DriftShare:
    """Drift results (check × target of a `drift.*` check, graded) of one batch, how many of them were
    at medium or worse, and the share the run's drift headline stored (features graded low or worse)."""

    batch_id: str
    drifted: int
    results: int
    headline: float | None = None

    @property
    def share(self) -> float | None:
        """drifted / results; None when the batch has no graded drift result."""
        return self.drifted / self.results if self.results else None


@dataclass(frozen=True)
class PerformanceSeries:
    """One estimated metric (e.g. `performance.estimated` / `accuracy`) over the batches: the estimate,
    its band, and the realised value of the check it estimates (`realised_check`, `Check.estimates`)
    for the same metric (NaN where absent)."""

    check: str
    realised_check: str
    target: str
    batches: list[str]
    estimated: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    realised: np.ndarray


@dataclass
class MonitorData:
    """Everything the site shows of one monitor."""

    monitor: str
    runs: list[dict[str, Any]]
    incidents: list[dict[str, Any]]
    heat: HeatMap
    drift: list[DriftShare]
    performance: list[PerformanceSeries]

    @property
    def latest(self) -> dict[str, Any] | None:
        """The run of the newest batch."""
        return self.runs[-1] if self.runs else None

    @property
    def batches(self) -> list[str]:
        return [run["batch_id"] for run in self.runs]

    def severity_points(self) -> list[int | None]:
        """The worst-severity rank (none 0 … high 3) of each run, oldest first; None for a run that
        reached no verdict (running, abandoned, error, empty), which is left as a gap."""
        return [rank_of(run["worst_severity"]) if run["status"] in GRADED_RUNS else None for run in self.runs]

    def drift_points(self) -> list[float | None]:
        """The drift share of each run, oldest first (None without graded drift results)."""
        return [share.share for share in self.drift]


def result_rows(history: pd.DataFrame) -> pd.DataFrame:
    """One row per result (batch, check, target) with its status, severity and rank (`UNGRADED` for
    skipped and error results)."""
    results = history.drop_duplicates(["batch_id", "check", "target"])[
        ["batch_id", "check", "target", "status", "severity"]
    ].reset_index(drop=True)
    ranks = results["severity"].map(SEVERITY_RANKS)
    results["rank"] = np.where(results["status"] == "ok", ranks.fillna(UNGRADED), UNGRADED).astype(int)
    return results


def heat_map(history: pd.DataFrame, batches: Sequence[str]) -> HeatMap:
    """The batch × check cells of the history rows of `batches` (the data summary, which describes and
    never judges, has none)."""
    history = history[history["batch_id"].isin(batches) & (history["check"] != DATA_SUMMARY)]
    results = result_rows(history)
    if results.empty:
        return HeatMap(list(batches), [], {})
    results["ok"] = results["rank"] != UNGRADED
    results["medium"] = results["rank"] >= severity_rank(NOTABLE)
    results["skipped"] = results["status"] == "skipped"
    results["error"] = results["status"] == "error"
    groups = results.groupby(["batch_id", "check"], sort=False)
    counts = groups[["ok", "medium", "skipped", "error"]].sum()
    worst = results.loc[groups["rank"].idxmax(), ["batch_id", "check", "target", "rank"]]
    keys = ["batch_id", "check", "target"]
    values = _metric_values(history.merge(worst.loc[worst["rank"] != UNGRADED, keys], on=keys))
    cells = {}
    for row in worst.itertuples(index=False):
        n = counts.loc[(row.batch_id, row.check)]
        graded = row.rank != UNGRADED
        target = row.target if graded else None
        cells[(row.batch_id, row.check)] = HeatCell(
            batch_id=row.batch_id,
            check=row.check,
            state=SEVERITIES[row.rank] if graded else ("error" if n["error"] else "skipped"),
            graded=int(n["ok"]),
            at_medium=int(n["medium"]),
            skipped=int(n["skipped"]),
            errors=int(n["error"]),
            worst_target=target,
            values=values.get((row.batch_id, row.check, row.target), {}) if graded else {},
        )
    return HeatMap(list(batches), sorted(results["check"].unique()), cells)


def _metric_values(history: pd.DataFrame) -> dict[tuple[str, str, str], dict[str, float]]:
    """The stored metric values of each result in `history`, keyed by (batch, check, target)."""
    values: dict[tuple[str, str, str], dict[str, float]] = {}
    stored = history[(history["metric"] != NO_METRIC) & history["value"].notna()]
    for row in stored.itertuples(index=False):
        values.setdefault((row.batch_id, row.check, row.target), {})[row.metric] = float(row.value)
    return values


def drift_shares(history: pd.DataFrame, batches: Sequence[str]) -> list[DriftShare]:
    """Per batch: the graded results of drift checks (`DRIFT_ROLES`), how many are at medium or worse,
    and the stored headline share (`run.drifted_features`)."""
    results = result_rows(history)
    drift_checks = [c for c in results["check"].unique() if declaration(c).role in DRIFT_ROLES]
    drift = results[results["check"].isin(drift_checks) & (results["rank"] != UNGRADED)]
    per_batch = (
        drift.assign(drifted=drift["rank"] >= severity_rank(NOTABLE))
        .groupby("batch_id")["drifted"]
        .agg(["sum", "count"])
    )
    headline = history[(history["check"] == OVERVIEW_CHECK) & (history["metric"] == "share")]
    headline_share = dict(zip(headline["batch_id"], headline["value"], strict=True))
    shares = []
    for batch_id in batches:
        drifted, total = per_batch.loc[batch_id] if batch_id in per_batch.index else (0, 0)
        stored = headline_share.get(batch_id)
        shares.append(
            DriftShare(
                batch_id,
                int(drifted),
                int(total),
                None if stored is None or np.isnan(stored) else float(stored),
            )
        )
    return shares


def performance_series(history: pd.DataFrame, batches: Sequence[str]) -> list[PerformanceSeries]:
    """One series per (estimate check, target) found among `batches`, sorted, each aligned on
    `batches` with the realised value of the same target by the check it estimates (`Check.estimates`)."""
    realised_of = {c: declaration(c).estimates for c in history["check"].unique()}
    estimates = history[
        history["check"].isin([c for c, realised in realised_of.items() if realised])
        & history["metric"].isin(ESTIMATE_METRICS)
    ]
    realised = history[(history["metric"] == REALISED_METRIC) & (history["status"] == "ok")]
    index = pd.Index(list(batches))
    series = []
    for (check, target), rows in sorted(estimates.groupby(["check", "target"]), key=lambda kv: kv[0]):
        table = rows.pivot_table(index="batch_id", columns="metric", values="value", aggfunc="last")
        table = table.reindex(index=index, columns=list(ESTIMATE_METRICS))
        truth_rows = realised[(realised["check"] == realised_of[check]) & (realised["target"] == target)]
        truth = truth_rows.set_index("batch_id")["value"].reindex(index)
        if table["estimated"].isna().all():
            continue
        series.append(
            PerformanceSeries(
                check=check,
                realised_check=str(realised_of[check]),
                target=target,
                batches=list(batches),
                estimated=table["estimated"].to_numpy(dtype=float),
                lower=table["lower"].to_numpy(dtype=float),
                upper=table["upper"].to_numpy(dtype=float),
                realised=truth.to_numpy(dtype=float),
            )
        )
    return series


def monitor_data(
    engine: Engine, monitor: str, *, runs: int, incidents: Mapping[str, list[dict[str, Any]]]
) -> MonitorData:
    """The newest `runs` runs of `monitor` (shown oldest first) and everything drawn from their results."""
    recent = list(reversed(list_runs(engine, monitor, limit=runs)))
    batches = [run["batch_id"] for run in recent]
    if recent:
        history = read_history(engine, monitor, since=min(run["batch_time"] for run in recent))
        history = history[history["batch_id"].isin(batches)]
    else:
        history = read_history(engine, monitor).iloc[0:0]
    return MonitorData(
        monitor=monitor,
        runs=recent,
        incidents=sorted(incidents.get(monitor, []), key=lambda i: (-rank_of(i["severity"]), i["opened_at"])),
        heat=heat_map(history, batches),
        drift=drift_shares(history, batches),
        performance=performance_series(history, batches),
    )


def overview_order(monitors: Sequence[MonitorData]) -> list[MonitorData]:
    """Monitors as a morning view wants them: worst latest verdict first, then most open incidents,
    then by name."""

    def key(data: MonitorData) -> tuple[int, int, str]:
        latest = data.latest
        graded = latest is not None and latest["status"] in GRADED_RUNS
        rank = rank_of(latest["worst_severity"]) if latest is not None and graded else UNGRADED
        return -rank, -len(data.incidents), data.monitor

    return sorted(monitors, key=key)
