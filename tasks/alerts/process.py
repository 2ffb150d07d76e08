"""The alert step of a monitor run: incidents, one message, the outbox, delivery."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from driftline.tasks.alerts.config import AlertConfig
from driftline.tasks.alerts.delivery import build_sender
from driftline.tasks.alerts.incidents import IncidentChange, apply_incidents, newer_batch
from driftline.tasks.alerts.messages import build_message
from driftline.tasks.alerts.outbox import dedupe_key, enqueue, flush_outbox, unsent_elsewhere

CHANGE_FIELDS = ("kind", "incident_id", "check", "target", "severity", "previous_severity")


@dataclass
class AlertReport:
    """What the alert step did for one run.

    `queued` is 1 when this run's message was newly queued; `delivered` and `failed` count sends of
    this run's message and of older queued ones; `pending` is what stays queued for the destination.
    """

    destination: str | None
    changes: list[IncidentChange] = field(default_factory=list)
    queued: int = 0
    delivered: int = 0
    failed: int = 0
    pending: int = 0
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (changes without their full results)."""
        return {
            "destination": self.destination,
            "changes": [{k: getattr(c, k) for k in CHANGE_FIELDS} for c in self.changes],
            "queued": self.queued,
            "delivered": self.delivered,
            "failed": self.failed,
            "pending": self.pending,
            "reasons": list(self.reasons),
        }


def process_alerts(
    engine: Engine,
    *,
    monitor: str,
    batch_id: str,
    results: Sequence[Mapping[str, Any]],
    config: AlertConfig,
    token: str | None = None,
    run_url: str | None = None,
    stream: TextIO | None = None,
    batch_time: datetime | None = None,
) -> AlertReport:
    """Update incidents from one run's results, queue the run's alert, and send everything queued.

    Incident changes and the queued message commit together, so a crash cannot record an incident
    without its alert. Delivery happens after the commit: older unsent messages go first, and a
    message that cannot be sent stays queued for the next run. `token` is the resolved Slack bot
    token; `run_url` links the message to the run unless `alerts.slack.run_url` gives a template.
    `stream` receives console alerts (standard error by default). With `batch_time`, a batch older
    than the monitor's newest completed one leaves the incidents alone (it only updates history).
    """
    sender = build_sender(config, token, stream)
    destination = sender.destination if sender else None
    report = AlertReport(destination=destination)
    if config.slack is not None:
        run_url = config.slack.format_run_url(monitor, batch_id) or run_url
    with Session(engine) as session, session.begin():
        report.changes = apply_incidents(
            session,
            monitor=monitor,
            batch_id=batch_id,
            results=results,
            min_severity=config.min_severity,
            batch_time=batch_time,
        )
        stale = batch_time is not None and not report.changes
        newer = newer_batch(session, monitor, batch_id, batch_time) if stale else None
        if newer is not None:
            report.reasons.append(f"batch {batch_id} is older than batch {newer}: incidents left as they are")
        if report.changes and destination is not None:
            message = build_message(
                monitor=monitor, batch_id=batch_id, changes=report.changes, results=results, run_url=run_url
            )
            key = dedupe_key(monitor, batch_id, destination, report.changes)
            report.queued = int(
                enqueue(
                    session,
                    monitor=monitor,
                    batch_id=batch_id,
                    destination=destination,
                    payload=message,
                    key=key,
                )
            )
    if sender is None:
        if report.changes:
            report.reasons.append("no alert destination: configure alerts.slack or set alerts.console")
        return report
    flushed = flush_outbox(engine, sender, monitor=monitor)
    report.delivered, report.failed, report.pending = flushed.delivered, flushed.failed, flushed.pending
    report.reasons.extend(flushed.reasons)
    for other, count in unsent_elsewhere(engine, monitor, destination).items():
        report.reasons.append(
            f"{count} unsent alert(s) for {other} left queued: the monitor now alerts {destination}"
        )
    return report
