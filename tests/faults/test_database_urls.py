"""A database URL that cannot work is a mistake named with exit 2, never an outage that spools."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from tests.demo import write_spec

runner = CliRunner()
BAD_URLS = ["postgres://u:secret@127.0.0.1/db", "not a url :secret", "mysqlx://u:secret@host/db"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_bad_store_url_in_the_spec_exits_2_naming_the_key(
    demo_data: Path, tmp_path: Path, url: str
) -> None:
    spec = write_spec(demo_data, tmp_path, store_url=url)
    result = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"])
    assert result.exit_code == EXIT_USAGE
    assert "store_url" in result.stderr and "secret" not in result.stderr
    assert not (tmp_path / ".driftline" / "spool").exists()


def test_a_bad_url_in_the_environment_exits_2_naming_the_variable(
    demo_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIFTLINE_DATABASE_URL", "postgres://u:secret@127.0.0.1/db")
    spec = write_spec(demo_data, tmp_path)
    result = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"])
    assert result.exit_code == EXIT_USAGE
    assert "DRIFTLINE_DATABASE_URL" in result.stderr and "postgresql+psycopg://" in result.stderr
    assert not (tmp_path / ".driftline" / "spool").exists()


def test_a_bad_db_option_of_the_history_commands_exits_2() -> None:
    result = runner.invoke(app, ["runs", "some-monitor", "--db", "postgres://u:secret@127.0.0.1/db"])
    assert result.exit_code == EXIT_USAGE and "secret" not in result.stderr
