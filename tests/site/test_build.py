"""The written site: its files and links, escaped data, copied reports, owner-only files, and the local
server."""

from __future__ import annotations

import re
import stat
import threading
import urllib.request
from datetime import UTC, datetime
from html import escape
from pathlib import Path

import markupsafe
import pytest
from sqlalchemy import Engine

from driftline.tasks.history.store import record_run
from driftline.tasks.site import write_site
from driftline.tasks.site.names import page_stems
from driftline.tasks.site.serve import site_server, site_url
from tests.site.conftest import ok

HOSTILE = '<img src=x onerror="alert(1)">'


def links(page: Path) -> list[str]:
    """The page's links to other files (the inline favicon left out)."""
    return [link for link in re.findall(r'href="([^"]*)"', page.read_text()) if link != "data:,"]


def test_the_site_links_every_monitor_and_the_reports_on_disk(filled_store: Engine, tmp_path: Path) -> None:
    roots = tmp_path / "reports"
    report = roots / "alpha" / "b2" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html><title>alpha b2</title></html>")
    written = write_site(filled_store, tmp_path / "site", runs=10, report_roots=[roots])

    assert written.index == tmp_path / "site" / "index.html"
    assert set(written.pages) == {"alpha", "beta"}
    assert written.reports == 1
    index = written.index.read_text()
    # beta (latest verdict high) comes before alpha (latest run without a verdict).
    assert index.index("monitors/beta.html") < index.index("monitors/alpha.html")
    copied = tmp_path / "site" / "reports" / "alpha" / "b2.html"
    assert copied.read_text() == report.read_text()
    alpha = written.pages["alpha"]
    assert "../reports/alpha/b2.html" in links(alpha)
    assert "../index.html" in links(alpha)
    for target in links(written.index):
        assert (written.index.parent / target.split("#")[0]).is_file(), target
    page = alpha.read_text()
    assert page.count("<svg") == 3  # heat map, drift share, the estimate of accuracy
    for path in (written.index, alpha, copied):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_names_from_the_store_are_escaped_and_never_become_paths(
    filled_store: Engine, tmp_path: Path
) -> None:
    record_run(
        filled_store,
        monitor=HOSTILE,
        batch_id="<b>&1",
        batch_time=datetime(2024, 6, 1, tzinfo=UTC),
        results=[ok("drift.numeric", HOSTILE, "medium", psi=0.3), ok(HOSTILE, "t", psi=0.1)],
        status="passed",
        worst_severity="medium",
        rows=1,
    )
    written = write_site(filled_store, tmp_path / "site", runs=5)
    page = written.pages[HOSTILE]
    assert page.parent == tmp_path / "site" / "monitors"
    assert page.name == f"{page_stems([HOSTILE])[HOSTILE]}.html"
    for path in (written.index, page):
        text = path.read_text()
        assert HOSTILE not in text and "<b>&1" not in text
        assert str(markupsafe.escape(HOSTILE)) in text  # the monitor's name, by the template
    text = page.read_text()
    assert escape(HOSTILE) in text  # the check's name in the heat map, by the SVG code
    assert str(markupsafe.escape("<b>&1")) in text


def test_an_empty_store_gives_an_index_that_says_so(database_url: str, tmp_path: Path) -> None:
    from driftline.tasks.history.db import open_store

    engine = open_store(database_url)
    try:
        written = write_site(engine, tmp_path / "site")
    finally:
        engine.dispose()
    assert written.pages == {}
    assert "holds no run yet" in written.index.read_text()


def test_runs_must_be_positive(filled_store: Engine, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="runs must be at least 1"):
        write_site(filled_store, tmp_path / "site", runs=0)


def test_the_server_serves_the_site_on_localhost_only(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html>index</html>")
    (tmp_path / "sub").mkdir()
    with site_server(tmp_path, 0) as server:
        assert server.server_address[0] == "127.0.0.1"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            with urllib.request.urlopen(site_url(server), timeout=10) as response:
                assert response.read() == b"<html>index</html>"
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(site_url(server).replace("index.html", "sub/"), timeout=10)
        finally:
            server.shutdown()
            thread.join(10)


def test_a_folder_without_a_site_is_not_served(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no index\.html"):
        site_server(tmp_path, 0)
