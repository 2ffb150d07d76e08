"""A local HTTP server standing in for PagerDuty, Teams and webhook receivers in tests: it records every
POST (path, headers, raw body, parsed JSON) and answers from a script of statuses, then a default; a
failure answers with the request's own body when `echo_failures` is set (as services that quote the
input do), to show that secrets sent in a body are masked in errors.

    with HttpRecorder(default=202) as pager:
        pager.script(500)        # the next request fails, later ones get 202
        ...
        assert [r.json["event_action"] for r in pager.accepted()] == ["trigger"]
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class HttpRecorder:
    """A threaded HTTP server on 127.0.0.1 (a free port); use it as a context manager."""

    def __init__(self, default: int = 200, answer: str = "", echo_failures: bool = False) -> None:
        self.requests: list[Recorded] = []
        self.default = default
        self.answer = answer
        self.echo_failures = echo_failures
        self._script: deque[int] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

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

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with recorder._lock:
                    status = recorder._script.popleft() if recorder._script else recorder.default
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    recorder.requests.append(Recorded(self.path, headers, raw, status))
                failure = raw if recorder.echo_failures else b"stand-in failure"
                payload = recorder.answer.encode() if 200 <= status < 300 else failure
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

        return Handler

    def __enter__(self) -> HttpRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
