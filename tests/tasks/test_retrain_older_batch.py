"""Retraining follows batch time, as incidents do: a failing batch older than the monitor's newest
stored one is not retrained, unless asked (`backfill --retrain`, `retrain="always"`)."""

from __future__ import annotations

from pathlib import Path

from driftline.tasks.config.spec import load_spec
from driftline.tasks.retraining.actions import RETRAIN_ALWAYS
from driftline.tasks.run.pipeline import run_monitor
from tests.demo import write_spec


def test_an_older_failing_batch_is_retrained_only_when_asked(demo_data: Path, tmp_path: Path) -> None:
    marker = tmp_path / "retrained"
    command = ["sh", "-c", f'echo "$DRIFTLINE_BATCH_ID" >> {marker}']
    # 2018-06 fails on drift alone, which retrains only when `retrain.on` names it
    retrain = {"command": command, "min_severity": "high", "on": ["performance", "drift"]}
    path = write_spec(demo_data, tmp_path, retrain=retrain)
    spec = load_spec(path)

    newest = run_monitor(spec, "2018-12")
    older = run_monitor(spec, "2018-06")
    asked = run_monitor(spec, "2018-06", retrain=RETRAIN_ALWAYS)

    assert newest.status == older.status == "failed" and older.worst_severity == "high"
    assert newest.retraining["command"] == {"returncode": 0} and newest.retraining["incidents"]
    assert older.retraining == {
        "skipped": "batch 2018-06 is older than batch 2018-12: not retrained (backfill --retrain retrains it)"
    }
    assert asked.retraining == {"command": {"returncode": 0}}
    assert marker.read_text().split() == ["2018-12", "2018-06"]


def test_the_default_history_database_is_beside_the_spec(
    demo_data: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.delenv("DRIFTLINE_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "project"
    folder.mkdir()
    default = load_spec(write_spec(demo_data, folder))
    relative = load_spec(write_spec(demo_data, folder, store_url="sqlite:///state/history.db"))
    assert default.database_url() == f"sqlite:///{folder / 'driftline.db'}"
    assert relative.database_url() == f"sqlite:///{folder / 'state' / 'history.db'}"
    run_monitor(default, "2016-06")
    assert (folder / "driftline.db").exists() and not (tmp_path / "driftline.db").exists()
