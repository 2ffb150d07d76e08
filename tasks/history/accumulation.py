"""Evidence over time: each graded metric's stored per-batch p-values, over the monitor's recent batches
graded against the same reference, read in one bounded query and accumulated (`checks.sequential`);
a metric whose recent batches together prove a change is raised to the sustained severity.

The history is the monitor's last `HISTORY_RUNS` completed runs before this batch whose reference
hash is this run's, up to the first run graded against another reference (a new reference starts a
new history). Only their `<metric>_p` rows and the rows that carry each result's evidence (and its
category share scores, `checks.shares`) are read. A result with share scores is accumulated on them
over the batches that stored them too; with fewer than two such earlier batches (a history stored
before the scores existed), or without scores, on its p-values.
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
from driftline.checks.base import Metric
from driftline.checks.errors import CheckInputError
from driftline.checks.evidence import Evidence, graded_metrics
from driftline.checks.result import CheckResult, format_number, worst_severity
from driftline.checks.roles import MODEL_ROLES
from driftline.checks.sequential import (
    MIN_EARLIER,
    WINDOWS,
    Claim,
    budget_shares,
    excess,
    scores,
    shared_correlation,
    strongest_claim,
    strongest_signed_claim,
    sustained_level,
)
from driftline.checks.shares import SHARE_SCORES, psi_share_change
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

    @property
    def share_scores(self) -> Mapping[str, list[float]]:
        """This batch's category share scores of the result, {category: [signed score, reference share,
        batch share]} (empty when it has none)."""
        return self.result.details.get(SHARE_SCORES) or {}


@dataclass
class Earlier:
    """One earlier batch of the history: its id and each (check, target)'s metric values, details and
    rows (which set how much its score shares the reference's error)."""

    batch_id: str
    values: dict[Key, dict[str, float | None]] = field(default_factory=lambda: defaultdict(dict))
    details: dict[Key, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))
    rows: dict[Key, int] = field(default_factory=dict)

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

    def share_scores(self, graded: Graded) -> Mapping[str, list[float]] | None:
        """The batch's category share scores of the metric's result; None when it was stored without
        them."""
        stored = self.details.get(graded.key, {}).get(SHARE_SCORES)
        return stored if isinstance(stored, Mapping) else None


@cache
def declared(check: str, metric: str) -> Metric | None:
    """The check's declaration of the metric; None for a check or metric the registry does not know."""
    try:
        return registry.get(check).declared_metrics.get(metric)
    except CheckInputError:
        return None


def is_audit(check: str, metric: str) -> bool:
    """True when the check declares the metric an audit of the batch alone (not against the reference)."""
    metric_declared = declared(check, metric)
    return bool(metric_declared is not None and metric_declared.audit)


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
        RESULTS.c.rows,
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
        if row.rows:
            earlier.rows[key] = int(row.rows)
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
    is split over (and how many of them describe the model), the budget share of a model-level and of
    another metric, ρ of this batch against the reference and the reference's rows."""

    config: SustainedConfig
    tests: int
    model_tests: int
    shares: tuple[float, float]
    rho: float
    reference_rows: int

    @classmethod
    def of(
        cls, config: SustainedConfig, results: list[CheckResult], rows: int, reference_rows: int
    ) -> Budget:
        model = sum(graded_metrics(r) for r in results if describes_model(r.check))
        tests = sum(graded_metrics(r) for r in results)
        shares = budget_shares(model, tests - model)
        return cls(config, tests, model, shares, shared_correlation(rows, reference_rows), reference_rows)

    def rhos(self, graded: Graded, earlier: list[Earlier]) -> list[float]:
        """ρ of the metric's result in each earlier batch and then in this one, from the result's rows
        (the batch's when they are not known): batches of different sizes share the reference's error
        unequally."""
        rows = [e.rows.get(graded.key) for e in earlier] + [graded.result.rows]
        return [shared_correlation(n, self.reference_rows) if n else self.rho for n in rows]

    def level(self, check: str, tests: int = 1) -> float:
        """The Z a window of one of the check's metrics must reach when the metric is tested on `tests`
        series (its p-values, or each scored category's rise and fall)."""
        share = self.shares[0] if describes_model(check) else self.shares[1]
        return sustained_level(self.config.expected_run_length, share, tests=tests)


def claim_for(graded: Graded, earlier: list[Earlier], batch_id: str, budget: Budget) -> dict[str, Any] | None:
    """The sustained claim of one graded metric over its history (the `details.sustained` record),
    or None when no window proves a change: on the result's category share scores when this batch
    and at least `MIN_EARLIER` earlier ones have them, else on its p-values."""
    points = [(e, point) for e in earlier if (point := e.point(graded)) is not None]
    with_shares = [(e, pt, s) for e, pt in points if (s := e.share_scores(graded)) is not None]
    if graded.share_scores and len(with_shares) >= MIN_EARLIER:
        return share_claim(graded, with_shares, batch_id, budget)
    p_now = graded.result.metrics[f"{graded.metric}_p"]
    assert p_now is not None
    ids = [e.batch_id for e, _ in points] + [batch_id]
    p = [pt[0] for _, pt in points] + [p_now]
    effects = [pt[1] for _, pt in points] + [excess(graded.evidence)]
    claim = strongest_claim(
        scores(p),
        np.asarray(effects, dtype=float),
        rho=budget.rhos(graded, [e for e, _ in points]),
        level=budget.level(graded.result.check),
        min_excess=min_excess(graded, budget),
    )
    return None if claim is None else record(graded.metric, claim, ids[-claim.window :])


def min_excess(graded: Graded, budget: Budget) -> float:
    """The mean excess effect a window must reach: `min_effect` times the metric's lowest threshold."""
    return budget.config.min_effect * abs(graded.result.thresholds[graded.metric][0])


def share_gates(graded: Graded, reference_share: float, budget: Budget) -> tuple[float, float]:
    """The mean change of a category's share a window must reach, up and down: the metric's
    `min_excess` itself for a change in share units (`drift.label`'s share change), or the share
    change that takes the category's PSI against the other rows to it for a divergence."""
    least = min_excess(graded, budget)
    metric_declared = declared(graded.result.check, graded.metric)
    if metric_declared is None or not metric_declared.divergence:
        return least, least
    return psi_share_change(reference_share, least, 1), psi_share_change(reference_share, least, -1)


def share_claim(
    graded: Graded,
    earlier: list[tuple[Earlier, tuple[float, float], Mapping[str, list[float]]]],
    batch_id: str,
    budget: Budget,
) -> dict[str, Any] | None:
    """The strongest claim over the categories this batch scores, each tested both ways over the
    earlier batches that scored it too (the level splits the metric's share over every category's
    rise and fall), its effect gate on the category's mean share change (`share_gates`)."""
    now = graded.share_scores
    tests = 2 * len(now)
    level = budget.level(graded.result.check, tests)
    best: tuple[Claim, int, str, list[str]] | None = None
    for category, (z_now, reference_share, share_now) in now.items():
        scored = [(e, s[category]) for e, _, s in earlier if category in s]
        series: list[tuple[str, float, float, float]] = [
            (e.batch_id, entry[0], entry[1], entry[2]) for e, entry in scored
        ] + [(batch_id, z_now, reference_share, share_now)]
        found = strongest_signed_claim(
            [z for _, z, _, _ in series],
            [share - reference_share for _, _, _, share in series],
            rho=budget.rhos(graded, [e for e, _ in scored]),
            level=level,
            min_change=share_gates(graded, reference_share, budget),
        )
        if found is not None and (best is None or found[0].z > best[0].z):
            best = (found[0], found[1], category, [b for b, _, _, _ in series])
    if best is None:
        return None
    claim, side, category, ids = best
    return {
        **record(graded.metric, claim, ids[-claim.window :]),
        "mean_excess": side * claim.mean_excess,
        "category": category,
        "direction": "rose" if side > 0 else "fell",
        "tests": tests,
    }


def record(metric: str, claim: Claim, batches: list[str]) -> dict[str, Any]:
    """`details.sustained`: the metric, the window and its batches (oldest first), Z_w and its level,
    the mean excess effect, and the φ and ρ of the window's variance (a claim on share scores adds
    the category, whether its share rose or fell, and the tests the metric's share was split over;
    its mean excess is the category's mean share change, signed)."""
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
    over = f"{budget_words(budget)} × {len(WINDOWS)} windows"
    if "category" in sustained:
        categories = sustained["tests"] // 2
        side = "above" if sustained["direction"] == "rose" else "below"
        what = f"the share of {subject} = {sustained['category']} stayed {side} its reference share"
        effect = f"mean change {sustained['mean_excess']:+.4g}"
        over += f" × 2 sides of {categories} categor{'y' if categories == 1 else 'ies'}"
    else:
        side = "above" if higher_is_worse else "below"
        what = f"{sustained['metric']} of {subject} stayed {side} its reference level"
        effect = f"mean excess {format_number(sustained['mean_excess'])}"
    runs = f"{budget.config.expected_run_length:g}"
    return (
        f"over the last {sustained['window']} batches, {what} ({effect}, z {sustained['z']:.1f} ≥ "
        f"{sustained['level']:.1f} for 1 false page per {runs} runs over {over})"
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
