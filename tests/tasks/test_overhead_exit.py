"""The command line leaves without the interpreter's module teardown, yet as the interpreter would:
other threads joined, exit handlers run, output flushed, the exit status kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from driftline.flows.cli import exit_code

LEAVES = """
import atexit, sys, threading, time
from pathlib import Path
from driftline.flows.cli import leave
folder = Path(sys.argv[1])
atexit.register(lambda: (folder / "atexit").write_text("ran"))
def late() -> None:
    time.sleep(0.5)
    (folder / "thread").write_text("joined")
threading.Thread(target=late).start()
sys.stdout.write("unflushed output")
leave(int(sys.argv[2]))
"""


@pytest.mark.parametrize("code", [0, 1, 3])
def test_leaving_joins_threads_runs_exit_handlers_flushes_and_keeps_the_status(
    tmp_path: Path, code: int
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LEAVES, str(tmp_path), str(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == code, done.stderr
    assert done.stdout == "unflushed output"
    assert (tmp_path / "atexit").read_text() == "ran" and (tmp_path / "thread").read_text() == "joined"


def test_exit_statuses_map_as_the_interpreters() -> None:
    assert exit_code(SystemExit()) == 0 and exit_code(SystemExit(None)) == 0
    assert exit_code(SystemExit(4)) == 4
    assert exit_code(SystemExit("a message")) == 1


def test_the_command_keeps_its_error_status_and_json(tmp_path: Path) -> None:
    cli = str(Path(sys.executable).with_name("driftline"))
    missing = tmp_path / "missing.yaml"
    done = subprocess.run([cli, "run", str(missing), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "cannot read the monitor spec" in json.loads(done.stdout)["error"]
