"""A mistake in the spec after a good run is named at load time and never touches the stored run."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import ResultRow, Run
from driftline.tasks.history.query import list_runs
from tests.demo import count, write_spec

runner = CliRunner()


def test_a_misspelt_column_role_exits_2_and_leaves_the_completed_run_as_it_was(
    demo_data: Path, tmp_path: Path
) -> None:
    """`columns: {lable: ...}` after a passing run: exit 2 naming the key; the run stays `passed`."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=None)
    good = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"])
    assert good.exit_code == 0, good.output
    results = count(url, ResultRow)

    text = yaml.safe_load(spec.read_text())
    text["columns"]["lable"] = text["columns"].pop("label")
    spec.write_text(yaml.safe_dump(text))
    bad = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"])
    assert bad.exit_code == EXIT_USAGE
    assert "columns" in bad.stderr and "lable" in bad.stderr and "did you mean label" in bad.stderr

    engine = open_store(url)
    [run] = list_runs(engine, "acs-employment")
    engine.dispose()
    assert run["status"] == "passed"
    assert count(url, Run) == 1 and count(url, ResultRow) == results


def test_a_crashed_rerun_keeps_the_stored_verdict_and_records_the_attempt(
    demo_data: Path, tmp_path: Path
) -> None:
    """A re-run of a passed batch that crashes (here: its model cannot be imported) leaves the run
    `passed` with its results, and notes the failed attempt."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=None)
    assert runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"]).exit_code == 0
    results = count(url, ResultRow)

    text = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**text, "model": "nowhere_to_be_found:build"}))
    crashed = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"])
    assert crashed.exit_code == EXIT_USAGE and "nowhere_to_be_found" in crashed.stderr

    engine = open_store(url)
    [run] = list_runs(engine, "acs-employment")
    engine.dispose()
    assert run["status"] == "passed" and count(url, ResultRow) == results
    assert "ModelError" in run["details"]["last_attempt"]["reason"]
