"""Item 5: a column named with terminal escape sequences (ANSI, OSC-8 hyperlinks, bidi overrides) is shown
with its control characters as escapes in result tables, console alerts, errors and log lines; brackets
in it are shown, never read as console markup."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import create_engine
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.flows.cli_run import _show_progress
from driftline.tasks.alerts import AlertConfig, process_alerts
from driftline.tasks.history.models import Base
from driftline.tasks.tools.safe_text import printable
from tests.alerts.builders import result

runner = CliRunner()
# Clears the screen, then shows "click" linked to a page that is not the one it names.
HOSTILE = "\x1b[2J\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ \u202eage"
SHOWN = "\\x1b[2J\\x1b]8;;https://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\ \\u202eage"


def test_printable_shows_controls_and_keeps_text() -> None:
    assert printable(HOSTILE) == SHOWN
    assert printable("prix €\tline\n") == "prix €\tline\n"
    assert printable("a\rb\x07c\x9bd\u2028e") == "a\\rb\\x07c\\x9bd\\u2028e"


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """A reference and a shifted batch whose drifting columns carry an escape sequence and markup."""
    rng = np.random.default_rng(0)
    names = [HOSTILE, "[/x] [bold]loud"]
    reference = pd.DataFrame({name: rng.normal(size=500) for name in names})
    current = pd.DataFrame({name: rng.normal(3.0, 1.0, size=500) for name in names})
    paths = tmp_path / "reference.parquet", tmp_path / "current.parquet"
    reference.to_parquet(paths[0])
    current.to_parquet(paths[1])
    return paths


def test_the_results_table_shows_the_column_name_escaped(tmp_path: Path) -> None:
    reference, current = _files(tmp_path)
    args = ["evaluate", "--check", "drift.numeric", "--reference", str(reference), "--current", str(current)]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.stdout and "\u202e" not in out.stdout
    assert "\\x1b[2J" in out.stdout and "[/x] [bold]loud" in out.stdout.replace("\n", "")


def test_an_error_naming_the_column_prints_its_brackets(tmp_path: Path) -> None:
    reference, current = _files(tmp_path)
    args = ["evaluate", "-c", "drift.numeric", "-r", str(reference), "--current", str(current)]
    out = runner.invoke(app, [*args, "--param", f"label={HOSTILE}[/x]"])
    assert out.exit_code == EXIT_USAGE, out.output
    assert "\x1b" not in out.stderr and "[/x]" in out.stderr


def test_console_alerts_show_the_column_name_escaped(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'history.db'}")
    Base.metadata.create_all(engine)
    stream = io.StringIO()
    results = [result("drift.numeric", HOSTILE, "high", metrics={"psi": 0.5})]
    try:
        process_alerts(
            engine, monitor="acs", batch_id="b1", results=results, config=AlertConfig(), stream=stream
        )
    finally:
        engine.dispose()
    assert "\x1b" not in stream.getvalue() and f"drift.numeric · {SHOWN}: opened" in stream.getvalue()


def test_log_lines_are_escaped_and_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A warning quoting a driver's multi-line error about the column keeps its first line, escaped."""
    _show_progress()
    logging.getLogger("driftline.tests").warning("column %s: failed\n\tIs the server running?", HOSTILE)
    logged = capsys.readouterr().err.splitlines()
    assert len(logged) == 1 and logged[0].endswith(f"WARNING column {SHOWN}: failed")
