"""A local HTTP server standing in for Slack (Web API and incoming webhooks) in tests.

It records every request and answers from a script of replies, one per request, then a default:

    with SlackStandIn() as slack:
        slack.script(Reply.rate_limited(), Reply.ok())
        WebClient(token="xoxb-test", base_url=slack.api_url).chat_postMessage(channel="#a", text="hi")
        assert [r.path for r in slack.requests] == ["/api/chat.postMessage"] * 2

Web API paths (`/api/<method>`) answer JSON; webhook paths (`/services/...`) answer plain text, as
Slack does (`ok`, or an error code such as `invalid_token` with a 4xx status). Each accepted
`chat.postMessage` is kept in `messages` with its channel id, its own `ts` and its `thread_ts` (a
reply), and is answered with them. `chat.update` edits a kept message (`message_not_found` when there
is none); it is recorded apart (`updates`, scripted with `script_updates`), since it posts nothing.
Reads are answered from what was posted, not scripted, and recorded apart (`reads`):
`conversations.history` lists a channel's top-level messages, `conversations.replies` a thread
(with their metadata when `include_all_metadata` is set), `conversations.list` the channels in
`channels` (a channel posted to by an unknown name gets an id there).
"""

from __future__ import annotations

import json
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.alerts.http_recorder import LocalHttpServer, QuietHandler

WEBHOOK_PATH = "/services/T00000000/B00000000/stand-in-webhook-secret"
READS = ("/api/conversations.history", "/api/conversations.list", "/api/conversations.replies")
POST_PATH = "/api/chat.postMessage"
UPDATE_PATH = "/api/chat.update"


@dataclass(frozen=True)
class Reply:
    """One scripted answer; `body=None` means the endpoint's success body."""

    status: int = 200
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    @classmethod
    def ok(cls) -> Reply:
        """Success: `{"ok": true, ...}` on the Web API, `ok` on a webhook."""
        return cls()

    @classmethod
    def rate_limited(cls, retry_after: int = 1) -> Reply:
        """HTTP 429 with `Retry-After`."""
        return cls(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)})

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        """An HTTP 5xx with a non-JSON body, like a failing proxy."""
        return cls(status, "upstream failure")

    @classmethod
    def slack_error(cls, error: str) -> Reply:
        """A Web API refusal: HTTP 200 with `{"ok": false, "error": error}`."""
        return cls(200, {"ok": False, "error": error})

    @classmethod
    def posted_then_silent(cls, seconds: float) -> Reply:
        """The message is posted, but the answer comes only after `seconds` (a client killed meanwhile
        never learns that it was posted)."""
        return cls(delay_s=seconds)

    @classmethod
    def webhook_error(cls, error: str, status: int = 403) -> Reply:
        """A webhook refusal: the error code as plain text with a 4xx status."""
        return cls(status, error)


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    status: int
    accepted: bool


def _parse(content_type: str, raw: bytes) -> Any:
    """JSON or form bodies as Python values; anything else as text."""
    if "application/json" in content_type:
        return json.loads(raw or b"null")
    if "application/x-www-form-urlencoded" in content_type:
        return {k: v[0] if len(v) == 1 else v for k, v in parse_qs(raw.decode()).items()}
    return raw.decode(errors="replace")


class SlackStandIn(LocalHttpServer):
    """A threaded HTTP server on 127.0.0.1 (a free port) that plays Slack; use it as a context manager."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.reads: list[str] = []
        self.updates: list[Request] = []
        self.messages: list[dict[str, Any]] = []
        self.channels = {"ml-alerts": "C0STANDIN"}
        self.default = Reply.ok()
        self._script: deque[Reply] = deque()
        self._update_script: deque[Reply] = deque()
        super().__init__()

    @property
    def api_url(self) -> str:
        """The Web API base URL for `WebClient(base_url=...)` (trailing slash included)."""
        return f"{self.url}/api/"

    @property
    def webhook_url(self) -> str:
        """An incoming-webhook URL on this server."""
        return self.url + WEBHOOK_PATH

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with `replies`, in order; later ones get `default`."""
        with self._lock:
            self._script.extend(replies)

    def script_updates(self, *replies: Reply) -> None:
        """Answer the next `chat.update` calls with `replies`, in order; later ones succeed."""
        with self._lock:
            self._update_script.extend(replies)

    def thread(self, ts: str) -> list[dict[str, Any]]:
        """The replies posted in the thread of the message `ts`, oldest first."""
        with self._lock:
            return [m for m in self.messages if m.get("thread_ts") == ts and m["ts"] != ts]

    def top_level(self) -> list[dict[str, Any]]:
        """The messages that are not replies, oldest first (as edited by `chat.update`)."""
        with self._lock:
            return [m for m in self.messages if not m.get("thread_ts")]

    def _channel_id(self, channel: str) -> str:
        """The id of a channel given by id or name; an unknown name is given an id (lock held)."""
        if channel in self.channels.values():
            return channel
        name = channel.lstrip("#")
        if name not in self.channels:
            self.channels[name] = f"C0ROUTE{len(self.channels):03d}"
        return self.channels[name]

    def _keep(self, body: dict[str, Any]) -> dict[str, Any]:
        """Store an accepted `chat.postMessage`; the answer Slack gives (channel id and ts)."""
        with self._lock:
            ts = f"1700000000.{len(self.messages) + 1:06d}"
            channel = self._channel_id(str(body.get("channel", "")))
            self.messages.append(
                {
                    "channel": channel,
                    "ts": ts,
                    "thread_ts": body.get("thread_ts"),
                    "text": body.get("text"),
                    "blocks": body.get("blocks"),
                    "metadata": body.get("metadata"),
                }
            )
        return {"ok": True, "channel": channel, "ts": ts}

    def _update(self, request: Request) -> tuple[Reply, dict[str, Any] | str]:
        """Answer a `chat.update`: scripted, else edit the kept message (or `message_not_found`)."""
        body = request.body if isinstance(request.body, dict) else {}
        with self._lock:
            reply = self._update_script.popleft() if self._update_script else Reply.ok()
            if reply.body is not None or reply.status != 200:
                self.updates.append(request)
                return reply, reply.body if reply.body is not None else ""
            found = [
                m for m in self.messages if m["channel"] == body.get("channel") and m["ts"] == body.get("ts")
            ]
            self.updates.append(request)
            if not found:
                return reply, {"ok": False, "error": "message_not_found"}
            found[0].update(text=body.get("text"), blocks=body.get("blocks"))
            return reply, {"ok": True, "channel": found[0]["channel"], "ts": found[0]["ts"]}

    def accepted(self) -> list[Request]:
        """The requests answered with success: the messages Slack would have posted."""
        with self._lock:
            return [r for r in self.requests if r.accepted]

    def _next_reply(self, path: str) -> tuple[Reply, dict[str, Any] | str, bool]:
        """The reply for a request to `path`, its body, and whether Slack would have posted."""
        with self._lock:
            reply = self._script.popleft() if self._script else self.default
        body = reply.body
        if body is None:
            body = "ok" if path.startswith("/services/") else {"ok": True}
        success = body == "ok" or (isinstance(body, dict) and bool(body.get("ok")))
        return reply, body, reply.status == 200 and success

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _read(self, path: str, form: Any = None) -> dict[str, Any]:
        """The answer to a Web API read (`conversations.history` or `conversations.list`), whose
        arguments come in the query string (GET) or the form body (POST)."""
        parts = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query.update(form if isinstance(form, dict) else {})
        with self._lock:
            self.reads.append(parts.path)
        if parts.path == "/api/conversations.list":
            channels = [{"id": cid, "name": name} for name, cid in self.channels.items()]
            return {"ok": True, "channels": channels, "response_metadata": {"next_cursor": ""}}
        if parts.path in ("/api/conversations.history", "/api/conversations.replies"):
            if query.get("channel") not in self.channels.values():
                return {"ok": False, "error": "channel_not_found"}
            with_metadata = query.get("include_all_metadata") in ("1", "true", "True")
            with self._lock:
                kept = [m for m in self.messages if m["channel"] == query.get("channel")]
            if parts.path.endswith("replies"):
                kept = [m for m in kept if query.get("ts") in (m["ts"], m.get("thread_ts"))]
                if not kept:
                    return {"ok": False, "error": "thread_not_found"}
            else:
                kept = [m for m in kept if not m.get("thread_ts")][::-1]
            messages = [
                {"type": "message", "ts": m["ts"], "text": m["text"]}
                | ({"thread_ts": m["thread_ts"]} if m.get("thread_ts") else {})
                | ({"metadata": m["metadata"]} if with_metadata and m.get("metadata") else {})
                for m in kept
            ]
            return {"ok": True, "messages": messages, "has_more": False}
        return {"ok": False, "error": "unknown_method"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if urlsplit(self.path).path in READS:
                    self._answer(
                        200, stand_in._read(self.path, _parse(headers.get("content-type", ""), raw)), {}
                    )
                    return
                parsed = _parse(headers.get("content-type", ""), raw)
                if urlsplit(self.path).path == UPDATE_PATH:
                    request = Request("POST", self.path, headers, parsed, raw, 200, True)
                    reply, answer = stand_in._update(request)
                    self._answer(reply.status, answer, reply.headers)
                    return
                reply, body, accepted = stand_in._next_reply(self.path)
                if accepted and urlsplit(self.path).path == POST_PATH and isinstance(parsed, dict):
                    body = stand_in._keep(parsed)
                stand_in._record(Request("POST", self.path, headers, parsed, raw, reply.status, accepted))
                time.sleep(reply.delay_s)
                self._answer(reply.status, body, reply.headers)

            def do_GET(self) -> None:
                self._answer(200, stand_in._read(self.path), {})

            def _answer(self, status: int, body: dict[str, Any] | str, extra: dict[str, str]) -> None:
                if isinstance(body, dict):
                    self.answer(status, json.dumps(body).encode(), "application/json; charset=utf-8", extra)
                else:
                    self.answer(status, str(body).encode(), "text/plain", extra)

        return Handler


def closed_port_url() -> str:
    """An `http://127.0.0.1:PORT/api/` URL where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/api/"
