"""The console channel: alerts printed as plain text (the demo's sink when no Slack is configured)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

from driftline.tasks.alerts.channels.base import Channel, Posted
from driftline.tasks.alerts.config import CONSOLE_DESTINATION
from driftline.tasks.alerts.messages import unescape


class ConsoleSender(Channel):
    """Prints a readable plain-text rendering (`alerts.console`).

    Without a `stream`, alerts go to standard error (looked up at each send), so standard output stays
    free for machine-readable output such as `driftline run --json`. They are written to the stream,
    not printed, so an engine that turns prints into log lines (Prefect's `log_prints`) and a quiet
    log level cannot hide them.
    """

    destination = CONSOLE_DESTINATION

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def send(
        self, message: Mapping[str, Any], *, key: str | None = None, thread: Posted | None = None
    ) -> Posted | None:
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(unescape(message["text"]) + "\n\n")
        stream.flush()
        return None
