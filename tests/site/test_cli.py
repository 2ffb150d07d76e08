"""`driftline site`: the store from --db or the specs, reports beside the specs, --json, --serve, and
one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import driftline.flows.cli_site  # noqa: F401  (registers `site`)
from driftline.flows.cli_common import EXIT_USAGE, app
from driftline.tasks.history.db import open_store
from tests.site.conftest import fill

runner = CliRunner()


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    """The conftest's store in a SQLite file."""
    path = tmp_path / "history.db"
    engine = open_store(f"sqlite:///{path}")
    try:
        fill(engine)
    finally:
        engine.dispose()
    return path


def write_spec(folder: Path, name: str, store_url: str) -> Path:
    """A minimal monitor spec (its data files are never read by `site`)."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "name": name,
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric"],
        "store_url": store_url,
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def invoke(*args: str) -> Any:
    return runner.invoke(app, ["site", *args])


def test_site_from_a_database_url_prints_what_it_wrote(store_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    result = invoke("--db", f"sqlite:///{store_file}", "--out", str(out), "--runs", "2", "--json")
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    assert written == {
        "folder": str(out),
        "index": str(out / "index.html"),
        "pages": {"beta": str(out / "monitors" / "beta.html"), "alpha": str(out / "monitors" / "alpha.html")},
        "reports": 0,
    }
    page = (out / "monitors" / "alpha.html").read_text()
    assert ">b3<" in page and ">b4<" in page and ">b2<" not in page  # the newest two runs only


def test_the_spec_names_the_store_and_its_reports_are_linked(store_file: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "project", "alpha", f"sqlite:///{store_file}")
    report = spec.parent / ".driftline" / "reports" / "alpha" / "b1" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html>b1</html>")
    out = tmp_path / "site"
    result = invoke("--spec", str(spec), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "site of 2 monitor(s) written to" in result.stdout
    assert "(1 run report(s) copied)" in result.stdout
    assert (out / "reports" / "alpha" / "b1.html").read_text() == "<html>b1</html>"


def test_specs_naming_different_stores_are_refused(store_file: Path, tmp_path: Path) -> None:
    one = write_spec(tmp_path / "one", "alpha", f"sqlite:///{store_file}")
    two = write_spec(tmp_path / "two", "beta", "sqlite:///other.db")
    result = invoke("--spec", str(one), "--spec", str(two), "--out", str(tmp_path / "site"))
    assert result.exit_code == EXIT_USAGE
    assert "the specs name different history stores" in result.stderr
    assert "give one with --db" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "sqlite:///{tmp}/missing.db"], "no history database at"),
        (["--db", "mysql://u:secret@host/db"], "needs SQLite or PostgreSQL"),
        (["--reports", "{tmp}/nowhere"], "nowhere: no such folder"),
        (["--runs", "0"], "Invalid value for '--runs'"),
    ],
)
def test_bad_input_is_one_line_naming_it(tmp_path: Path, args: list[str], message: str) -> None:
    result = invoke(*(a.replace("{tmp}", str(tmp_path)) for a in args), "--out", str(tmp_path / "site"))
    assert result.exit_code == EXIT_USAGE
    assert message in result.stderr
    assert "secret" not in result.output
    assert not (tmp_path / "site").exists()


def test_serve_serves_the_written_folder(
    store_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[tuple[Path, int]] = []
    monkeypatch.setattr(
        "driftline.tasks.site.serve.serve_site", lambda folder, port, announce: served.append((folder, port))
    )
    out = tmp_path / "site"
    result = invoke("--db", f"sqlite:///{store_file}", "--out", str(out), "--serve", "--port", "8123")
    assert result.exit_code == 0, result.output
    assert served == [(out, 8123)]
