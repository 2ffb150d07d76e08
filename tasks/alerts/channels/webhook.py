"""The signed webhook channel: each run's alert as JSON (`Alert.to_dict`) POSTed to your own endpoint,
signed so the receiver can tell it comes from driftline and is fresh.

Headers: `X-Driftline-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>` with the
shared secret, and `X-Driftline-Delivery: <outbox key>` (the same on every retry of one message: a
receiver that remembers it processes each alert once). `verify_signature` is the receiver's check
(docs/alerts.md shows it standalone). The secret and a URL read from a secret are masked in errors.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_validator

from driftline.tasks.alerts.alert import Alert
from driftline.tasks.alerts.channels.base import (
    Channel,
    ChannelUnavailable,
    Credentials,
    DeliveryError,
    Posted,
    required_secret,
    secret_url,
)
from driftline.tasks.alerts.channels.http_post import post_json, url_secrets
from driftline.tasks.alerts.channels.registry import register_channel
from driftline.tasks.alerts.config import ChannelConfig, ChannelUrl
from driftline.tasks.tools.safe_text import header_value

SIGNATURE_HEADER = "X-Driftline-Signature"
DELIVERY_HEADER = "X-Driftline-Delivery"
TOLERANCE_SECONDS = 300
MIN_SECRET_LENGTH = 16
BODY_VERSION = 1


class WebhookConfig(ChannelConfig):
    """`kind: webhook`: the endpoint (`url`, or from the environment or a secret) and the signing secret."""

    kind: Literal["webhook"] = Field("webhook", description="`webhook`")
    url: ChannelUrl | None = Field(None, description="endpoint URL, when it holds no secret")
    url_env: str | None = Field(None, description="environment variable with the endpoint URL")
    url_block: str | None = Field(None, description="secret holding the endpoint URL")
    secret_env: str | None = Field(
        "DRIFTLINE_WEBHOOK_SECRET", description="environment variable with the signing secret"
    )
    secret_block: str | None = Field(None, description="secret holding the signing secret")

    @model_validator(mode="after")
    def _one_url(self) -> WebhookConfig:
        given = [name for name in ("url", "url_env", "url_block") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError("give exactly one of `url`, `url_env` and `url_block`")
        return self


def signature(secret: str, body: bytes, timestamp: int) -> str:
    """The `X-Driftline-Signature` value of `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify_signature(
    secret: str, body: bytes, header: str, *, now: float | None = None, tolerance: int = TOLERANCE_SECONDS
) -> bool:
    """True when `header` signs `body` with `secret` and was made within `tolerance` seconds of `now`."""
    try:
        fields = dict(part.split("=", 1) for part in header.split(","))
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, body, timestamp), header)


@register_channel
class WebhookChannel(Channel):
    """POSTs each run's alert as signed JSON."""

    kind = "webhook"
    config_model = WebhookConfig

    def __init__(self, url: str, secret: str, *, destination: str = kind, url_is_secret: bool = True) -> None:
        self.destination = destination
        self.url = url
        self._secret = secret
        self.secrets = (secret, *(url_secrets(url) if url_is_secret else ()))

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        assert isinstance(config, WebhookConfig)
        secret = required_secret(
            credentials, "webhook signing secret", config.secret_env, config.secret_block
        )
        if len(secret) < MIN_SECRET_LENGTH:
            raise ChannelUnavailable(
                f"the webhook signing secret is shorter than {MIN_SECRET_LENGTH} characters"
            )
        url = config.url or secret_url(credentials, "webhook URL", config.url_env, config.url_block)
        return cls(url, secret, destination=config.destination, url_is_secret=config.url is None)

    @classmethod
    def render(cls, config: ChannelConfig | None, alert: Alert) -> dict[str, Any]:
        return {"version": BODY_VERSION, **alert.to_dict()}

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        """POST the body, signed as it is sent; any 2xx answer is a delivery."""
        headers = {DELIVERY_HEADER: header_value(key)} if key else {}
        try:
            post_json(
                self.url,
                message,
                service="the webhook",
                headers=headers,
                sign=lambda body: {SIGNATURE_HEADER: signature(self._secret, body, int(time.time()))},
            )
        except DeliveryError as exc:
            raise self.redacted(exc) from None
        return None
