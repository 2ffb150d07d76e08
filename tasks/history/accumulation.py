"""Evidence over time: each graded metric's stored per-batch p-values, over the monitor's recent batches
graded against the same reference, read in one bounded query and accumulated (`checks.sequential`);
a metric whose recent batches together prove a change is raised to the sustained severity.

The history is the monitor's last `HISTORY_RUNS` completed runs before this batch whose reference
hash is this run's, up to the first run graded against another reference (a new reference starts a
new history). Only their `<metric>_p` rows and the rows that carry each result's evidence are read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Engine, and_, select

from driftline.checks import registry
from driftline.checks.errors import CheckInputError
from driftline.checks.evidence import Evidence, graded_metrics
from driftline.checks.result import CheckResult, format_number, worst_severity
from driftline.checks.roles import MODEL_ROLES
from driftline.checks.sequential import (
    WINDOWS,
    Claim,
    budget_shares,
    excess,
    scores,
    shared_correlation,
    strongest_claim,
    sustained_level,
)
from driftline.tasks.history.db import as_utc
from driftline.tasks.history.query import RESULTS, RUNS

if TYPE_CHECKING:
    from driftline.tasks.alerts.config import SustainedConfig
    from driftline.tasks.references.reference import PreparedReference
    from driftline.tasks.run.context import RunContext
    from driftline.tasks.run.pipeline import Ran

# Earlier runs read: the longest window needs 15 besides this batch; φ is estimated from all 16.
HISTORY_RUNS = max(WINDOWS)
VERDICTS = ("passed", "failed")
Key = tuple[str, str]  # (check, target)


@dataclass(frozen=True)
class Graded:
    """One graded metric of this run that accumulates: its result, its name and its evidence."""

    result: CheckResult
    metric: str
    evidence: Evidence

    @property
    def key(self) -> Key:
        return (self.result.check, self.result.target)


@dataclass
class Earlier:
    """One earlier batch of the history: its id and each (check, target)'s metric values and details."""

    batch_id: str
    values: dict[Key, dict[str, float | None]] = field(default_factory=lambda: defaultdict(dict))
    details: dict[Key, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))

    def point(self, graded: Graded) -> tuple[float, float] | None:
        """(p-value, excess effect) of the metric in this batch; None when it was not graded. The
        excess is NaN when the batch's evidence is not stored."""
        p = self.values.get(graded.key, {}).get(f"{graded.metric}_p")
        if p is None:
            return None
        stored = (self.details.get(graded.key, {}).get("evidence") or {}).get(graded.metric)
        try:
            effect = excess(Evidence.from_dict(stored)) if stored else math.nan
        except (TypeError, ValueError):
            effect = math.nan
        return float(p), effect


@cache
def is_audit(check: str, metric: str) -> bool:
    """True when the check declares the metric an audit of the batch alone (not against the reference)."""
    try:
        declared = registry.get(check).declared_metrics.get(metric)
    except CheckInputError:
        return False
    return bool(declared is not None and declared.audit)


@cache
def describes_model(check: str) -> bool:
    """True when the check's declared role judges the model (outputs, labels, performance, estimates,
    fairness) rather than one input feature."""
    known = registry.known(check)
    return bool(known is not None and known.role in MODEL_ROLES)


def accumulating(results: Iterable[CheckResult]) -> list[Graded]:
    """The graded metrics of the run whose evidence accumulates: graded on evidence against the
    reference, with a p-value (audits and metrics graded on their value alone do not)."""
    graded = []
    for result in results:
        if not graded_metrics(result):
            continue
        for metric, data in result.evidence.items():
            if not result.thresholds.get(metric) or result.metrics.get(f"{metric}_p") is None:
                continue
            if not is_audit(result.check, metric):
                graded.append(Graded(result, metric, Evidence.from_dict(data)))
    return graded


def read_earlier(
    engine: Engine,
    monitor: str,
    batch_id: str,
    batch_time: datetime,
    reference_hash: str,
    graded: list[Graded],
) -> list[Earlier]:
    """The earlier batches of the history, oldest first, with the rows the graded metrics need: one
    query over the monitor's last `HISTORY_RUNS` completed runs up to `batch_time` (other than this
    batch), stopped at the newest one graded against another reference."""
    recent = (
        select(RUNS.c.id, RUNS.c.batch_id, RUNS.c.batch_time, RUNS.c.details)
        .where(
            RUNS.c.monitor == monitor,
            RUNS.c.batch_id != batch_id,
            RUNS.c.batch_time <= as_utc(batch_time),
            RUNS.c.status.in_(VERDICTS),
        )
        .order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc())
        .limit(HISTORY_RUNS)
        .subquery()
    )
    checks = sorted({g.result.check for g in graded})
    metrics = sorted(stored_metrics(graded))
    joined = recent.outerjoin(
        RESULTS,
        and_(
            RESULTS.c.monitor == monitor,
            RESULTS.c.batch_id == recent.c.batch_id,
            RESULTS.c.check.in_(checks),
            RESULTS.c.metric.in_(metrics),
        ),
    )
    query = select(
        recent.c.batch_id,
        recent.c.batch_time,
        recent.c.id,
        recent.c.details.label("run_details"),
        RESULTS.c.check,
        RESULTS.c.target,
        RESULTS.c.metric,
        RESULTS.c.value,
        RESULTS.c.details,
    ).select_from(joined)
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return same_reference(rows, reference_hash)


def stored_metrics(graded: list[Graded]) -> set[str]:
    """The metric rows a history read needs: each graded metric's p-value and the row its result's
    details (with the evidence) are stored on, the result's first metric."""
    names = {f"{g.metric}_p" for g in graded}
    names |= {next(iter(g.result.metrics)) for g in graded}
    return names


def same_reference(rows: Sequence[Any], reference_hash: str) -> list[Earlier]:
    """The joined rows folded into batches, newest first up to the first one graded against another
    reference, returned oldest first."""
    order: dict[str, tuple[Any, int, bool]] = {}
    batches: dict[str, Earlier] = {}
    for row in rows:
        same = (row.run_details or {}).get("reference_hash") == reference_hash
        order[row.batch_id] = (as_utc(row.batch_time), row.id, same)
        earlier = batches.setdefault(row.batch_id, Earlier(row.batch_id))
        if row.check is None:
            continue
        key = (row.check, row.target)
        earlier.values[key][row.metric] = row.value
        if row.details:
            earlier.details[key].update(row.details)
    stretch: list[Earlier] = []
    for batch_id in sorted(order, key=lambda b: order[b][:2], reverse=True):
        if not order[batch_id][2]:
            break
        stretch.append(batches[batch_id])
    return stretch[::-1]


@dataclass(frozen=True)
class Budget:
    """The sustained layer's levels for one run: the configuration, how many graded metrics the budget
    is split over (and how many of them describe the model), the Z a window of a model-level and of
    another metric must reach, and ρ of this batch against the reference."""

    config: SustainedConfig
    tests: int
    model_tests: int
    levels: tuple[float, float]
    rho: float

    @classmethod
    def of(
        cls, config: SustainedConfig, results: list[CheckResult], rows: int, reference_rows: int
    ) -> Budget:
        model = sum(graded_metrics(r) for r in results if describes_model(r.check))
        tests = sum(graded_metrics(r) for r in results)
        shares = budget_shares(model, tests - model)
        levels = (
            sustained_level(config.expected_run_length, shares[0]),
            sustained_level(config.expected_run_length, shares[1]),
        )
        return cls(config, tests, model, levels, shared_correlation(rows, reference_rows))

    def level(self, check: str) -> float:
        """The Z a window of the check's metrics must reach."""
        return self.levels[0] if describes_model(check) else self.levels[1]


def claim_for(graded: Graded, earlier: list[Earlier], batch_id: str, budget: Budget) -> dict[str, Any] | None:
    """The sustained claim of one graded metric over its history (the `details.sustained` record),
    or None when no window proves a change."""
    points = [(e.batch_id, point) for e in earlier if (point := e.point(graded)) is not None]
    p_now = graded.result.metrics[f"{graded.metric}_p"]
    assert p_now is not None
    ids = [b for b, _ in points] + [batch_id]
    p = [pt[0] for _, pt in points] + [p_now]
    effects = [pt[1] for _, pt in points] + [excess(graded.evidence)]
    lowest = abs(graded.result.thresholds[graded.metric][0])
    claim = strongest_claim(
        scores(p),
        np.asarray(effects, dtype=float),
        rho=budget.rho,
        level=budget.level(graded.result.check),
        min_excess=budget.config.min_effect * lowest,
    )
    return None if claim is None else record(graded.metric, claim, ids[-claim.window :])


def record(metric: str, claim: Claim, batches: list[str]) -> dict[str, Any]:
    """`details.sustained`: the metric, the window and its batches (oldest first), Z_w and its level,
    the mean excess effect, and the φ and ρ of the window's variance."""
    return {
        "metric": metric,
        "window": claim.window,
        "z": claim.z,
        "level": claim.level,
        "mean_excess": claim.mean_excess,
        "batches": batches,
        "phi": claim.phi,
        "rho": claim.rho,
    }


def sentence(result: CheckResult, sustained: Mapping[str, Any], budget: Budget, higher_is_worse: bool) -> str:
    """The claim in words, appended to the result's reason."""
    subject = result.check if result.target == "*" else result.target
    side = "above" if higher_is_worse else "below"
    return (
        f"over the last {sustained['window']} batches, {sustained['metric']} of {subject} stayed {side} "
        f"its reference level (mean excess {format_number(sustained['mean_excess'])}, "
        f"z {sustained['z']:.1f} ≥ {sustained['level']:.1f} for 1 false page per "
        f"{budget.config.expected_run_length:g} runs over {budget_words(budget)} × {len(WINDOWS)} windows)"
    )


def budget_words(budget: Budget) -> str:
    """How the budget is split, in words: `26 metrics`, or `26 metrics (half to the model's 5)`."""
    words = f"{budget.tests} metric{'' if budget.tests == 1 else 's'}"
    if 0 < budget.model_tests < budget.tests:
        words += f" (half to the model's {budget.model_tests})"
    return words


def apply_claims(graded: list[Graded], earlier: list[Earlier], batch_id: str, budget: Budget) -> int:
    """Raise every result whose graded metric a window proves changed (its strongest claim recorded
    in `details.sustained`, `<metric>_sustained_z` and its reason); returns how many were claimed."""
    claims: dict[int, tuple[Graded, dict[str, Any]]] = {}
    for metric in graded:
        sustained = claim_for(metric, earlier, batch_id, budget)
        held = claims.get(id(metric.result))
        if sustained is not None and (held is None or sustained["z"] > held[1]["z"]):
            claims[id(metric.result)] = (metric, sustained)
    for graded_metric, sustained in claims.values():
        result = graded_metric.result
        result.severity = worst_severity((result.severity, budget.config.severity))
        result.metrics[f"{graded_metric.metric}_sustained_z"] = sustained["z"]
        said = sentence(result, sustained, budget, graded_metric.evidence.higher_is_worse)
        result.details["sustained"] = {**sustained, "sentence": said}
        result.reason = f"{result.reason}; {said}" if result.reason else said
    return len(claims)


def accumulate_evidence(
    context: RunContext, ran: Ran, prepared: PreparedReference, results: list[CheckResult]
) -> None:
    """The sustained layer over a graded run (in place): each graded metric's evidence accumulated over
    the monitor's recent batches against the same reference. Off with `alerts.sustained.enabled:
    false`; when the history cannot be read, skipped with one log line."""
    from driftline.tasks.history.db import connected_store
    from driftline.tasks.history.failures import one_line

    config, logger = context.spec.alerts.sustained, context.driver.logger
    graded = accumulating(results) if config.enabled else []
    if not graded:
        return
    url, ref_hash = context.database_url, prepared.content_hash
    try:
        with connected_store(url) as engine:
            earlier = read_earlier(engine, context.spec.name, ran.batch_id, ran.batch_time, ref_hash, graded)
    except Exception as exc:
        logger.warning("evidence over time skipped: the history could not be read (%s)", one_line(exc, url))
        return
    budget = Budget.of(config, results, ran.rows, len(prepared.frame))
    claimed = apply_claims(graded, earlier, ran.batch_id, budget)
    if claimed:
        logger.info("%d result(s) raised by evidence over %d earlier batch(es)", claimed, len(earlier))
