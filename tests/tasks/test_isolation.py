"""Forked workers: values and exceptions come back, timeouts and memory limits are enforced, nothing
is left running, and the parent's frames reach the worker without being pickled."""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from driftline.checks.errors import CheckInputError
from driftline.tasks.run.isolation import CheckTimeout, WorkerDied, WorkerRaised, run_isolated


def test_the_value_comes_back() -> None:
    assert run_isolated(lambda: {"psi": 0.25, "rows": [1, 2]}, timeout_s=30) == {"psi": 0.25, "rows": [1, 2]}


def test_an_exception_keeps_its_type_and_message() -> None:
    def bad_input() -> None:
        raise CheckInputError("column 'age' is missing")

    with pytest.raises(CheckInputError, match="column 'age' is missing"):
        run_isolated(bad_input, timeout_s=30)


def test_an_exception_that_cannot_be_pickled_is_described() -> None:
    class Local(Exception):
        pass

    def raises_local() -> None:
        raise Local("not importable")

    with pytest.raises(WorkerRaised, match="Local: not importable"):
        run_isolated(raises_local, timeout_s=30)


def test_a_stuck_worker_is_stopped_at_its_timeout_and_reaped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def stuck() -> None:
        pid_file.write_text(str(os.getpid()))
        while True:
            time.sleep(0.1)

    started = time.monotonic()
    with pytest.raises(CheckTimeout, match="timed out after 1 s"):
        run_isolated(stuck, timeout_s=1)
    assert time.monotonic() - started < 5
    assert not Path(f"/proc/{int(pid_file.read_text())}").exists()


def test_a_runaway_allocation_hits_the_memory_limit_quickly() -> None:
    def hoard() -> None:
        chunks = []
        while True:
            chunks.append(np.ones(2**24))  # 128 MB a step

    started = time.monotonic()
    with pytest.raises(MemoryError, match="300 MB"):
        run_isolated(hoard, timeout_s=60, memory_mb=300)
    assert time.monotonic() - started < 20


def test_a_worker_that_exits_without_answering_is_named() -> None:
    with pytest.raises(WorkerDied, match="exited with code 3"):
        run_isolated(lambda: os._exit(3), timeout_s=30)


def test_a_killed_worker_is_named_with_its_signal() -> None:
    with pytest.raises(WorkerDied, match="SIGKILL"):
        run_isolated(lambda: os.kill(os.getpid(), 9), timeout_s=30)


class Unpicklable(pd.DataFrame):
    """A frame that refuses to be pickled: if it reached the worker by pickle, the call would fail."""

    def __reduce__(self):  # type: ignore[override]
        raise pickle.PicklingError("this frame must not be pickled")


def test_the_frame_reaches_the_worker_without_a_pickle() -> None:
    frame = Unpicklable({"x": np.arange(1_000_000, dtype=float)})
    with pytest.raises(pickle.PicklingError):
        pickle.dumps(frame)
    assert run_isolated(lambda: float(frame["x"].sum()), timeout_s=30) == float(np.arange(1_000_000).sum())


def test_concurrent_calls_from_threads_each_get_their_own_outcome() -> None:
    def job(i: int) -> object:
        if i == 0:
            return run_isolated(lambda: time.sleep(60), timeout_s=1)
        return run_isolated(lambda: i * i, timeout_s=30)

    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(job, i) for i in range(4)]
    with pytest.raises(CheckTimeout):
        futures[0].result()
    assert [f.result() for f in futures[1:]] == [1, 4, 9]
    assert time.monotonic() - started < 10


class GatedHandler(logging.Handler):
    """A handler whose own lock another thread of the parent may hold when a worker forks (as a rich
    console's lock, or an orchestrator's log queue, may be)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self.gate:
            pass


def _logs_and_answers() -> str:
    logging.getLogger("driftline.test.gated").warning("a worker logs")
    return "answered"


def test_a_worker_logs_through_none_of_the_parent_s_handlers() -> None:
    """Forked while the parent's handler is held, a worker that logs still answers (it would block
    for ever on the copied lock)."""
    handler = GatedHandler()
    logger = logging.getLogger("driftline.test.gated")
    logger.addHandler(handler)
    handler.gate.acquire()
    try:
        assert run_isolated(_logs_and_answers, timeout_s=20) == "answered"
    finally:
        handler.gate.release()
        logger.removeHandler(handler)
