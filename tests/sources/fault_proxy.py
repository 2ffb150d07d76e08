"""A proxy in front of the S3-protocol server that injects object-store faults: each request is
forwarded unless a scripted fault is due, and then it is answered with an S3 error (a 5xx or
throttling code, in S3's XML) or its connection is reset. Every request is recorded with what it got.

    with FaultProxy(s3_endpoint) as proxy:
        proxy.script(Fault.error(500, "InternalError"), Fault.reset())   # the next two requests
        ...                                                                  # then forwarded
"""

from __future__ import annotations

import http.client
import socket
import struct
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from tests.alerts.http_recorder import LocalHttpServer, QuietHandler

# Headers that belong to one hop and are not forwarded.
HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "host"})
ERROR_XML = "<?xml version='1.0'?><Error><Code>{code}</Code><Message>injected fault</Message></Error>"


@dataclass(frozen=True)
class Fault:
    """What a request gets instead of the server's answer: an S3 error, or a reset connection."""

    status: int = 0
    code: str = ""

    @classmethod
    def error(cls, status: int, code: str) -> Fault:
        """An S3 error answer: `status` with `<Error><Code>code</Code>...` as its body."""
        return cls(status, code)

    @classmethod
    def reset(cls) -> Fault:
        """The connection closed with a TCP reset before any answer."""
        return cls()

    @property
    def label(self) -> str:
        """How the fault is shown in the record: `reset` or `503 SlowDown`."""
        return f"{self.status} {self.code}" if self.status else "reset"


@dataclass(frozen=True)
class Seen:
    """One request the proxy received, and what it got: a fault's label or the server's status."""

    method: str
    path: str
    outcome: str


class FaultProxy(LocalHttpServer):
    """Forwards to `upstream` (the S3 server's URL), failing the requests `script` names."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.seen: list[Seen] = []
        self.always: Fault | None = None
        self._script: deque[Fault] = deque()
        super().__init__()

    def script(self, *faults: Fault) -> None:
        """Fail the next requests with `faults`, in order; later ones are forwarded (or get `always`)."""
        with self._lock:
            self._script.extend(faults)

    def faults_left(self) -> int:
        """Scripted faults not yet served."""
        with self._lock:
            return len(self._script)

    def _next_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            fault = self._script.popleft() if self._script else self.always
            self.seen.append(Seen(method, path, fault.label if fault else "forwarded"))
            return fault

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fault = proxy._next_fault(self.command, self.path)
                if fault is not None and not fault.status:
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()  # with a zero linger: a reset, not an orderly close
                    return
                if fault is not None:
                    xml = ERROR_XML.format(code=fault.code)
                    self.answer(
                        fault.status, b"" if self.command == "HEAD" else xml.encode(), "application/xml"
                    )
                    return
                self._forward(body)

            def _forward(self, body: bytes) -> None:
                connection = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=30
                )
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
                    headers["Host"] = proxy.upstream.netloc
                    connection.request(self.command, self.path, body=body or None, headers=headers)
                    response = connection.getresponse()
                    payload = response.read()
                finally:
                    connection.close()
                # A HEAD answer keeps the server's Content-Length (the object's size) and has no body.
                own = set() if self.command == "HEAD" else {"content-length"}
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in HOP_HEADERS | own:
                        self.send_header(name, value)
                if own:
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _serve

        return Handler
