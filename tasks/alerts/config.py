"""The `alerts:` section of a monitor spec: when to alert and where to deliver.

Secrets never live in this model's output: the bot token is resolved by the flow (environment variable
or Prefect Secret block) and passed in, a literal webhook URL is a `SecretStr` (masked in `repr` and
JSON dumps), and validation errors do not echo the input.
"""

from __future__ import annotations

from string import Formatter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

AlertSeverity = Literal["low", "medium", "high"]

# Placeholders a `run_url` template may use.
RUN_URL_FIELDS = frozenset({"monitor", "batch_id"})

WEBHOOK_DESTINATION = "slack-webhook"
CONSOLE_DESTINATION = "console"


class SlackConfig(BaseModel):
    """Slack delivery: a bot token posting to `channel`, or an incoming webhook."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    channel: str | None = Field(None, description="channel name (`#ml-alerts`) or id for the bot")
    token_env: str | None = Field("SLACK_BOT_TOKEN", description="environment variable with the bot token")
    token_block: str | None = Field(None, description="Prefect Secret block holding the bot token")
    webhook_url_env: str | None = Field(None, description="environment variable with the webhook URL")
    webhook_url: SecretStr | None = Field(None, description="incoming webhook URL (prefer webhook_url_env)")
    base_url: str | None = Field(None, description="Slack Web API base URL; default https://slack.com/api/")
    run_url: str | None = Field(None, description="link to a run, with `{monitor}` and `{batch_id}` fields")

    @field_validator("run_url")
    @classmethod
    def _known_fields(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            names = {name for _, name, _, _ in Formatter().parse(value) if name is not None}
        except ValueError as exc:
            raise ValueError(f"malformed template: {exc}") from None
        unknown = names - RUN_URL_FIELDS
        if unknown:
            raise ValueError(
                f"unknown placeholder(s) {sorted(unknown)}; use {{monitor}} and {{batch_id}} only"
            )
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator("webhook_url")
    @classmethod
    def _http_webhook(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _one_destination(self) -> SlackConfig:
        webhook = self.webhook_url is not None or self.webhook_url_env is not None
        if webhook == (self.channel is not None):
            raise ValueError(
                "give either `channel` (posted with the bot token) or `webhook_url`/`webhook_url_env`"
            )
        if self.webhook_url is not None and self.webhook_url_env is not None:
            raise ValueError("give only one of `webhook_url` and `webhook_url_env`")
        return self

    @property
    def uses_webhook(self) -> bool:
        """True when messages go to an incoming webhook rather than through the bot."""
        return self.channel is None

    @property
    def destination(self) -> str:
        """Outbox destination label; never contains a secret."""
        return WEBHOOK_DESTINATION if self.uses_webhook else f"slack:{self.channel}"

    @property
    def token_source(self) -> str:
        """Where the bot token comes from, for error messages."""
        if self.token_block:
            return f"Prefect Secret block {self.token_block!r}"
        if self.token_env:
            return f"environment variable {self.token_env}"
        return "the `token` argument"

    def format_run_url(self, monitor: str, batch_id: str) -> str | None:
        """The configured run link for one batch, or None without a template."""
        return self.run_url.format(monitor=monitor, batch_id=batch_id) if self.run_url else None


class AlertConfig(BaseModel):
    """When a run alerts (`min_severity`) and where the alert goes (Slack, else the console)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    min_severity: AlertSeverity = "medium"
    slack: SlackConfig | None = None
    console: bool = Field(True, description="print alerts when no Slack destination is configured")

    @property
    def destination(self) -> str | None:
        """Where this monitor's alerts go: a Slack label, "console", or None for nowhere."""
        if self.slack is not None:
            return self.slack.destination
        return CONSOLE_DESTINATION if self.console else None
