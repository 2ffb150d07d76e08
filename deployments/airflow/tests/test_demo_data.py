"""The example DAG's demo data: tasks of runs that start together build it once, never at the same time."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from driftline_airflow.example_dags import demo_data

TASKS = 4


def test_concurrent_tasks_build_the_demo_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[Path] = []

    def slow_build(folder: Path) -> Path:
        """Stands for the real build (seconds of training, the spec written last)."""
        builds.append(folder)
        time.sleep(0.3)
        (folder / "monitor.yaml").write_text("name: demo\n")
        return folder / "monitor.yaml"

    monkeypatch.setattr("driftline.data.demo.build_demo_data", slow_build)
    monkeypatch.delenv(demo_data.SPEC_ENV, raising=False)
    start = threading.Barrier(TASKS)

    def task() -> Path:
        start.wait(timeout=10)
        return demo_data.ensure_demo_spec(tmp_path / "demo")

    with ThreadPoolExecutor(TASKS) as pool:
        specs = list(pool.map(lambda _: task(), range(TASKS)))
    assert builds == [tmp_path / "demo"]
    assert specs == [(tmp_path / "demo" / "monitor.yaml").resolve()] * TASKS


def test_a_users_spec_is_used_as_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(demo_data.SPEC_ENV, str(tmp_path / "mine.yaml"))
    assert demo_data.ensure_demo_spec(tmp_path / "demo") == tmp_path / "mine.yaml"
    assert not (tmp_path / "demo").exists()
