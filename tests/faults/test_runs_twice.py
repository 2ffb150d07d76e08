"""A batch run twice, or by two processes at once, is stored once: same runs, results and alerts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from driftline.tasks.history.models import AlertOutbox, Incident, ResultRow, Run
from tests.demo import count, write_spec

ROOT = Path(__file__).parents[2]
RUN = (
    "import sys\n"
    "from driftline import load_spec, run_monitor\n"
    "run_monitor(load_spec(sys.argv[1]), '2018-12')\n"
)


def totals(url: str) -> dict[str, int]:
    return {model.__name__: count(url, model) for model in (Run, ResultRow, Incident, AlertOutbox)}


@pytest.mark.postgres
def test_two_processes_running_the_same_batch_store_one_copy(
    demo_data: Path, tmp_path: Path, postgres_url: str
) -> None:
    """Concurrent runs of one batch on PostgreSQL, then a third: one run, one set of results, one alert."""
    spec = write_spec(demo_data, tmp_path, store_url=postgres_url, retrain=None)
    runs = [
        subprocess.Popen([sys.executable, "-c", RUN, str(spec)], cwd=ROOT, env=dict(os.environ))
        for _ in range(2)
    ]
    assert [r.wait(180) for r in runs] == [0, 0]
    once = totals(postgres_url)
    subprocess.run([sys.executable, "-c", RUN, str(spec)], cwd=ROOT, check=True)
    assert totals(postgres_url) == once
    assert once["Run"] == 1 and once["AlertOutbox"] == 1 and once["ResultRow"] > 100
