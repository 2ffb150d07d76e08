"""`driftline site --serve` serves its folder only: a link inside it that resolves elsewhere (a system
file) is not found, and a request naming another host (DNS rebinding: a page of another site whose
name now points at 127.0.0.1) is refused, so no other site can read the monitors' pages."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftline.tasks.site.serve import site_server


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A served site folder beside a private file, and the server's port."""
    site = tmp_path / "site"
    (site / "runs").mkdir(parents=True)
    (site / "index.html").write_text("<html>index</html>")
    (site / "runs" / "a.html").write_text("<html>a</html>")
    (tmp_path / "private.txt").write_text("outside the site")
    with site_server(site, 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield site, server.server_address[1]
        finally:
            server.shutdown()
            thread.join(10)


def _get(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.0.0.1:{port}", "LOCALHOST:{port}"])
def test_local_host_names_are_served(served: tuple[Path, int], host: str) -> None:
    _, port = served
    assert _get(port, "/runs/a.html", host.format(port=port)) == (200, b"<html>a</html>")


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost.evil.example", None]
)
def test_other_host_names_are_refused(served: tuple[Path, int], host: str | None) -> None:
    _, port = served
    status, body = _get(port, "/index.html", host.format(port=port) if host else None)
    assert status == 421 and b"index" not in body


def test_links_leading_out_of_the_folder_are_not_followed(served: tuple[Path, int]) -> None:
    site, port = served
    (site / "runs" / "leak.html").symlink_to(site.parent / "private.txt")
    (site / "runs" / "passwd.html").symlink_to("/etc/passwd")
    (site / "outside").symlink_to(site.parent)
    for path in ("/runs/leak.html", "/runs/passwd.html", "/outside/private.txt"):
        assert _get(port, path, "127.0.0.1")[0] == 404


def test_a_link_within_the_folder_is_served(served: tuple[Path, int]) -> None:
    site, port = served
    (site / "latest.html").symlink_to(site / "runs" / "a.html")
    assert _get(port, "/latest.html", "localhost") == (200, b"<html>a</html>")
