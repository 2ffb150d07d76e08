"""`make demo` without a Prefect server: `--engine local` imports no Prefect, and the default engine
falls back to the local one, saying so in one line, when no temporary server can start."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from rich.console import Console

from driftline.flows import demo
from tests.demo import BLOCK_PREFECT, write_spec

LOCAL_WITHOUT_PREFECT = (
    BLOCK_PREFECT
    + """
from contextlib import ExitStack
from rich.console import Console
from driftline.flows.demo import start_engine

with ExitStack() as stack:
    start_engine("local", stack, Console())
assert "prefect" not in sys.modules
"""
)


def test_the_local_engine_needs_no_prefect() -> None:
    done = subprocess.run([sys.executable, "-c", LOCAL_WITHOUT_PREFECT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


STALLED = "the temporary Prefect server made no progress for 60 s (no CPU used) after 75 s"


@contextmanager
def no_server():
    raise RuntimeError(STALLED)
    yield  # pragma: no cover


def test_without_a_prefect_server_the_demo_runs_locally_and_says_why(
    demo_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One line names the server's failure and the engine used instead; the batch then runs and is
    stored by the local engine."""
    monkeypatch.setattr("driftline.flows.temporary_server.prefect_api", no_server)
    out = io.StringIO()
    with ExitStack() as stack:
        run = demo.start_engine("prefect", stack, Console(file=out, width=200))
        url = f"sqlite:///{tmp_path / 'h.db'}"
        summary = run(write_spec(demo_data, tmp_path, store_url=url, checks=["drift.numeric"]), "2018-12")
    lines = out.getvalue().splitlines()
    assert lines[1:] == [f"no Prefect server ({STALLED}): running on the local engine instead"]
    assert (summary["engine"], summary["batch_id"], summary["status"]) == ("local", "2018-12", "failed")
