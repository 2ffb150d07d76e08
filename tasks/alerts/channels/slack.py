"""The Slack channel: the bot (Web API), which threads, and an incoming webhook, which posts flat.

`alerts.slack` (and each of its `routes`) is read as one channel of kind `slack`; an `alerts.channels`
entry of kind `slack` is another. Slack clients retry connection errors, 429 answers (after
`Retry-After`) and 500/503 answers once before a send counts as failed; the outbox keeps failed
messages for the next run. A failure is a `DeliveryError` whose message names the problem (a rejected
token, an unknown channel, an unreachable host) and never contains the token or the webhook URL.

The bot sender tags each message with its outbox dedupe key (Slack message metadata), so a send whose
outcome is unknown (the process died, or the connection broke before Slack answered) can be looked up
in the channel's history (or the thread's replies) before it is sent again. Webhooks cannot read
history: for them a send cut off mid-way may post twice.

Only the bot threads: it returns where each message landed (`Posted`: channel id and `ts`), posts a
reply with `thread_ts`, and edits a thread's parent with `chat.update`. A webhook cannot name a
thread or edit a message, so webhook alerts are posted flat, one message a run.
"""

from __future__ import annotations

import http.client
import logging
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.webhook import WebhookClient

from driftline.tasks.alerts.channels.base import (
    Channel,
    Credentials,
    DeliveryError,
    Posted,
    UnavailableChannel,
)
from driftline.tasks.alerts.channels.http_post import host_of, never_connected
from driftline.tasks.alerts.channels.registry import register_channel
from driftline.tasks.alerts.config import WEBHOOK_DESTINATION, ChannelConfig, SlackConfig, http_url_problem
from driftline.tasks.alerts.messages import clip

SLACK_API_URL = "https://slack.com/api/"
TIMEOUT_SECONDS = 10

# Slack error codes, grouped by what the user has to fix.
CREDENTIAL_ERRORS = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "invalid_token",
        "no_service",
        "no_active_hooks",
        "no_team",
        "team_disabled",
    }
)
PERMISSION_ERRORS = frozenset({"missing_scope", "no_permission", "not_allowed_token_type"})
CHANNEL_ERRORS = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "channel_is_archived",
        "action_prohibited",
        "posting_to_general_channel_denied",
        "restricted_action",
        "user_not_found",
    }
)
# Errors caused by one message's content: the next queued message may still go through.
MESSAGE_ERRORS = frozenset(
    {
        "invalid_blocks",
        "invalid_blocks_format",
        "msg_too_long",
        "msg_blocks_too_long",
        "no_text",
        "too_many_attachments",
        "invalid_payload",
        "invalid_arguments",
    }
)
NETWORK_ERRORS = (OSError, http.client.HTTPException, SlackClientError, ValueError)

# slack-sdk's webhook client logs the full URL, a secret, at debug and info levels: keep its logger
# to warnings, whatever the application's logging level.
WEBHOOK_LOGGER = logging.getLogger("driftline.tasks.alerts.webhook")
WEBHOOK_LOGGER.setLevel(logging.WARNING)
logger = logging.getLogger(__name__)

# Message metadata that carries an outbox dedupe key through Slack and back.
METADATA_EVENT = "driftline_alert"
# How far before a send's start its message is looked for (clocks of two machines disagree).
CLOCK_SLACK = timedelta(minutes=5)
CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{6,}$")


def retry_handlers() -> list[RetryHandler]:
    """Retry connection errors (slack-sdk's default), rate limits and server errors."""
    return [ConnectionErrorRetryHandler(), RateLimitErrorRetryHandler(), ServerErrorRetryHandler()]


def slack_problem(code: str | None, status: int, *, credential: str, channel: str) -> DeliveryError:
    """A `DeliveryError` explaining a Slack error code; `credential` and `channel` name what to check."""
    label = code or "no error code"
    if code in CREDENTIAL_ERRORS:
        return DeliveryError(f"Slack rejected {credential} ({label}): check or replace it", answered=True)
    if code in PERMISSION_ERRORS:
        problem = f"Slack refused {credential} ({label}): the app needs the chat:write scope"
        return DeliveryError(problem, answered=True)
    if code in CHANNEL_ERRORS:
        problem = (
            f"Slack cannot post to {channel} ({label}): check the channel name and that the app is in it"
        )
        return DeliveryError(problem, answered=True)
    if code in MESSAGE_ERRORS:
        return DeliveryError(f"Slack rejected the message ({label})", affects_all=False, answered=True)
    return DeliveryError(f"Slack answered HTTP {status} ({label})", answered=True)


@register_channel
class SlackChannel(Channel):
    """Slack: a bot posting to `channel` (threads, edits), or an incoming webhook; the shared error
    handling of both clients (network failures and redaction)."""

    kind = "slack"
    config_model = SlackConfig
    host: str

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        """The bot or webhook sender of a `kind: slack` entry, its secret read through `credentials`."""
        assert isinstance(config, SlackConfig)
        token = None if config.uses_webhook else credentials.get(config.token_env, config.token_block)
        return slack_sender(config, token, credentials)

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        try:
            return self._post(message, key, thread)
        except DeliveryError as exc:
            raise self.redacted(exc) from None
        except NETWORK_ERRORS as exc:
            problem = f"cannot reach Slack at {self.host}: {type(exc).__name__}: {exc}"
            raise DeliveryError(self.redact(problem), answered=never_connected(exc)) from None

    def _post(self, message: Mapping[str, Any], key: str | None, thread: Posted | None) -> Posted | None:
        raise NotImplementedError


class SlackBotSender(SlackChannel):
    """Posts with `chat.postMessage` using a bot token; replies in threads and edits their parents."""

    threads = True

    def __init__(
        self,
        *,
        token: str,
        channel: str,
        base_url: str | None = None,
        credential: str = "the bot token",
        timeout: int = TIMEOUT_SECONDS,
    ) -> None:
        url = base_url or SLACK_API_URL
        self.destination = f"slack:{channel}"
        self.channel = channel
        self.host = host_of(url)
        self.secrets = (token, token.strip())
        self._credential = credential
        self._client = WebClient(token=token, base_url=url, timeout=timeout, retry_handlers=retry_handlers())

    def _post(self, message: Mapping[str, Any], key: str | None, thread: Posted | None) -> Posted | None:
        metadata = {"event_type": METADATA_EVENT, "event_payload": {"dedupe_key": key}} if key else None
        where: dict[str, Any] = (
            {"channel": thread.channel, "thread_ts": thread.ts} if thread else {"channel": self.channel}
        )
        try:
            response = self._client.chat_postMessage(
                text=message["text"], blocks=message["blocks"], metadata=metadata, **where
            )
        except SlackApiError as exc:
            raise self._problem(exc) from None
        channel, ts = response.get("channel"), response.get("ts")
        return Posted(str(channel), str(ts)) if channel and ts else None

    def update(self, thread: Posted, message: Mapping[str, Any]) -> None:
        """`chat.update` of the thread's parent; raises `DeliveryError` (redacted) when it fails."""
        try:
            self._client.chat_update(
                channel=thread.channel, ts=thread.ts, text=message["text"], blocks=message["blocks"]
            )
        except SlackApiError as exc:
            raise DeliveryError(self.redact(str(self._problem(exc))), answered=True) from None
        except NETWORK_ERRORS as exc:
            problem = f"cannot reach Slack at {self.host}: {type(exc).__name__}: {exc}"
            raise DeliveryError(self.redact(problem), answered=never_connected(exc)) from None

    def _problem(self, exc: SlackApiError) -> DeliveryError:
        code = exc.response.get("error") if isinstance(exc.response.data, dict) else None
        code = clip(code, 200) if code else None
        return slack_problem(
            code, exc.response.status_code, credential=self._credential, channel=self.channel
        )

    def already_posted(self, key: str, since: datetime, thread: Posted | None = None) -> Posted | bool | None:
        """Look for the message tagged `key` in the channel's history since `since`, or among the
        replies of `thread` (needs the `channels:history` scope, and `channels:read` when the
        channel is given by name)."""
        oldest = f"{(since - CLOCK_SLACK).timestamp():.6f}"
        try:
            if thread is not None:
                channel = thread.channel
                pages = self._client.conversations_replies(
                    channel=channel, ts=thread.ts, oldest=oldest, include_all_metadata=True, limit=200
                )
            else:
                channel = self._channel_id()
                pages = self._client.conversations_history(
                    channel=channel, oldest=oldest, include_all_metadata=True, limit=200
                )
            for page in pages:
                for message in page.get("messages") or []:
                    if _tagged(message, key):
                        return Posted(channel, str(message["ts"])) if message.get("ts") else True
            return False
        except SlackApiError as exc:
            problem = self._problem(exc)
        except DeliveryError as exc:
            problem = exc
        except NETWORK_ERRORS as exc:
            problem = DeliveryError(f"cannot reach Slack at {self.host}: {type(exc).__name__}: {exc}")
        logger.warning(
            "cannot tell whether an interrupted alert was posted, sending it again: %s",
            self.redact(str(problem)),
        )
        return None

    def _channel_id(self) -> str:
        """The channel's id (history is read by id): the configured value, or looked up by name."""
        name = self.channel.lstrip("#")
        if CHANNEL_ID.match(name):
            return name
        for page in self._client.conversations_list(types="public_channel,private_channel", limit=1000):
            for channel in page.get("channels") or []:
                if channel.get("name") == name:
                    return str(channel["id"])
        raise DeliveryError(f"no channel named {self.channel} is visible to the app")


class SlackWebhookSender(SlackChannel):
    """Posts to an incoming webhook; the URL is a secret and never appears in errors."""

    def __init__(
        self, url: str, *, credential: str = "the webhook URL", timeout: int = TIMEOUT_SECONDS
    ) -> None:
        self.destination = WEBHOOK_DESTINATION
        self.host = host_of(url)
        self.secrets = (url, urlsplit(url).path) if len(urlsplit(url).path) > 1 else (url,)
        self._credential = credential
        self._client = WebhookClient(
            url, timeout=timeout, retry_handlers=retry_handlers(), logger=WEBHOOK_LOGGER
        )

    def _post(self, message: Mapping[str, Any], key: str | None, thread: Posted | None) -> Posted | None:
        response = self._client.send(text=message["text"], blocks=message["blocks"])
        if response.status_code != 200:
            code = clip((response.body or "").strip(), 200) or None
            raise slack_problem(
                code, response.status_code, credential=self._credential, channel="the webhook's channel"
            )
        return None


def _webhook_sender(slack: SlackConfig, credentials: Credentials) -> Channel:
    if slack.webhook_url is not None:
        return SlackWebhookSender(
            slack.webhook_url.get_secret_value(), credential="the webhook URL in alerts.slack.webhook_url"
        )
    env = slack.webhook_url_env
    url = credentials.get(env, None)
    if not url:
        problem = f"no Slack webhook URL: environment variable {env} is unset"
        return UnavailableChannel(slack.destination, problem)
    if refused := http_url_problem(url):
        return UnavailableChannel(
            slack.destination, f"the Slack webhook URL in environment variable {env} {refused}"
        )
    return SlackWebhookSender(url, credential=f"the webhook URL in environment variable {env}")


def slack_sender(
    slack: SlackConfig, token: str | None, credentials: Credentials, channel: str | None = None
) -> Channel:
    """The sender of a Slack config: its webhook, else the bot posting with `token` to `channel` (a
    route's) or the config's own; an `UnavailableChannel` naming the missing credential otherwise, so
    messages still queue and go out once it is there."""
    if slack.uses_webhook:
        return _webhook_sender(slack, credentials)
    target = channel or slack.channel
    assert target is not None
    if not token:
        problem = f"no Slack bot token (expected from {slack.token_source})"
        return UnavailableChannel(f"slack:{target}", problem)
    return SlackBotSender(
        token=token,
        channel=target,
        base_url=slack.base_url,
        credential=f"the bot token from {slack.token_source}",
    )


def _tagged(message: Mapping[str, Any], key: str) -> bool:
    """True when a history message carries the metadata of the alert with dedupe key `key`."""
    metadata = message.get("metadata") or {}
    payload = metadata.get("event_payload") or {}
    return metadata.get("event_type") == METADATA_EVENT and payload.get("dedupe_key") == key
