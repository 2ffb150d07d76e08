"""Serving a written site on this machine only (127.0.0.1), for viewing: the files as they are, no
directory listings, no request log."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from driftline.tasks.site.build import INDEX_FILE

HOST = "127.0.0.1"


class SiteHandler(SimpleHTTPRequestHandler):
    """Static files of one folder; a folder without an index is not listed."""

    def list_directory(self, path: Any) -> None:
        self.send_error(404, "not found")
        return None

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged: the viewer is the only client."""


def site_server(folder: Path, port: int) -> ThreadingHTTPServer:
    """A server of `folder` on 127.0.0.1:`port` (0: a free port), bound and ready, not yet serving;
    a folder without `index.html` is a `FileNotFoundError`."""
    if not (folder / INDEX_FILE).is_file():
        raise FileNotFoundError(f"{folder}: no {INDEX_FILE} to serve (write the site first)")
    handler = partial(SiteHandler, directory=str(folder.resolve()))
    return ThreadingHTTPServer((HOST, port), handler)


def site_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/{INDEX_FILE}"


def serve_site(folder: Path, port: int, announce: Callable[[str], None] = print) -> None:
    """Serve `folder` until interrupted (Ctrl-C), announcing its URL first."""
    with site_server(folder, port) as server:
        announce(f"serving {site_url(server)} (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            announce("stopped")
