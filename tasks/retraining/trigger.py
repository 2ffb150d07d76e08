"""When a run starts retraining: which failures may start it (`retrain.on`, by default the performance
family), and how often (`retrain.when`).

With `when: incident` (the default) a failure retrains through its open incident, once: the run that
first fails at `retrain.min_severity` while the incident is open requests it, and the incident keeps
`retrained: <batch>` in its details, so later runs of it (and re-runs of that batch) do not. When the
run has no incidents to go by (alerts off, as in a backfill, or not processed because the history
store was out of reach), or is asked to retrain whatever the batch's age (`backfill --retrain`), every
failing run requests it, as `when: every_run` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from driftline.checks import registry
from driftline.checks.result import CheckResult
from driftline.tasks.config.spec import MonitorSpec, RetrainSpec
from driftline.tasks.retraining.actions import RETRAIN_ALWAYS, RetrainRequest, older_batch_skip

if TYPE_CHECKING:
    from driftline.tasks.alerts.incidents import OpenIncident
    from driftline.tasks.run.context import RunContext
    from driftline.tasks.run.pipeline import RunSummary

MAX_FAILING = 10  # failing results a request carries


def retraining_failures(retrain: RetrainSpec, summary: RunSummary) -> list[CheckResult]:
    """The results at or above `retrain.min_severity` that may start retraining (`retrain.on`), worst
    first: by default model-level failures only (the performance family)."""
    failing = summary.failing(retrain.min_severity)
    return [
        r
        for r in failing
        if retrain.triggered_by(r.check, registry.family_of(r.check), registry.declaration(r.check).role)
    ]


def retrain_request(
    spec: MonitorSpec, summary: RunSummary, ref_hash: str, failing: Sequence[CheckResult]
) -> RetrainRequest:
    """What a retraining trigger is told: the monitor, the batch, the reference and the worst results
    that start it."""
    return RetrainRequest(
        monitor=spec.name,
        batch_id=summary.batch_id,
        run_key=ref_hash[:16],
        severity=summary.worst_severity,
        failing_checks=[
            {"check": r.check, "target": r.target, "severity": r.severity, "metrics": r.metrics}
            for r in failing[:MAX_FAILING]
        ],
        spec_path=str(spec.path) if spec.path else None,
    )


def reached_an_action(outcome: Mapping[str, Any]) -> bool:
    """False only when the request failed everywhere: an action reported an error and none started."""
    actions = [v for v in outcome.values() if isinstance(v, Mapping)]
    started = any("error" not in a for a in actions) or bool(
        outcome.get("flow_run_id") or outcome.get("event")
    )
    failed = any("error" in a for a in actions) or bool(outcome.get("error"))
    return started or not failed


def _named(result: CheckResult, incident: int | None = None) -> str:
    """`check[target] severity`, with its incident when it has one."""
    text = f"{result.check}[{result.target}] {result.severity}"
    return f"{text} (incident {incident})" if incident is not None else text


def start_retraining(
    context: RunContext, summary: RunSummary, batch_time: datetime, ref_hash: str
) -> dict[str, Any] | None:
    """Request retraining for a failing run as `retrain.when` says; None when nothing may start it.

    A request is logged in one line naming the monitor, the batch and the failures (with their
    incidents). Its outcome is returned; a skip says why.
    """
    spec, driver = context.spec, context.driver
    retrain = spec.retrain
    assert retrain is not None
    failing = retraining_failures(retrain, summary)
    if not failing:
        return None
    skipped = older_batch_skip(context, summary.batch_id, batch_time)
    if skipped is not None:
        return skipped
    per_run = _per_run(context, retrain, summary)
    found = None if per_run else _incidents_of(context, summary, failing)
    if found is None:
        chosen: list[tuple[CheckResult, int | None]] = [(r, None) for r in failing]
        how = f" ({per_run or 'every run: the incidents could not be read'})"
    else:
        due = [(r, found[(r.check, r.target)]) for r in failing if (r.check, r.target) in found]
        chosen = [(r, incident.id) for r, incident in due if incident.retrained is None]
        if not chosen:
            return {"skipped": _why_not(summary.batch_id, due)}
        how = ""
    named = ", ".join(_named(r, i) for r, i in chosen)
    driver.logger.info(
        "retraining requested for monitor %s batch %s: %s%s", spec.name, summary.batch_id, named, how
    )
    request = retrain_request(spec, summary, ref_hash, [r for r, _ in chosen])
    outcome = driver.retrain(spec, request, context.state_dir)
    ids = sorted({i for _, i in chosen if i is not None})
    if not ids:
        return outcome
    if reached_an_action(outcome):
        _mark(context, ids, summary.batch_id)
    return {**outcome, "incidents": ids}


def _why_not(batch_id: str, due: Sequence[tuple[CheckResult, OpenIncident]]) -> str:
    """Why a failing run does not retrain: each of its incidents already did, or it has none open."""
    if not due:
        return f"no open incident for the failures of batch {batch_id} (retraining goes once per incident)"
    done = sorted({(incident.id, incident.retrained) for _, incident in due})
    return "retraining already requested for " + ", ".join(f"incident {i} at batch {b}" for i, b in done)


def _per_run(context: RunContext, retrain: RetrainSpec, summary: RunSummary) -> str | None:
    """Why this run retrains without going by incidents, or None when it goes by them."""
    if retrain.when == "every_run":
        return "every run"
    if context.options.retrain == RETRAIN_ALWAYS:
        return "every failing batch: asked whatever its age"
    if "changes" not in summary.alerts:
        return "every run: no incidents for this run, its alerts were not processed"
    return None


def _incidents_of(
    context: RunContext, summary: RunSummary, failing: Sequence[CheckResult]
) -> dict[tuple[str, str], OpenIncident] | None:
    """The open incidents of the failures, or None when the store cannot be read (a failing model is
    retrained rather than missed)."""
    from sqlalchemy.orm import Session

    from driftline.tasks.alerts.incidents import open_incidents_of
    from driftline.tasks.history.db import connected_store

    try:
        with connected_store(context.database_url) as engine, Session(engine) as session:
            return open_incidents_of(session, context.spec.name, ((r.check, r.target) for r in failing))
    except Exception as exc:
        context.driver.logger.warning(
            "incidents not read, retraining per run: %s: %s", type(exc).__name__, exc
        )
        return None


def _mark(context: RunContext, incident_ids: Sequence[int], batch_id: str) -> None:
    """`mark_retrained` on the history store; a failure is logged (the next run may request it again)."""
    from sqlalchemy.orm import Session

    from driftline.tasks.alerts.incidents import mark_retrained
    from driftline.tasks.history.db import connected_store

    try:
        with connected_store(context.database_url) as engine, Session(engine) as session, session.begin():
            mark_retrained(session, incident_ids, batch_id)
    except Exception as exc:
        context.driver.logger.warning(
            "retraining not recorded on incidents %s: %s: %s", incident_ids, type(exc).__name__, exc
        )
