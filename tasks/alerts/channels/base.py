"""What every alert channel is: a `Channel` renders a run's alert into its own message and delivers it;
the outbox stores the message first and retries it until the channel accepts it.

A channel declares its `kind` (the `kind:` of an `alerts.channels` entry), the pydantic model of that
entry (`config_model`, a `ChannelConfig` subclass) and how it is built from it (`from_config`, given
`Credentials` to read its secrets). Delivery errors are `DeliveryError`s whose text never holds a
secret: every credential a channel holds is listed in `secrets` and `redact` masks them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from driftline.tasks.alerts.config import ChannelConfig, channel_url_problem

if TYPE_CHECKING:
    from driftline.tasks.alerts.alert import Alert

REDACTED = "[redacted]"


@dataclass(frozen=True)
class Posted:
    """Where a channel put a message: the channel id and the message's id (a Slack thread's `ts`)."""

    channel: str
    ts: str


class DeliveryError(RuntimeError):
    """A send that failed; `affects_all` is False when only this message is at fault, `answered` is
    True when the message was certainly not delivered (the service answered, or refused the connection)."""

    def __init__(self, message: str, *, affects_all: bool = True, answered: bool = False) -> None:
        super().__init__(message)
        self.affects_all = affects_all
        self.answered = answered


@dataclass(frozen=True)
class Credentials:
    """Where channels find their secrets: environment variables, and the engine's secret store
    (a Prefect Secret block, an Airflow connection) through `lookup`."""

    lookup: Callable[[str], str | None] | None = None

    def get(self, env: str | None, secret: str | None) -> str | None:
        """The secret named `secret` in the engine's store when given, else environment variable `env`."""
        if secret:
            return self.lookup(secret) if self.lookup is not None else None
        return os.environ.get(env) if env else None

    @staticmethod
    def source(env: str | None, secret: str | None) -> str:
        """Where `get` looks, for error messages (a name, never a value)."""
        if secret:
            return f"secret {secret!r}"
        return f"environment variable {env}" if env else "nowhere (no environment variable given)"


class Channel:
    """Delivers alert messages to one destination; `send` raises `DeliveryError` on failure.

    `threads`: replies go into the thread an incident's first message started, whose parent is edited
    (`update`) to the thread's state. `per_incident`: every incident change is a message of its own
    (a pager keyed by incident). Otherwise a run's changes are one message.
    """

    kind: ClassVar[str] = ""
    config_model: ClassVar[type[ChannelConfig]] = ChannelConfig
    threads: ClassVar[bool] = False
    per_incident: ClassVar[bool] = False
    destination: str
    config: ChannelConfig | None = None
    secrets: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: ChannelConfig, credentials: Credentials) -> Channel:
        """The channel an `alerts.channels` entry describes; raises `ChannelUnavailable` when a
        credential is missing or refused (its messages queue until it is there)."""
        raise NotImplementedError

    @classmethod
    def render(cls, config: ChannelConfig | None, alert: Alert) -> dict[str, Any]:
        """The message this channel sends for `alert` under `config` (stored as JSON in the outbox,
        so never a secret; it depends on the config alone, so a message queued while a credential
        is missing is the one sent once it is there). By default the Slack rendering: `text`, a
        plain-text version, and Block Kit `blocks`."""
        return dict(alert.slack_message)

    def message(self, alert: Alert) -> dict[str, Any]:
        """`render` under this channel's own config."""
        return type(self).render(self.config, alert)

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        """Deliver one rendered message, tagged with its outbox `key` where the service can keep it (so a
        repeated send can be recognised), as a reply in `thread` where the channel threads; returns
        where it landed when known."""
        raise NotImplementedError

    def update(self, thread: Posted, message: Mapping[str, Any]) -> None:
        """Replace a thread's parent message with `message`; channels that cannot edit ignore it."""

    def already_posted(self, key: str, since: datetime, thread: Posted | None = None) -> Posted | bool | None:
        """Whether a message tagged `key` was delivered since `since` (in `thread`, when given): where it
        is when found, False when it is not there, None when this channel cannot tell (the caller then
        sends again)."""
        return None

    def redact(self, text: str) -> str:
        """`text` with every secret this channel holds replaced by `[redacted]`."""
        for secret in sorted(filter(None, self.secrets), key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return text

    def redacted(self, error: DeliveryError) -> DeliveryError:
        """`error` with every secret this channel holds masked, keeping what it says about delivery."""
        return DeliveryError(self.redact(str(error)), affects_all=error.affects_all, answered=error.answered)


class UnavailableChannel(Channel):
    """Stands in for a destination that lacks its credentials: its messages are rendered as the real
    channel `renders` them (and queue), and every send fails with `problem`."""

    def __init__(
        self,
        destination: str,
        problem: str,
        *,
        config: ChannelConfig | None = None,
        renders: type[Channel] = Channel,
    ) -> None:
        self.destination = destination
        self.problem = problem
        self.config = config
        self.renders = renders
        self.per_incident = renders.per_incident  # type: ignore[misc]  # split as the real channel does

    def message(self, alert: Alert) -> dict[str, Any]:
        return self.renders.render(self.config, alert)

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        raise DeliveryError(self.problem)


def unavailable(config: ChannelConfig, problem: str) -> Channel:
    """The stand-in channel of an `alerts.channels` entry that cannot send: rendering as its kind."""
    from driftline.tasks.alerts.channels.registry import channel_class

    return UnavailableChannel(config.destination, problem, config=config, renders=channel_class(config.kind))


class ChannelUnavailable(RuntimeError):
    """Raised by `from_config` when a channel cannot send yet (a credential unset or refused): the
    channel's messages still queue, and every send fails with this message until it is fixed."""


def required_secret(credentials: Credentials, what: str, env: str | None, secret: str | None) -> str:
    """The secret `what` (a key, a password), or `ChannelUnavailable` naming where it was expected."""
    value = credentials.get(env, secret)
    if not value:
        raise ChannelUnavailable(f"no {what} (expected from {Credentials.source(env, secret)})")
    return value


def secret_url(credentials: Credentials, what: str, env: str | None, secret: str | None) -> str:
    """A URL read as a secret, callable by a channel (`channel_url_problem`), or `ChannelUnavailable`."""
    url = required_secret(credentials, what, env, secret)
    if problem := channel_url_problem(url):
        raise ChannelUnavailable(f"the {what} {problem}")
    return url
