"""Checks slow to start are started first, results still come back in plan order; modules two
forked checks import are imported once, before the workers fork."""

from __future__ import annotations

import threading
from functools import partial

from driftline.checks import registry
from driftline.checks.result import CheckResult
from driftline.tasks.run import driver
from driftline.tasks.run.driver import CheckJob, Driver, import_shared, started_first

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


def test_modules_two_forked_checks_import_are_imported_before_the_workers_fork(monkeypatch) -> None:
    def job(name: str, isolation: str = "process") -> CheckJob:
        return CheckJob(check=registry.create(name), label=name, evaluate=list, isolation=isolation)

    attribution, suite, drift = job("attribution.auc"), job("expectations.suite"), job("drift.numeric")
    suite_in_thread, other_suite = job("expectations.suite", isolation="thread"), job("expectations.suite")
    imported: list[str] = []

    def import_module(name: str) -> None:
        imported.append(name)
        if name == "great_expectations":
            raise ImportError(name)  # not installed: left to the check, which is skipped its own way

    monkeypatch.setattr(driver.importlib, "import_module", import_module)
    monkeypatch.setattr(driver, "fork_available", lambda: True)
    import_shared([attribution, suite, drift])
    assert imported == ["scipy.stats"]  # each names it; the tree and GX stay in their own worker
    imported.clear()
    import_shared([attribution, drift])
    import_shared([attribution, suite_in_thread])  # no fork to share
    assert imported == []
    import_shared([suite, other_suite])
    assert sorted(imported) == ["great_expectations", "scipy.stats"]
