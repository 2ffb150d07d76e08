"""Serving a written site on this machine only (127.0.0.1), for viewing: the files as they are, no
directory listings, no request log, nothing outside the folder (a link leading out is not followed)
and no request naming another host (a page of another site that rebinds its name to 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from driftline.tasks.site.build import INDEX_FILE

HOST = "127.0.0.1"
# Host names a request may address the server by (with or without its port).
LOCAL_NAMES = (HOST, "localhost")


class SiteHandler(SimpleHTTPRequestHandler):
    """Static files of one folder, asked for by a local host name; a folder without an index is not
    listed, and a file or link that resolves outside the folder is not found."""

    server: ThreadingHTTPServer  # `site_server` makes it

    def send_head(self) -> Any:
        if not self._local_host():
            self.send_error(421, "misdirected request: address the site as 127.0.0.1 or localhost")
            return None
        root = Path(self.directory).resolve()
        if not Path(self.translate_path(self.path)).resolve().is_relative_to(root):
            self.send_error(404, "not found")
            return None
        return super().send_head()

    def _local_host(self) -> bool:
        """Whether the request's Host header names this server: 127.0.0.1 or localhost, at its port
        or without one."""
        port = self.server.server_port
        allowed = {name for local in LOCAL_NAMES for name in (local, f"{local}:{port}")}
        return (self.headers.get("Host") or "").lower() in allowed

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
    """The index page's address on a server `site_server` made (bound to `HOST`)."""
    return f"http://{HOST}:{server.server_port}/{INDEX_FILE}"


def serve_site(folder: Path, port: int, announce: Callable[[str], None] = print) -> None:
    """Serve `folder` until interrupted (Ctrl-C), announcing its URL first."""
    with site_server(folder, port) as server:
        announce(f"serving {site_url(server)} (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            announce("stopped")
