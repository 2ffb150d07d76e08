"""`driftline mute` (mute, --list, --unmute) and `driftline trend`'s level shifts, through the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from driftline.flows import cli_alerts  # noqa: F401  (registers `mute`)
from driftline.flows.cli_common import app
from driftline.tasks.alerts.mutes import active_mutes
from driftline.tasks.history.db import open_store
from driftline.tasks.history.store import record_run
from tests.alerts.builders import result

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    open_store(url).dispose()
    return url


def invoke(*args: str) -> tuple[int, str]:
    outcome = runner.invoke(app, list(args))
    return outcome.exit_code, outcome.stdout


def test_mute_list_and_unmute(db: str) -> None:
    until = (datetime.now(UTC) + timedelta(days=30)).date().isoformat()
    code, out = invoke(
        "mute", "acs", "--check", "drift.numeric", "--target", "age", "--until", until, "--db", db, "--json"
    )
    assert code == 0, out
    assert json.loads(out) == {
        "monitor": "acs",
        "check": "drift.numeric",
        "target": "age",
        "until": f"{until}T00:00:00+00:00",
        "open": 0,
    }
    engine = open_store(db)
    with Session(engine) as session:
        assert active_mutes(session, "acs").covers("drift.numeric", "age")
    code, out = invoke("mute", "acs", "--list", "--db", db, "--json")
    assert code == 0 and [m["target"] for m in json.loads(out)] == ["age"]
    code, out = invoke("mute", "acs", "--check", "drift.numeric", "--target", "age", "--unmute", "--db", db)
    assert code == 0 and "no longer muted" in out
    with Session(engine) as session:
        assert not active_mutes(session, "acs").keys
    engine.dispose()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--until", "2099-01-01"], "--check is required"),
        (["--check", "drift.numeric"], "--until is required"),
        (["--check", "drift.numeric", "--until", "next week"], "--until 'next week': expected a date"),
        (["--check", "drift.numeric", "--until", "2001-01-01"], "is not in the future"),
        (["--check", "drift.numeric", "--unmute"], "was not muted"),
        (["--list", "--unmute"], "either --list or --unmute"),
    ],
)
def test_mute_mistakes_are_named(db: str, args: list[str], message: str) -> None:
    code, out = invoke("mute", "acs", *args, "--db", db, "--json")
    assert code == 2 and message in json.loads(out)["error"]


def test_trend_lists_a_recent_level_shift(db: str) -> None:
    engine = open_store(db)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    values = [0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.11, 0.09, 0.10, 0.11, 0.30, 0.31]
    for i, psi in enumerate(values):
        record_run(
            engine,
            monitor="acs",
            batch_id=f"b{i:02d}",
            batch_time=start + timedelta(hours=i),
            results=[result("drift.numeric", "age", metrics={"psi": psi})],
            status="ok",
            worst_severity="none",
            rows=10,
        )
    engine.dispose()
    code, out = invoke("trend", "acs", "--db", db, "--json", "--shift-window", "11")
    assert code == 0, out
    (shift,) = json.loads(out)["moved"]
    assert (shift["target"], shift["runs_since"], shift["batch_id"]) == ("age", 2, "b11")
    assert shift["after"] == pytest.approx(0.305)
