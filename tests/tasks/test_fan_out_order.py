"""Checks slow to start are started first, results still come back in plan order."""

from __future__ import annotations

import threading
from functools import partial

from driftline.checks import registry
from driftline.checks.result import CheckResult
from driftline.tasks.run.driver import CheckJob, Driver, started_first

NAMES = ["drift.numeric", "expectations.suite", "drift.categorical", "abnormal.nulls"]


def test_a_slow_starter_is_started_first_and_results_keep_their_order() -> None:
    started: list[str] = []
    lock = threading.Lock()

    def evaluate(name: str) -> list[CheckResult]:
        with lock:
            started.append(name)
        return [CheckResult(check=name, target="*")]

    jobs = [
        CheckJob(check=registry.create(n), label=n, evaluate=partial(evaluate, n), isolation="thread")
        for n in NAMES
    ]
    assert started_first(jobs) == [1, 0, 2, 3]
    outcomes = Driver().fan_out(jobs, workers=1)
    assert started[0] == "expectations.suite"
    assert [o[0].check for o in outcomes] == NAMES
