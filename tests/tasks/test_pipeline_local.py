"""The monitor core under the plain engine: no Prefect, real census data, a real history store, and
checks that hang or run out of memory stopped without losing the others."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftline.tasks.config.spec import load_spec
from driftline.tasks.history.models import ResultRow, Run
from driftline.tasks.run.pipeline import run_monitor
from tests.demo import BLOCK_PREFECT, count, write_spec
from tests.runaway_checks import registered

ROOT = Path(__file__).parents[2]

NO_PREFECT = (
    BLOCK_PREFECT
    + """
import importlib, pkgutil
import driftline.checks, driftline.tasks
for package in (driftline.checks, driftline.tasks):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
from driftline import run_monitor, load_spec
summary = run_monitor(load_spec(sys.argv[1]), "2018-12")
assert "prefect" not in sys.modules
print(summary.status, summary.engine, len(summary.results))
"""
)


def test_every_core_module_imports_and_a_run_completes_without_prefect(
    demo_data: Path, tmp_path: Path
) -> None:
    """checks/ and tasks/ never import Prefect: with Prefect blocked, all of them import and a run works."""
    spec = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}")
    done = subprocess.run(
        [sys.executable, "-c", NO_PREFECT, str(spec)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    status, engine, results = done.stdout.split()
    assert (status, engine) == ("failed", "local") and int(results) > 20


@pytest.fixture
def runaway_checks() -> Iterator[None]:
    """The test-only checks that never finish, in the catalog for one test."""
    with registered():
        yield


@pytest.mark.usefixtures("runaway_checks")
def test_a_stuck_check_and_a_runaway_allocation_are_stopped_and_every_other_result_is_stored(
    demo_data: Path, tmp_path: Path
) -> None:
    """Process isolation: the stuck check times out, the hungry one hits its memory limit; both become
    `error` results naming why, and the other checks are evaluated and stored."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    checks = [
        "drift.numeric",
        {"check": "testing.sleeps_forever", "timeout_s": 2},
        "testing.allocates_forever",
        "drift.prediction",
    ]
    execution = {"isolation": "process", "timeout_s": 60, "memory_mb": 400}
    spec = write_spec(demo_data, tmp_path, store_url=url, checks=checks, execution=execution, retrain=None)
    started = time.monotonic()
    summary = run_monitor(load_spec(spec), "2018-12")
    elapsed = time.monotonic() - started

    by_check = {r["check"]: r for r in summary.to_dict()["results"]}
    assert by_check["testing.sleeps_forever"]["status"] == "error"
    assert "timed out after 2 s" in by_check["testing.sleeps_forever"]["reason"]
    assert by_check["testing.allocates_forever"]["status"] == "error"
    assert "memory" in by_check["testing.allocates_forever"]["reason"].lower()
    ok = [r for r in summary.to_dict()["results"] if r["status"] == "ok"]
    assert {"schema.columns", "drift.numeric", "drift.prediction"} <= {r["check"] for r in ok}
    assert elapsed < 30
    assert count(url, Run) == 1
    metrics = sum(max(1, len(r["metrics"])) for r in summary.to_dict()["results"])
    assert count(url, ResultRow) == metrics


def test_thread_isolation_gives_the_same_results_as_process_isolation(
    demo_data: Path, tmp_path: Path
) -> None:
    """Worker processes change where a check runs, not what it computes."""
    results = {}
    for isolation in ("thread", "process"):
        folder = tmp_path / isolation
        folder.mkdir()
        spec = write_spec(
            demo_data,
            folder,
            store_url=f"sqlite:///{folder / 'h.db'}",
            execution={"isolation": isolation},
            retrain=None,
        )
        results[isolation] = run_monitor(load_spec(spec), "2017-12").to_dict()["results"]
    assert results["thread"] == results["process"]


def test_retraining_command_runs_once_per_failing_batch(demo_data: Path, tmp_path: Path) -> None:
    """Without an orchestrator, a failing run starts the spec's command with the failure on stdin;
    re-running the batch does not start it again (its incident has requested it)."""
    log = tmp_path / "retrain.jsonl"
    script = f"import sys; open({str(log)!r}, 'a').write(sys.stdin.read() + '\\n')"
    retrain = {"min_severity": "high", "command": [sys.executable, "-c", script]}
    spec_path = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=retrain)
    spec = load_spec(spec_path)
    first = run_monitor(spec, "2018-12")
    again = run_monitor(spec, "2018-12")
    passing = run_monitor(spec, "2016-06")

    [line] = log.read_text().splitlines()
    payload = json.loads(line)
    assert payload["event"] == "driftline.monitor.failed"
    assert (payload["monitor"], payload["batch_id"], payload["severity"]) == (
        "acs-employment",
        "2018-12",
        "high",
    )
    assert payload["spec_path"] == str(spec_path.resolve())
    assert {c["severity"] for c in payload["failing_checks"]} == {"high"}
    assert first.retraining["command"] == {"returncode": 0}
    [incident] = first.retraining["incidents"]
    assert again.retraining == {
        "skipped": f"retraining already requested for incident {incident} at batch 2018-12"
    }
    assert passing.retraining is None


def test_retraining_that_fails_is_reported_and_the_run_still_stored(demo_data: Path, tmp_path: Path) -> None:
    """A failing retraining command is an outcome in the summary, not a crashed run."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    retrain = {"min_severity": "high", "command": [sys.executable, "-c", "raise SystemExit(4)"]}
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=retrain)
    summary = run_monitor(load_spec(spec), "2018-12")
    assert "exited with 4" in summary.retraining["command"]["error"]
    assert summary.stored.startswith("stored run") and count(url, Run) == 1
