"""The alert step of a monitor run: baseline rules, incidents, messages per destination, the outbox.

For each destination (the default one, every matching route and every matching channel) a run's
unmuted incident changes become messages, each rendered by the destination's channel from one
channel-neutral `Alert`: on a threading channel (the Slack bot), one new message for incidents without
a thread there (it starts their threads) and one reply per existing thread; on a per-incident channel
(PagerDuty), one message per change; elsewhere (webhooks, Teams, email, the console), one message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from driftline.tasks.alerts.alert import Alert
from driftline.tasks.alerts.channels import Channel
from driftline.tasks.alerts.config import AlertConfig
from driftline.tasks.alerts.delivery import build_senders
from driftline.tasks.alerts.incidents import IncidentChange, apply_incidents, newer_batch
from driftline.tasks.alerts.messages import build_thread_state
from driftline.tasks.alerts.mutes import active_mutes
from driftline.tasks.alerts.outbox import dedupe_key, enqueue, flush_outbox, unsent_elsewhere
from driftline.tasks.alerts.rules import evaluate_rules
from driftline.tasks.alerts.threads import Part, plan_parts, start_threads, thread_incidents

CHANGE_FIELDS = ("kind", "incident_id", "check", "target", "severity", "previous_severity")


@dataclass
class AlertReport:
    """What the alert step did for one run.

    `queued` counts this run's newly queued messages; `delivered` and `failed` count sends of them and
    of older queued ones; `pending` is what stays queued for the run's destinations; `muted` counts
    changes held back by a mute; `destinations` lists where this monitor alerts.
    """

    destination: str | None
    changes: list[IncidentChange] = field(default_factory=list)
    queued: int = 0
    delivered: int = 0
    failed: int = 0
    pending: int = 0
    muted: int = 0
    destinations: list[str] = field(default_factory=list)
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
            "muted": self.muted,
            "destinations": list(self.destinations),
            "reasons": list(self.reasons),
        }


def _watched_check(change: IncidentChange) -> str:
    """The check a change is about: a rule incident counts as the check its rule watches."""
    rule = (change.result.get("details") or {}).get("rule") or {}
    return str(rule.get("check") or change.check)


def _routing_severity(change: IncidentChange) -> str:
    """A resolution goes where the incident's worst severity went; other changes by their severity."""
    return (change.previous_severity or change.severity) if change.kind == "resolved" else change.severity


def _thread_state(
    session: Session,
    monitor: str,
    destination: str,
    key: str,
    batch_id: str,
    results: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The parent message of thread `key`, rewritten to its incidents' current state and the likely
    causes the run's `results` give."""
    incidents = [
        {
            "check": i.check,
            "target": i.target,
            "status": i.status,
            "severity": i.severity,
            "last_severity": (i.details or {}).get("last_severity"),
            "opened_batch": i.opened_batch,
            "last_batch": i.last_batch,
        }
        for i in thread_incidents(session, destination, key)
    ]
    return build_thread_state(monitor=monitor, incidents=incidents, last_batch=batch_id, results=results)


def _queue_messages(
    session: Session,
    *,
    monitor: str,
    batch_id: str,
    destination: str,
    sender: Channel,
    changes: list[IncidentChange],
    results: Sequence[Mapping[str, Any]],
    links: dict[str, str | None],
) -> int:
    """Queue this run's messages for one destination; returns how many were newly queued."""
    if sender.threads:
        parts = plan_parts(session, destination, changes)
    elif sender.per_incident:
        parts = [Part(None, [change]) for change in changes]
    else:
        parts = [Part(None, changes)]
    queued = 0
    for part in parts:
        message = sender.message(Alert(monitor, batch_id, part.changes, results, **links))
        key = dedupe_key(monitor, batch_id, destination, part.changes, part.thread_key)
        if part.thread_key is not None:
            message["parent"] = _thread_state(
                session, monitor, destination, part.thread_key, batch_id, results
            )
        fresh = enqueue(
            session,
            monitor=monitor,
            batch_id=batch_id,
            destination=destination,
            payload=message,
            key=key,
            thread_key=part.thread_key,
        )
        if fresh and sender.threads and part.thread_key is None:
            start_threads(session, destination, key, part.changes)
        queued += int(fresh)
    return queued


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
    secrets: Callable[[str], str | None] | None = None,
) -> AlertReport:
    """Evaluate the baseline rules, update incidents, queue the run's messages, send everything queued.

    Incident changes and the queued messages commit together, so a crash cannot record an incident
    without its alert. Delivery happens after the commit: older unsent messages go first (a reply
    waits for its thread's parent), and a message that cannot be sent stays queued for the next run.
    `token` is the resolved Slack bot token; `run_url` links the message to the run unless
    `alerts.run_url` gives a template. `stream` receives console alerts (standard error by
    default). With `batch_time`, a batch older than the monitor's newest completed one leaves the
    incidents alone (it only updates history). `secrets` looks up the secrets channels name (the
    engine's store: `Driver.secret`). Rules read the stored history, so the run's results must be
    stored first.
    """
    senders = build_senders(config, token, stream, secrets)
    report = AlertReport(destination=config.destination if senders else None, destinations=list(senders))
    links = {
        "run_url": config.format_run_url(monitor, batch_id) or run_url,
        "report_url": config.format_report_url(monitor, batch_id),
    }
    with Session(engine) as session, session.begin():
        rule_results = evaluate_rules(
            session, monitor=monitor, batch_id=batch_id, rules=config.rules, batch_time=batch_time
        )
        everything = [*results, *rule_results]
        newer = newer_batch(session, monitor, batch_id, batch_time) if batch_time is not None else None
        if newer is not None:
            report.reasons.append(f"batch {batch_id} is older than batch {newer}: incidents left as they are")
        else:
            report.changes = apply_incidents(
                session,
                monitor=monitor,
                batch_id=batch_id,
                results=everything,
                min_severity=config.min_severity,
                resolve_after=config.resolve_after,
            )
        if report.changes and senders:
            send, held = active_mutes(session, monitor).split(report.changes)
            report.muted = len(held)
            for destination, sender in senders.items():
                routed = [
                    c
                    for c in send
                    if destination in config.destinations_for(_watched_check(c), _routing_severity(c))
                ]
                if routed:
                    report.queued += _queue_messages(
                        session,
                        monitor=monitor,
                        batch_id=batch_id,
                        destination=destination,
                        sender=sender,
                        changes=routed,
                        results=everything,
                        links=links,
                    )
    if not senders:
        if report.changes:
            report.reasons.append("no alert destination: configure alerts.slack or set alerts.console")
        return report
    for sender in senders.values():
        flushed = flush_outbox(engine, sender, monitor=monitor)
        report.delivered += flushed.delivered
        report.failed += flushed.failed
        report.pending += flushed.pending
        report.reasons.extend(flushed.reasons)
    for other, count in unsent_elsewhere(engine, monitor, report.destination).items():
        if other in senders:
            continue
        report.reasons.append(
            f"{count} unsent alert(s) for {other} left queued: the monitor now alerts {', '.join(senders)}"
        )
    return report
