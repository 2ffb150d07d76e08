"""Expected errors from the command line: one clear line and exit 2, JSON with --json, a traceback only
with --debug; history commands that take the spec file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from tests.demo import write_spec

runner = CliRunner()


@pytest.fixture
def missing_reference(demo_data: Path, tmp_path: Path) -> Path:
    """A spec whose reference file does not exist."""
    return write_spec(demo_data, tmp_path, reference={"path": str(tmp_path / "nowhere.parquet")})


def test_a_missing_reference_is_one_line_naming_the_file(missing_reference: Path) -> None:
    """No traceback for an expected error: the file is named, exit 2."""
    result = runner.invoke(app, ["run", str(missing_reference), "--engine", "local"])
    assert result.exit_code == EXIT_USAGE
    assert "nowhere.parquet" in result.stderr and "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if "error" in line]) == 1


def test_with_json_an_error_is_a_json_object_on_stdout(missing_reference: Path) -> None:
    """Scripts reading --json output get an object naming the error, its kind and the exit code."""
    result = runner.invoke(app, ["run", str(missing_reference), "--engine", "local", "--json"])
    assert result.exit_code == EXIT_USAGE
    payload = json.loads(result.stdout)
    assert payload["exit_code"] == EXIT_USAGE and payload["kind"] == "usage"
    assert "nowhere.parquet" in payload["error"]


def test_debug_shows_the_traceback(missing_reference: Path) -> None:
    """`driftline --debug` is how a user gets the traceback of an expected error."""
    result = runner.invoke(app, ["--debug", "run", str(missing_reference), "--engine", "local"])
    assert result.exit_code == EXIT_USAGE and "Traceback" in result.stderr


def test_a_batch_that_is_not_parquet_is_named_without_a_traceback(demo_data: Path, tmp_path: Path) -> None:
    """A corrupt batch file is bad input (exit 2), not an internal error."""
    batches = tmp_path / "batches"
    batches.mkdir()
    (batches / "2020-01.parquet").write_text("this is not parquet\n")
    spec = write_spec(demo_data, tmp_path, batches={"path": str(batches / "{batch}.parquet")})
    result = runner.invoke(app, ["run", str(spec), "--engine", "local"])
    assert result.exit_code == EXIT_USAGE, result.output
    assert "2020-01.parquet" in result.stderr and "Traceback" not in result.stderr


def test_history_runs_and_trend_take_the_spec_and_use_its_store(demo_data: Path, tmp_path: Path) -> None:
    """`driftline history SPEC.yaml` reads the spec's store_url, not ./driftline.db."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=None)
    for batch in ("2016-06", "2018-12"):
        assert runner.invoke(app, ["run", str(spec), "--batch", batch, "--engine", "local"]).exit_code in (
            0,
            1,
        )

    history = runner.invoke(
        app, ["history", str(spec), "--check", "drift.prediction", "--metric", "psi", "--json"]
    )
    assert history.exit_code == 0, history.output
    assert [r["batch_id"] for r in json.loads(history.stdout)] == ["2016-06", "2018-12"]
    runs = runner.invoke(app, ["runs", str(spec), "--json"])
    assert runs.exit_code == 0 and {r["batch_id"] for r in json.loads(runs.stdout)} == {"2016-06", "2018-12"}
    trend = runner.invoke(app, ["trend", str(spec), "--json", "--runs", "1"])
    assert trend.exit_code == 0 and json.loads(trend.stdout)["sustained"]


def test_readers_given_a_spec_find_the_default_store_beside_it_from_any_folder(
    demo_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without store_url a run writes driftline.db beside the spec; history, runs and trend read it
    there when called from another folder (where no driftline.db exists)."""
    monkeypatch.delenv("DRIFTLINE_DATABASE_URL", raising=False)
    folder = tmp_path / "monitor"
    folder.mkdir()
    spec = write_spec(demo_data, folder, retrain=None)
    spec_data = spec.read_text()
    assert "store_url" not in spec_data
    assert runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"]).exit_code in (
        0,
        1,
    )
    assert (folder / "driftline.db").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for command in (["history", "--check", "drift.prediction"], ["runs"], ["trend"]):
        result = runner.invoke(app, [command[0], str(spec), *command[1:], "--json"])
        assert result.exit_code == 0, (command, result.output)
        assert "2016-06" in result.stdout or command[0] == "trend", (command, result.stdout)
    assert not (elsewhere / "driftline.db").exists()
