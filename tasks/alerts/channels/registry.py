"""The channel kinds an `alerts.channels` entry may name: the built-in ones, those registered in code
(`register_channel`), and those installed packages publish under the `driftline.channels` entry point
group (loaded when a spec first names them), as checks are published under `driftline.checks`.
"""

from __future__ import annotations

import functools
import importlib
from importlib.metadata import EntryPoint
from typing import TypeVar

from driftline.checks.custom import entry_points_in, load_entry
from driftline.tasks.alerts.channels.base import Channel
from driftline.tasks.alerts.config import ChannelConfig

ENTRY_POINT_GROUP = "driftline.channels"
CONTRACT = (
    "a channel is a driftline.tasks.alerts.channels.Channel subclass with a `kind`, a `config_model` "
    "(a ChannelConfig subclass) and `from_config` (docs/alerts.md)"
)
# The built-in kinds and their modules, imported (and so registered) when a spec first names them, so
# a monitor without Slack never imports slack_sdk.
BUILT_IN = {
    kind: f"driftline.tasks.alerts.channels.{kind}"
    for kind in ("slack", "pagerduty", "teams", "email", "webhook")
}
_CHANNELS: dict[str, type[Channel]] = {}
C = TypeVar("C", bound=type[Channel])


def require_channel_class(target: object, origin: str) -> type[Channel]:
    """`target` when it is a `Channel` subclass with a kind and a config model, else a `ValueError`."""
    if not (isinstance(target, type) and issubclass(target, Channel)):
        raise ValueError(f"channel {origin!r}: {target!r} is not a Channel subclass; {CONTRACT}")
    if not target.kind or not issubclass(target.config_model, ChannelConfig):
        raise ValueError(f"channel {origin!r}: {target.__name__} has no `kind` or `config_model`; {CONTRACT}")
    if target.from_config.__func__ is Channel.from_config.__func__:  # type: ignore[attr-defined]
        raise ValueError(f"channel {origin!r}: {target.__name__} does not define `from_config`; {CONTRACT}")
    return target


def register_channel(cls: C) -> C:
    """Make `cls` the channel of its `kind` (usable as a class decorator); a kind taken by another
    class is refused."""
    require_channel_class(cls, f"{cls.__module__}:{cls.__qualname__}")
    taken = _CHANNELS.get(cls.kind)
    if taken is not None and taken is not cls:
        raise ValueError(f"channel kind {cls.kind!r} is already registered by {taken.__qualname__}")
    _CHANNELS[cls.kind] = cls
    return cls


def unregister_channel(kind: str) -> None:
    """Forget the channel of `kind` (tests, and code that registered a channel for a while)."""
    _CHANNELS.pop(kind, None)


@functools.cache
def published() -> dict[str, EntryPoint]:
    """The channels installed packages publish under the `driftline.channels` group, by kind."""
    return entry_points_in(ENTRY_POINT_GROUP)


def _published_channel(kind: str) -> type[Channel]:
    """Load and register the class a package publishes as `kind`; its `kind` must be the entry point's."""
    entry = published()[kind]
    target = load_entry(entry, "channel", ValueError)
    cls = require_channel_class(target, entry.value)
    if cls.kind != kind:
        raise ValueError(f"channel {kind!r}: the entry point's class {entry.value} has kind {cls.kind!r}")
    return register_channel(cls)


def channel_kinds() -> list[str]:
    """Every kind a spec may name: registered and published."""
    return sorted({*BUILT_IN, *_CHANNELS, *published()})


def channel_class(kind: str) -> type[Channel]:
    """The channel class of `kind`, or a `ValueError` listing the kinds there are."""
    if kind not in _CHANNELS and kind in BUILT_IN:
        importlib.import_module(BUILT_IN[kind])
    if kind in _CHANNELS:
        return _CHANNELS[kind]
    if kind in published():
        return _published_channel(kind)
    raise ValueError(f"unknown channel kind {kind!r}; known: {', '.join(channel_kinds())}")
