"""Lanes: a few forked workers compute many checks one after another, and every check keeps its own time
and memory limit, its own error result when it fails, and its place in the results."""

from __future__ import annotations

import contextvars
import os
import resource
import threading
import time
from functools import partial

import pytest

from driftline.checks.registry import create
from driftline.tasks.run.driver import CheckJob, Driver
from driftline.tasks.run.isolation import CheckTimeout, Lane, WorkerDied


def _pid() -> int:
    return os.getpid()


def _soft_memory_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_AS)[0]


def test_a_lane_computes_its_calls_in_one_worker_in_the_order_asked() -> None:
    calls = [partial(pow, 2, 10), _pid, partial(pow, 3, 2)]
    with Lane(calls) as lane:
        assert [lane.compute(i, timeout_s=30) for i in (2, 0)] == [9, 1024]
        first, second = lane.compute(1, timeout_s=30), lane.compute(1, timeout_s=30)
    assert first == second == lane.process.pid != os.getpid()
    assert not lane.process.is_alive()


def test_a_memory_limit_holds_for_its_call_only() -> None:
    """The cap is what the worker has when the call starts plus `memory_mb`; the next call is free."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    with Lane([_soft_memory_limit, _soft_memory_limit]) as lane:
        capped = lane.compute(0, timeout_s=30, memory_mb=64)
        free = lane.compute(1, timeout_s=30)
    assert free == hard
    assert 64 * 2**20 < capped < (hard if hard != resource.RLIM_INFINITY else 2**62)


def test_a_call_past_its_time_limit_stops_the_lane() -> None:
    with Lane([partial(time.sleep, 60), _pid]) as lane:
        started = time.monotonic()
        with pytest.raises(CheckTimeout, match=r"timed out after 0\.5 s"):
            lane.compute(0, timeout_s=0.5)
        assert time.monotonic() - started < 5
        assert lane.closed and not lane.process.is_alive()
        with pytest.raises(RuntimeError, match="closed"):
            lane.compute(1, timeout_s=30)


def _job(name: str, evaluate, timeout_s: float = 30.0) -> CheckJob:
    return CheckJob(create("drift.numeric"), name, evaluate, timeout_s=timeout_s)


def test_the_fan_out_forks_one_worker_per_lane_and_keeps_job_order() -> None:
    jobs = [_job(f"job{i}", _pid) for i in range(8)]
    outcomes = Driver().fan_out(jobs, workers=2)
    assert len(outcomes) == 8
    assert 1 <= len(set(outcomes)) <= 2 and os.getpid() not in outcomes


def test_a_job_that_hangs_or_kills_its_worker_is_an_error_and_the_others_go_on() -> None:
    jobs = [
        _job("fine", partial(pow, 2, 3)),
        _job("hangs", partial(time.sleep, 60), timeout_s=1.0),
        _job("dies", partial(os._exit, 3)),
        *[_job(f"after{i}", partial(pow, i, 2)) for i in range(4)],
    ]
    started = time.monotonic()
    outcomes = Driver().fan_out(jobs, workers=1)  # one lane: every later job needs a new worker
    assert time.monotonic() - started < 20
    assert outcomes[0] == 8 and outcomes[3:] == [0, 1, 4, 9]
    (hung,), (died,) = outcomes[1], outcomes[2]
    assert hung.status == died.status == "error"
    assert "timed out after 1 s" in hung.reason and "exited with code 3" in died.reason


def test_a_dead_worker_is_named_as_before() -> None:
    with Lane([partial(pow, 1, 1), partial(os._exit, 5)]) as lane:
        lane.compute(0, timeout_s=30)
        with pytest.raises(WorkerDied, match="exited with code 5"):
            lane.compute(1, timeout_s=30)


RUN = contextvars.ContextVar("run", default=None)


class Recording(Driver):
    """Records what an orchestrator sees of each job: its start and its results, with the caller's
    context variable as the serving thread sees it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, int, object, object]] = []
        self.lock = threading.Lock()

    def check_started(self, index: int, job: CheckJob) -> None:
        with self.lock:
            self.seen.append(("started", index, RUN.get(), None))

    def check_finished(self, index: int, job: CheckJob, results: list) -> None:
        with self.lock:
            self.seen.append(("finished", index, RUN.get(), results))


def test_every_job_is_reported_started_then_finished_in_the_callers_context() -> None:
    jobs = [
        _job("fine", partial(pow, 2, 3)),
        _job("dies", partial(os._exit, 3)),
        _job("last", partial(pow, 3, 2)),
    ]
    driver = Recording()
    RUN.set("flow-run-1")
    outcomes = driver.fan_out(jobs, workers=2)
    assert {context for _, _, context, _ in driver.seen} == {"flow-run-1"}
    order = [(kind, index) for kind, index, _, _ in driver.seen]
    for i in range(3):
        assert order.count(("started", i)) == order.count(("finished", i)) == 1
        finished = order.index(("finished", i))
        assert order.index(("started", i)) < finished and driver.seen[finished][3] == outcomes[i]
    assert outcomes[0] == 8 and outcomes[2] == 9 and outcomes[1][0].status == "error"
