"""What an engine supplies to the monitor core, and the plain engine itself (no orchestrator).

The core (`driftline.tasks.run.pipeline`) calls a driver for everything that differs between engines:
how an I/O step runs (here: in-process with the shared retry policy), how the checks fan out (here:
a few forked workers, each computing checks one after another within each check's own limits), how
a partitioned batch's partitions are mapped (here: a process pool, or a Dask cluster), where logs go,
how retraining starts and how the run report is published. An orchestrator subclasses `Driver` and
overrides what it does its own way.
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import queue
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from driftline.checks.base import Check
from driftline.checks.result import CheckResult
from driftline.checks.runner import failure_result
from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.retraining.actions import RetrainRequest, trigger_plain
from driftline.tasks.run.isolation import Lane, fork_available, run_isolated
from driftline.tasks.run.steps import IO_RETRIES

T = TypeVar("T")
log = logging.getLogger("driftline.run")


@dataclass
class CheckJob:
    """One check of a run, ready to evaluate in isolation with its time and memory limits."""

    check: Check
    label: str
    evaluate: Callable[[], list[CheckResult]]
    isolation: Literal["process", "thread"] = "process"
    timeout_s: float | None = None
    memory_mb: int | None = None

    @property
    def forks(self) -> bool:
        """Whether the check is evaluated in a worker process (else in the calling thread)."""
        return self.isolation == "process" and fork_available()

    def run(self) -> list[CheckResult]:
        """The check's results, in a worker of its own; a timeout or a dead worker becomes an `error`
        result, never a lost check."""
        if not self.forks:
            return self._settled(self.evaluate)
        return self._settled(
            lambda: run_isolated(
                self.evaluate, timeout_s=self.timeout_s, memory_mb=self.memory_mb, label=self.label
            )
        )

    def run_in(self, lane: Lane, index: int) -> list[CheckResult]:
        """The check's results computed by `lane`, whose calls hold this job's `evaluate` at `index`."""
        return self._settled(lambda: lane.compute(index, timeout_s=self.timeout_s, memory_mb=self.memory_mb))

    def _settled(self, compute: Callable[[], list[CheckResult]]) -> list[CheckResult]:
        try:
            return compute()
        except Exception as exc:
            return self.failed(exc)

    def failed(self, exc: BaseException) -> list[CheckResult]:
        """The single `error` result that stands for this check when it could not finish."""
        return [failure_result(self.check.name, exc, None)]


def import_shared(jobs: list[CheckJob]) -> None:
    """Import, before the workers fork, each module that two or more forked checks name in their
    `Check.worker_imports`: the workers then share one copy (copy-on-write) instead of each paying
    its import (scipy.stats, 0.5-1 CPU s, under both scikit-learn and Great Expectations). A module
    that does not import is left to the checks, which report it their own way."""
    named = Counter(name for job in jobs if job.forks for name in set(job.check.worker_imports))
    for name, count in named.items():
        if count > 1:
            try:
                importlib.import_module(name)
            except ImportError:
                log.debug("%s not imported before the workers fork", name, exc_info=True)


def started_first(jobs: list[CheckJob]) -> list[int]:
    """The jobs' indices in the order to start them: checks slow to start (`Check.slow_start`) first,
    the rest in their order, so a slow one overlaps the others rather than finishing last."""
    return sorted(range(len(jobs)), key=lambda i: not jobs[i].check.slow_start)


class Driver:
    """The plain engine: steps in-process, checks in worker processes fanned out from a thread pool,
    partitions in a process pool or, given a `distributed.Client`, as tasks on its Dask cluster."""

    name = "local"

    def __init__(self, dask_client: Any = None) -> None:
        self.dask_client = dask_client

    @property
    def logger(self) -> Any:
        """Where the run's progress is logged."""
        return log

    @property
    def run_id(self) -> str | None:
        """The orchestrator's id of this run (stored with the run), if any."""
        return None

    @property
    def run_url(self) -> str | None:
        """A link to this run in the orchestrator's UI (shown in alerts), if any."""
        return None

    def step(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        """Run one I/O step, retried on transient errors."""
        return IO_RETRIES.call(fn, *args)

    def fan_out(self, jobs: list[CheckJob], workers: int) -> list[list[CheckResult]]:
        """Every job's results, in job order, `workers` at a time, slow starters started first. Each
        of `workers` threads serves one lane (a forked worker computing its jobs one after another,
        each within the job's own limits; forked anew after a job that stopped it), so a run of many
        cheap checks forks a few workers, not one per check."""
        import_shared(jobs)
        pending: queue.SimpleQueue[int] = queue.SimpleQueue()
        for i in started_first(jobs):
            pending.put(i)
        done: dict[int, list[CheckResult]] = {}
        calls = [job.evaluate for job in jobs]

        def serve() -> None:
            lane: Lane | None = None
            try:
                while (i := _next(pending)) is not None:
                    job = jobs[i]
                    self.check_started(i, job)
                    if not job.forks:
                        done[i] = job.run()
                    else:
                        if lane is None or lane.closed:
                            lane = Lane(calls, "checks")
                        done[i] = job.run_in(lane, i)
                    self.check_finished(i, job, done[i])
            finally:
                if lane is not None:
                    lane.close()

        threads = max(1, min(workers, len(jobs)))
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="driftline-check") as pool:
            # Each thread runs in a copy of the caller's context (an orchestrator's run context included).
            serving = [pool.submit(contextvars.copy_context().run, serve) for _ in range(threads)]
            for future in serving:
                future.result()
        return [done[i] for i in range(len(jobs))]

    def check_started(self, index: int, job: CheckJob) -> None:
        """Called in the serving thread as job `index` of `fan_out` starts; an orchestrator records it."""

    def check_finished(self, index: int, job: CheckJob, results: list[CheckResult]) -> None:
        """Called in the serving thread with job `index`'s results; an orchestrator records them."""

    def map_partitions(
        self, fn: Callable[[Any, Any], T], partitions: Sequence[Any], work: Any, workers: int
    ) -> Iterator[T]:
        """`fn(partition, work)` for every partition, yielded in partition order (the caller merges them
        as they come, holding a few at a time)."""
        if self.dask_client is not None:
            yield from _on_dask(self.dask_client, fn, partitions, work)
        elif workers <= 1 or len(partitions) <= 1:
            yield from (fn(p, work) for p in partitions)
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                yield from pool.map(fn, partitions, [work] * len(partitions))

    def secret(self, block: str) -> str | None:
        """A secret stored by the orchestrator; the plain engine has none (use an environment variable)."""
        self.logger.error("secret %r needs the Prefect or Airflow engine; use its `*_env` key instead", block)
        return None

    def retrain(self, spec: MonitorSpec, request: RetrainRequest, state_dir: Path) -> dict[str, Any]:
        """Start retraining as the spec says; actions of another engine are reported as not run."""
        retrain = spec.retrain
        assert retrain is not None
        outcome = trigger_plain(retrain, request, state_dir)
        if retrain.deployment or retrain.emits:
            outcome["prefect"] = {"skipped": "a deployment run or the failure event needs the Prefect engine"}
        return outcome

    def publish(self, summary: dict[str, Any], figures: list[Path]) -> None:
        """Publish the run report where the engine shows it; the plain engine has the files only."""


def _next(pending: queue.SimpleQueue[int]) -> int | None:
    """The next job index to run, or None when every job is taken."""
    try:
        return pending.get_nowait()
    except queue.Empty:
        return None


def _on_dask(client: Any, fn: Callable[[Any, Any], T], partitions: Sequence[Any], work: Any) -> Iterator[T]:
    """Partitions as tasks on a Dask cluster: `work` (checks, profiles, model) sent to every worker
    once, then each task reads and evaluates one partition; each state is released once yielded."""
    shared = client.scatter(work, broadcast=True)
    futures = client.map(fn, list(partitions), work=shared, pure=False)
    for future in futures:
        yield future.result()
        future.release()
