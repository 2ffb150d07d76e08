"""The PagerDuty channel (Events API v2): each incident change is one event, keyed by the incident.

An incident that opens or escalates sends `trigger`, and one that resolves sends `resolve`, all with the
same `dedup_key` (`driftline/<monitor>/incident/<id>`): PagerDuty keeps one alert per incident, a
repeated send (a rerun, a retry of a send whose answer was lost) changes nothing, and the alert closes
when the incident does (after `alerts.resolve_after` quiet runs). The routing key is read when the run
starts, sent only in the request body, and masked in every error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from driftline.tasks.alerts.alert import Alert
from driftline.tasks.alerts.channels.base import (
    Channel,
    Credentials,
    DeliveryError,
    Posted,
    required_secret,
)
from driftline.tasks.alerts.channels.http_post import post_json
from driftline.tasks.alerts.channels.registry import register_channel
from driftline.tasks.alerts.config import ChannelConfig, ChannelUrl
from driftline.tasks.alerts.messages import clip

EVENTS_URL = "https://events.pagerduty.com"
SUMMARY_LIMIT = 1024
DEDUP_KEY_LIMIT = 255
# driftline severities as PagerDuty's (critical, error, warning, info).
PAGER_SEVERITY = {"high": "critical", "medium": "error", "low": "warning", "none": "info"}


class PagerDutyConfig(ChannelConfig):
    """`kind: pagerduty`: an Events API v2 integration's routing key, from the environment or a secret."""

    kind: Literal["pagerduty"] = Field("pagerduty", description="`pagerduty`")
    routing_key_env: str | None = Field(
        "PAGERDUTY_ROUTING_KEY", description="environment variable with the integration's routing key"
    )
    routing_key_block: str | None = Field(
        None, description="secret holding the routing key (Prefect Secret block, Airflow connection)"
    )
    base_url: ChannelUrl = Field(EVENTS_URL, description="Events API base URL (`/v2/enqueue` is appended)")


def dedup_key(monitor: str, incident_id: int) -> str:
    """The incident's PagerDuty `dedup_key`: the same for every event of one incident."""
    key = f"driftline/{monitor}/incident/{incident_id}"
    return key if len(key) <= DEDUP_KEY_LIMIT else "driftline/" + hashlib.sha256(key.encode()).hexdigest()


@register_channel
class PagerDutyChannel(Channel):
    """Triggers and resolves one PagerDuty alert per incident."""

    kind = "pagerduty"
    config_model = PagerDutyConfig
    per_incident = True

    def __init__(self, routing_key: str, *, destination: str = kind, base_url: str = EVENTS_URL) -> None:
        self.destination = destination
        self.url = base_url.rstrip("/") + "/v2/enqueue"
        self.secrets = (routing_key, routing_key.strip())
        self._routing_key = routing_key.strip()

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        assert isinstance(config, PagerDutyConfig)
        key = required_secret(
            credentials, "PagerDuty routing key", config.routing_key_env, config.routing_key_block
        )
        return cls(key, destination=config.destination, base_url=config.base_url)

    @classmethod
    def render(cls, config: ChannelConfig | None, alert: Alert) -> dict[str, Any]:
        """The event of the alert's one incident change: `trigger` (open, escalate) or `resolve`."""
        (change,) = alert.changes
        key = dedup_key(alert.monitor, change.incident_id)
        if change.kind == "resolved":
            return {"event_action": "resolve", "dedup_key": key}
        details: dict[str, Any] = {"batch_id": alert.batch_id, "incident": change.kind}
        details.update(lines=alert.lines(change), causes=alert.causes, could_not_run=alert.errors)
        return {
            "event_action": "trigger",
            "dedup_key": key,
            "payload": {
                "summary": clip(f"{alert.monitor}: {alert.headline(change)}", SUMMARY_LIMIT),
                "source": f"driftline/{alert.monitor}",
                "severity": PAGER_SEVERITY.get(change.severity, "error"),
                "component": change.target,
                "group": alert.monitor,
                "class": change.check,
                "custom_details": details,
            },
            "links": [{"href": url, "text": label} for label, url in alert.links],
            "client": "driftline",
        }

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        """Enqueue the event with the routing key; PagerDuty answers 202 once it has it."""
        try:
            post_json(self.url, {"routing_key": self._routing_key, **message}, service="PagerDuty")
        except DeliveryError as exc:
            raise self.redacted(exc) from None
        return None
