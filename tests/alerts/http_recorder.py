"""A local HTTP server standing in for PagerDuty, Teams and webhook receivers in tests: it records every
POST (path, headers, raw body, parsed JSON) and answers from a script of statuses, then a default; a
failure answers with the request's own body when `echo_failures` is set (as services that quote the
input do), to show that secrets sent in a body are masked in errors. `LocalHttpServer` is the threaded
server every stand-in builds on (this one, the Slack stand-in, the object-store fault proxy).

    with HttpRecorder(default=202) as pager:
        pager.script(500)        # the next request fails, later ones get 202
        ...
        assert [r.json["event_action"] for r in pager.accepted()] == ["trigger"]
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LocalHttpServer:
    """A threaded HTTP server on 127.0.0.1 (a free port) serving the handler class `_handler` makes; use
    it as a context manager. The stand-ins build on it (this recorder, `slack_server.SlackStandIn`, the
    object-store fault proxy), keeping what they record under `_lock`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # a short poll: `shutdown` waits for the loop to notice it, half a second at the default
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this server's state."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that answers in one call and keeps test output quiet."""

    def answer(
        self, status: int, payload: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        """Send `status` with `payload` as its body, of `content_type`, with `headers` added."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


@dataclass(frozen=True)
class Recorded:
    """One request the server received, and the status it answered."""

    path: str
    headers: dict[str, str]
    raw: bytes
    status: int

    @property
    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.raw)


class HttpRecorder(LocalHttpServer):
    """Records every POST and answers from a script of statuses, then `default`."""

    def __init__(self, default: int = 200, answer: str = "", echo_failures: bool = False) -> None:
        self.requests: list[Recorded] = []
        self.default = default
        self.answer = answer
        self.echo_failures = echo_failures
        self._script: deque[int] = deque()
        super().__init__()

    def script(self, *statuses: int) -> None:
        """Answer the next requests with `statuses`, in order; later ones get `default`."""
        with self._lock:
            self._script.extend(statuses)

    def accepted(self) -> list[Recorded]:
        """The requests answered with a 2xx status."""
        with self._lock:
            return [r for r in self.requests if 200 <= r.status < 300]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        recorder = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with recorder._lock:
                    status = recorder._script.popleft() if recorder._script else recorder.default
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    recorder.requests.append(Recorded(self.path, headers, raw, status))
                failure = raw if recorder.echo_failures else b"stand-in failure"
                payload = recorder.answer.encode() if 200 <= status < 300 else failure
                self.answer(status, payload, "text/plain")

        return Handler
