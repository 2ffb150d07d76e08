"""A channel of your own: post each run's alert as `{"text": ...}` to a chat incoming webhook
(Mattermost, Rocket.Chat, Zulip's Slack-compatible endpoint). One module plus its registration
(docs/alerts.md): `register_channel` in code, or the `driftline.channels` entry point of a package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from driftline.tasks.alerts.alert import Alert
from driftline.tasks.alerts.channels import (
    Channel,
    Credentials,
    DeliveryError,
    Posted,
    post_json,
    register_channel,
    secret_url,
    url_secrets,
)
from driftline.tasks.alerts.config import ChannelConfig


class ChatConfig(ChannelConfig):
    """`kind: chat`: the webhook URL comes from an environment variable (it is a secret)."""

    kind: Literal["chat"] = "chat"
    webhook_url_env: str = Field("CHAT_WEBHOOK_URL", description="environment variable with the URL")
    username: str = Field("driftline", description="name the messages are posted under")


@register_channel
class ChatChannel(Channel):
    """Posts the alert's plain text to a chat webhook."""

    kind = "chat"
    config_model = ChatConfig

    def __init__(self, config: ChatConfig, url: str) -> None:
        self.config = config
        self.destination = config.destination
        self.url = url
        self.secrets = url_secrets(url)  # masked in every error

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        assert isinstance(config, ChatConfig)
        # unset or not https: ChannelUnavailable, and the alert stays queued until it is fixed
        url = secret_url(credentials, "chat webhook URL", config.webhook_url_env, None)
        return cls(config, url)

    @classmethod
    def render(cls, config: ChannelConfig | None, alert: Alert) -> dict[str, Any]:
        """What the outbox stores and `send` posts: from the entry's config alone, never a secret."""
        assert isinstance(config, ChatConfig)
        return {"text": alert.text, "username": config.username}

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        try:
            post_json(self.url, message, service="the chat webhook")
        except DeliveryError as exc:
            raise self.redacted(exc) from None
        return None
