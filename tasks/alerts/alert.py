"""One run's alert for one destination, channel-neutral: the incident changes routed there, the run's
results and its links, read as a title, a severity, one entry per change (headline and comparison
lines), likely causes, checks that could not run and warnings. Channels render it (`Channel.render`);
Slack's Block Kit rendering lives in `messages.py`, and every other rendering starts from this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from driftline.tasks.alerts.incidents import IncidentChange
from driftline.tasks.alerts.messages import (
    _alerting,
    _counts,
    _errors,
    _headline,
    _limited,
    build_message,
    metric_lines,
    run_worst,
    unescape,
)
from driftline.tasks.hindsight.premises import warning_lines
from driftline.tasks.views.diagnosis import diagnose


@dataclass(frozen=True)
class Alert:
    """The incident changes of one run sent to one destination, with the run's results and links."""

    monitor: str
    batch_id: str
    changes: Sequence[IncidentChange]
    results: Sequence[Mapping[str, Any]] = ()
    run_url: str | None = None
    report_url: str | None = None

    @cached_property
    def worst(self) -> str:
        """The run's worst severity (`none` ... `high`)."""
        return run_worst(self.changes, self.results)

    @property
    def title(self) -> str:
        """One line naming the monitor and its worst severity."""
        return f"{self.monitor}: worst severity {self.worst}"

    @property
    def summary(self) -> str:
        """The batch and what changed (`1 opened, 2 resolved`)."""
        return f"Batch {self.batch_id} · {_counts(self.changes)}"

    @cached_property
    def ordered(self) -> list[IncidentChange]:
        """Opened and escalated changes in rank order, then the resolved ones."""
        return [*_alerting(self.changes), *(c for c in self.changes if c.kind == "resolved")]

    def headline(self, change: IncidentChange) -> str:
        """One line saying what happened to a change's incident."""
        return _headline(change)

    def lines(self, change: IncidentChange) -> list[str]:
        """A change's comparison against the reference (or its metric values) and counts."""
        return metric_lines(change.result) if change.kind != "resolved" else []

    @cached_property
    def causes(self) -> list[str]:
        """The likely cause of each target with a fault signature (`tasks.views.diagnosis`)."""
        return _limited([d.line for d in diagnose(self.results)], "causes")

    @cached_property
    def errors(self) -> list[str]:
        """The checks that could not run, with their reasons."""
        return _limited(_errors(self.results), "errors")

    @cached_property
    def warnings(self) -> list[str]:
        """What labels said about the run's premises (`tasks.hindsight.premises`)."""
        return _limited(warning_lines(self.results), "warnings")

    @property
    def links(self) -> list[tuple[str, str]]:
        """(label, URL) of the run and its report, those known."""
        named = (("Open the run", self.run_url), ("Open the report", self.report_url))
        return [(label, url) for label, url in named if url]

    @cached_property
    def slack_message(self) -> dict[str, Any]:
        """The Slack rendering: `text` (a plain-text fallback, escaped for mrkdwn) and `blocks`."""
        return build_message(
            monitor=self.monitor,
            batch_id=self.batch_id,
            changes=self.changes,
            results=self.results,
            run_url=self.run_url,
            report_url=self.report_url,
        )

    @property
    def text(self) -> str:
        """The whole alert as plain text (the Slack message's fallback text, unescaped)."""
        return unescape(self.slack_message["text"])

    def to_dict(self) -> dict[str, Any]:
        """The alert as JSON-ready data (a webhook's body): every change, not only the first ones."""
        return {
            "monitor": self.monitor,
            "batch_id": self.batch_id,
            "worst_severity": self.worst,
            "title": self.title,
            "summary": self.summary,
            "changes": [
                {
                    "kind": c.kind,
                    "incident_id": c.incident_id,
                    "check": c.check,
                    "target": c.target,
                    "severity": c.severity,
                    "previous_severity": c.previous_severity,
                    "headline": self.headline(c),
                    "lines": self.lines(c),
                }
                for c in self.ordered
            ],
            "causes": self.causes,
            "errors": self.errors,
            "warnings": self.warnings,
            "run_url": self.run_url,
            "report_url": self.report_url,
            "text": self.text,
        }
