"""The channels of a monitor's alert config: `alerts.slack` and its routes (read as Slack channels),
every `alerts.channels` entry (built by the channel its `kind` registers), and the console.

A channel that cannot be built (a missing credential, a kind whose package fails to load) becomes an
`UnavailableChannel`: its messages still queue, and go out once the fault is fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from driftline.tasks.alerts.channels.base import (
    Channel,
    ChannelUnavailable,
    Credentials,
    DeliveryError,
    Posted,
    UnavailableChannel,
    unavailable,
)
from driftline.tasks.alerts.channels.console import ConsoleSender
from driftline.tasks.alerts.channels.registry import channel_class
from driftline.tasks.alerts.config import AlertConfig, ChannelConfig

# The names of earlier releases: every channel is a sender.
Sender = Channel
UnavailableSender = UnavailableChannel

__all__ = [
    "ConsoleSender",
    "DeliveryError",
    "Posted",
    "Sender",
    "UnavailableSender",
    "build_sender",
    "build_senders",
]


def _slack_token(config: AlertConfig, token: str | None, credentials: Credentials) -> str | None:
    """The bot token: the one the caller resolved, else from `token_env` or `token_block`."""
    slack = config.slack
    if token is not None or slack is None or slack.uses_webhook:
        return token
    return credentials.get(slack.token_env, slack.token_block)


def _default_channel(
    config: AlertConfig, token: str | None, stream: TextIO | None, credentials: Credentials
) -> Channel | None:
    if config.slack is None:
        return ConsoleSender(stream) if config.console else None
    from driftline.tasks.alerts.channels.slack import slack_sender  # slack_sdk only where Slack is used

    return slack_sender(config.slack, token, credentials)


def build_sender(
    config: AlertConfig,
    token: str | None = None,
    stream: TextIO | None = None,
    secrets: Callable[[str], str | None] | None = None,
) -> Channel | None:
    """The default channel of a monitor's alert config (`alerts.slack`, else the console), or None when
    alerts go nowhere by default.

    `token` is the bot token the flow resolved; without it, the token is read from `token_env` (or,
    when `secrets` looks secrets up, from `token_block`).
    """
    credentials = Credentials(secrets)
    return _default_channel(config, _slack_token(config, token, credentials), stream, credentials)


def _built(entry: ChannelConfig, credentials: Credentials) -> Channel:
    """The channel of an `alerts.channels` entry, or an `UnavailableChannel` saying why it could not be
    built (its kind was resolved when the spec loaded)."""
    try:
        return channel_class(entry.kind).from_config(entry, credentials)
    except ChannelUnavailable as exc:
        return unavailable(entry, str(exc))
    except Exception as exc:
        return unavailable(entry, f"{entry.kind} channel not built: {type(exc).__name__}: {exc}")


def build_senders(
    config: AlertConfig,
    token: str | None = None,
    stream: TextIO | None = None,
    secrets: Callable[[str], str | None] | None = None,
) -> dict[str, Channel]:
    """A channel for every destination of the config, by destination: the default one (as
    `build_sender`), one bot per route channel (same token and API URL as `alerts.slack`), then every
    `alerts.channels` entry, its secrets read from the environment or through `secrets`."""
    senders: dict[str, Channel] = {}
    credentials = Credentials(secrets)
    token = _slack_token(config, token, credentials)
    default = _default_channel(config, token, stream, credentials)
    if default is not None:
        senders[default.destination] = default
    for route in config.routes:
        assert config.slack is not None
        from driftline.tasks.alerts.channels.slack import slack_sender

        senders[route.destination] = slack_sender(config.slack, token, credentials, route.channel)
    for entry in config.channels:
        senders[entry.destination] = _built(entry, credentials)
    return senders
