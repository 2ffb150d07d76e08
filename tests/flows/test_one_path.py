"""One evaluation path: a custom check named in the spec as `module:Class` (its module beside the
spec) that never returns is stopped at its `timeout_s` by `driftline run`, `driftline run
--partitioned` and a late-label recompute alike; each run ends within seconds with an error result
naming the timeout, and every other result is stored."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from driftline.checks import registry
from driftline.flows.cli import app
from driftline.tasks.history.db import connected_store
from driftline.tasks.history.query import latest_results
from tests.scale.conftest import BATCH, write_monitor
from tests.scale.helpers import mixed_frame

NEVER_RETURNS = '''
"""A business check that never returns (a stuck query, say)."""

import time
from dataclasses import dataclass
from typing import ClassVar

from driftline.checks import Check


@dataclass(kw_only=True)
class NeverReturns(Check):
    """Waits for ever on a labelled batch."""

    name: ClassVar[str] = "business.never_returns"
    family: ClassVar[str] = "business"
    needs: ClassVar[frozenset[str]] = frozenset({"label"})

    def fit(self, reference, columns):
        return None

    def evaluate(self, current, profile, columns):
        while True:
            time.sleep(1)
'''
STUCK_PARTIAL = '''

from driftline.checks.mergeable import Mergeable


@dataclass(kw_only=True)
class PartialNeverReturns(Mergeable):
    """Waits for ever on each partition."""

    name: ClassVar[str] = "business.partial_never_returns"
    family: ClassVar[str] = "business"

    def fit(self, reference, columns):
        return None

    def partial(self, current, profile, columns):
        while True:
            time.sleep(1)

    def merge(self, states):
        return None

    def finish(self, state, profile, columns):
        return []
'''
STUCK = {"check": "stuck_check:NeverReturns", "timeout_s": 3}
NAME = "business.never_returns"
# Far below the default limit of 600 s: the run is not waiting on the stuck check.
RUN_LIMIT_S = 90
runner = CliRunner()


@pytest.fixture(autouse=True)
def forget_the_custom_check() -> Iterator[None]:
    """Each test loads the custom check from its own folder."""
    yield
    for name in (NAME, "business.partial_never_returns"):
        registry._REGISTRY.pop(name, None)
    sys.modules.pop("stuck_check", None)


def with_stuck_check(spec_path: Path, **changes: object) -> Path:
    """The spec with the stuck check added, its module beside it, and checks in worker processes."""
    (spec_path.parent / "stuck_check.py").write_text(NEVER_RETURNS + STUCK_PARTIAL)
    spec = yaml.safe_load(spec_path.read_text())
    spec["checks"].append(STUCK)
    spec["execution"] = {"isolation": "process", "workers": 2}
    spec.update(changes)
    spec_path.write_text(yaml.safe_dump(spec))
    return spec_path


def run(spec_path: Path, batch: str, *flags: str) -> tuple[dict, float]:
    """`driftline run --json` of one batch: the summary and the seconds it took."""
    started = time.monotonic()
    result = runner.invoke(app, ["run", str(spec_path), "--batch", batch, "--json", *flags])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), time.monotonic() - started


def stored(spec_path: Path, name: str, batch: str) -> dict[str, dict]:
    """The stored results of a batch, by (check, target)."""
    with connected_store(f"sqlite:///{spec_path.parent / 'history.db'}") as engine:
        return {(r["check"], r["target"]): r for r in latest_results(engine, name, batch)}


def assert_stopped_and_the_rest_stored(results: dict[tuple[str, str], dict]) -> None:
    stuck = results[(NAME, "*")]
    assert stuck["status"] == "error" and "timed out after 3 s" in stuck["reason"], stuck
    others = {key: r for key, r in results.items() if key[0] != NAME}
    assert {"performance.overall", "drift.numeric"} <= {check for check, _ in others}
    assert all(r["status"] == "ok" for (check, _), r in others.items() if check == "performance.overall")


@pytest.mark.parametrize("flags", [(), ("--partitioned",)], ids=["whole batch", "partitioned"])
def test_a_stuck_custom_check_is_stopped_at_its_timeout(
    monitor_data: Path, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    template = "parts/{batch}/*.parquet" if flags else "single/{batch}.parquet"
    spec_path = with_stuck_check(write_monitor(monitor_data, tmp_path, str(monitor_data / template)))
    summary, seconds = run(spec_path, BATCH, *flags)
    assert seconds < RUN_LIMIT_S
    assert_stopped_and_the_rest_stored(stored(spec_path, "scale", BATCH))
    assert any(r["check"] == NAME and r["status"] == "error" for r in summary["results"])


BATCHES = ("2024-05-01", "2024-05-02")


def test_a_stuck_custom_check_is_stopped_in_a_late_label_recompute(tmp_path: Path) -> None:
    """Batch 1 arrives without labels; they land before batch 2, whose run recomputes batch 1's label
    checks, the stuck one among them."""
    mixed_frame(3000, seed=21).assign(id=np.arange(3000)).to_parquet(tmp_path / "reference.parquet")
    for b, batch_id in enumerate(BATCHES):
        frame = mixed_frame(1500, seed=30 + b, shift=0.3).assign(id=np.arange(1500) + 10_000 * (b + 1))
        frame.drop(columns="label").to_parquet(tmp_path / f"{batch_id}.parquet", index=False)
        frame[["id", "label"]].to_parquet(tmp_path / f"labels-{batch_id}.pending", index=False)
    spec_path = write_monitor(tmp_path, tmp_path, str(tmp_path / "{batch}.parquet"), name="late")
    spec_path = with_stuck_check(spec_path, labels={"path": "labels-{batch}.parquet"})
    spec = yaml.safe_load(spec_path.read_text())
    spec["columns"]["id"] = "id"
    spec_path.write_text(yaml.safe_dump(spec))

    first, _ = run(spec_path, BATCHES[0])
    waiting = next(r for r in first["results"] if r["check"] == NAME)
    assert waiting["status"] == "skipped" and "no labels yet" in waiting["reason"]
    (tmp_path / f"labels-{BATCHES[0]}.pending").rename(tmp_path / f"labels-{BATCHES[0]}.parquet")

    second, seconds = run(spec_path, BATCHES[1])
    assert seconds < RUN_LIMIT_S
    assert [j["batch_id"] for j in second["labels"]] == [BATCHES[0]]
    assert NAME in second["labels"][0]["checks"]
    assert_stopped_and_the_rest_stored(stored(spec_path, "late", BATCHES[0]))


def test_a_stuck_partial_state_is_stopped_and_the_other_checks_stored(
    monitor_data: Path, tmp_path: Path
) -> None:
    """A mergeable check that never returns on a partition: the partition's evaluation is stopped at
    its checks' largest time limit, and every check of the partition ends in an error naming it."""
    spec_path = write_monitor(monitor_data, tmp_path, str(monitor_data / "parts/{batch}/*.parquet"))
    spec_path = with_stuck_check(spec_path)
    spec = yaml.safe_load(spec_path.read_text())
    spec["checks"] = [c for c in spec["checks"] if c != STUCK]
    spec["checks"].append({"check": "stuck_check:PartialNeverReturns", "timeout_s": 3})
    spec["execution"]["timeout_s"] = 3
    spec_path.write_text(yaml.safe_dump(spec))
    _, seconds = run(spec_path, BATCH, "--partitioned")
    assert seconds < RUN_LIMIT_S
    results = stored(spec_path, "scale", BATCH)
    stuck = results[("business.partial_never_returns", "*")]
    assert stuck["status"] == "error" and "timed out after 3 s" in stuck["reason"]
    assert "part-" in stuck["reason"]  # names the partition
    gathered = results[("drift.label", "label")]  # not mergeable: evaluated on the gathered batch
    assert gathered["status"] == "ok"
