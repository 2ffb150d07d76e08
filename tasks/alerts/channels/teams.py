"""The Microsoft Teams channel: an incoming webhook (a Workflows or connector URL) receiving the alert
as an Adaptive Card. The webhook URL is a secret: read from the environment or a secret when the run
starts, validated (https, or http to this machine only), and masked in every error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from driftline.tasks.alerts.alert import Alert
from driftline.tasks.alerts.channels.base import (
    Channel,
    Credentials,
    DeliveryError,
    Posted,
    secret_url,
)
from driftline.tasks.alerts.channels.http_post import post_json, url_secrets
from driftline.tasks.alerts.channels.registry import register_channel
from driftline.tasks.alerts.config import ChannelConfig
from driftline.tasks.alerts.messages import MAX_LISTED

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
# Adaptive Card text colours of the run's worst severity.
COLOR = {"high": "Attention", "medium": "Warning", "low": "Accent", "none": "Good"}
# What Adaptive Card markdown (a CommonMark subset) gives a meaning to inside a line: emphasis, links,
# code, strike-through, HTML; escaped (CommonMark backslash escapes) in every text the card shows.
MARKDOWN = re.compile(r"([\\`*_\[\]~<>])")


class TeamsConfig(ChannelConfig):
    """`kind: teams`: the incoming webhook URL, from the environment or a secret."""

    kind: Literal["teams"] = Field("teams", description="`teams`")
    webhook_url_env: str | None = Field("TEAMS_WEBHOOK_URL", description="environment variable with the URL")
    webhook_url_block: str | None = Field(
        None, description="secret holding the URL (Prefect Secret block, Airflow connection)"
    )


def plain(text: str) -> str:
    """`text` with every character Adaptive Card markdown acts on backslash-escaped, so a column name
    or a reason from the data shows as written and cannot become a link or emphasis."""
    return MARKDOWN.sub(r"\\\1", text)


def _text(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": plain(text), "wrap": True, **style}


def _section(heading: str, lines: list[str]) -> list[dict[str, Any]]:
    """A bold heading and its lines as one text block, a line each (nothing when there are no lines)."""
    if not lines:
        return []
    return [_text(heading, weight="Bolder", spacing="Medium"), _text("\n".join(lines))]


def adaptive_card(alert: Alert) -> dict[str, Any]:
    """The alert as an Adaptive Card (version 1.4): title, batch, likely causes, the changes (at most
    `MAX_LISTED`, each with its comparison lines), checks that could not run, warnings, links."""
    body = [
        _text(alert.title, size="Large", weight="Bolder", color=COLOR.get(alert.worst, "Default")),
        _text(alert.summary, isSubtle=True, spacing="None"),
        *_section("Likely cause", alert.causes),
    ]
    for change in alert.ordered[:MAX_LISTED]:
        body.append(_text(alert.headline(change), weight="Bolder", spacing="Medium"))
        if lines := alert.lines(change):
            body.append(_text("\n".join(lines), spacing="Small", fontType="Monospace"))
    if len(alert.ordered) > MAX_LISTED:
        body.append(_text(f"…and {len(alert.ordered) - MAX_LISTED} more", isSubtle=True))
    body += _section("Could not run", alert.errors) + _section("Warnings", alert.warnings)
    card = {"$schema": CARD_SCHEMA, "type": "AdaptiveCard", "version": "1.4", "body": body}
    if alert.links:
        card["actions"] = [
            {"type": "Action.OpenUrl", "title": label, "url": url} for label, url in alert.links
        ]
    return {
        "type": "message",
        "attachments": [{"contentType": CARD_TYPE, "contentUrl": None, "content": card}],
    }


@register_channel
class TeamsChannel(Channel):
    """Posts each run's alert to a Teams incoming webhook as an Adaptive Card."""

    kind = "teams"
    config_model = TeamsConfig

    def __init__(self, url: str, *, destination: str = kind) -> None:
        self.destination = destination
        self.url = url
        self.secrets = url_secrets(url)

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        assert isinstance(config, TeamsConfig)
        url = secret_url(credentials, "Teams webhook URL", config.webhook_url_env, config.webhook_url_block)
        return cls(url, destination=config.destination)

    @classmethod
    def render(cls, config: ChannelConfig | None, alert: Alert) -> dict[str, Any]:
        return adaptive_card(alert)

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        """POST the card; Teams answers 200 (connectors) or 202 (Workflows) once it has it."""
        try:
            post_json(self.url, message, service="Teams")
        except DeliveryError as exc:
            raise self.redacted(exc) from None
        return None
