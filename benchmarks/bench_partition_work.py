"""The partitioned Prefect flow on a Dask LocalCluster: the checks, profiles and model (the partition
work) sent with every partition task, against sent once as one upstream task's result.

    python -m benchmarks.bench_partition_work                        # 10 partitions, 500,000 rows
    python -m benchmarks.bench_partition_work --reference-rows 200000  # larger profiles

Data from benchmarks.bench_dask (40 numeric and 10 categorical features). Both ways run in one process
against one temporary Prefect server and one 2-worker LocalCluster, after a warm-up run that fits the
profiles. Measured: the bytes of the task specs the scheduler sends to workers (each pickled as it
starts processing), how many times the workers unpickle the work (its class counts in each process)
times its pickled size, the tasks each worker was given, and the wall time of the flow run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.protocol.pickle import dumps
from prefect import flow, task

from benchmarks.bench_dask import BATCH, generate, write_spec
from benchmarks.measure import table
from driftline.flows.prefect_driver import IN_MEMORY, PrefectDriver
from driftline.tasks.config.spec import load_spec
from driftline.tasks.run.partitioned import PartitionWork, run_partitioned

WORKERS = 2
# The partition work's pickled size, recorded by `counted` in the flow.
WORK_BYTES: list[int] = []
# Times a `CountedWork` was unpickled in this process (read on each worker with `client.run`).
UNPICKLED = 0


class CountedWork(PartitionWork):
    """The partition work, counting in each process how many times it is unpickled there."""

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return revive, (self.jobs, self.roles, self.model)


def revive(jobs: Any, roles: Any, model: Any) -> CountedWork:
    global UNPICKLED
    UNPICKLED += 1
    return CountedWork(jobs, roles, model)


def unpickled() -> int:
    return UNPICKLED


def reset() -> None:
    global UNPICKLED
    UNPICKLED = 0


class CountingDriver(PrefectDriver):
    """The Prefect driver given the work as a `CountedWork`, its pickled size recorded; with
    `per_task`, the former mapping, where the work is a parameter of every partition task."""

    def __init__(self, per_task: bool) -> None:
        super().__init__()
        self.per_task = per_task

    def map_partitions(
        self, fn: Callable[..., Any], partitions: Sequence[Any], work: Any, workers: int
    ) -> Iterator[Any]:
        work = CountedWork(work.jobs, work.roles, work.model)
        WORK_BYTES.append(len(cloudpickle.dumps(work)))
        if not self.per_task:
            yield from super().map_partitions(fn, partitions, work, workers)
            return
        as_task = task(fn, name="partition", **IN_MEMORY)
        futures = [as_task.submit(p, work) for p in partitions]
        for future in futures:
            yield future.result()


@flow(name="bench-partition-work")
def bench_flow(spec_path: str, per_task: bool) -> dict[str, Any]:
    """The partitioned monitor with the former mapping or the current one."""
    summary = run_partitioned(
        load_spec(spec_path), BATCH, driver=CountingDriver(per_task), alerts=False, retrain=False
    )
    return summary.to_dict()


class SpecBytes(SchedulerPlugin):
    """A scheduler plugin: the pickled size of each task spec as the task starts processing, and the
    worker each task was sent to."""

    name = "spec-bytes"

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.reset()

    def reset(self) -> None:
        self.total = 0
        self.placed: Counter[str] = Counter()

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        ts = self.scheduler.tasks.get(key)
        if finish != "processing" or ts is None or ts.run_spec is None:
            return
        self.total += len(dumps(ts.run_spec))
        self.placed[ts.processing_on.address if ts.processing_on else "?"] += 1


def measure_once(client: Any, plugin: SpecBytes, flow: Any, spec: Path, per_task: bool) -> tuple[Any, ...]:
    """One flow run: wall seconds, task-spec bytes, times the work was unpickled on the workers, tasks
    per worker and the run's status."""
    client.run(reset)
    plugin.reset()
    start = time.perf_counter()
    summary = flow(str(spec), per_task=per_task)
    seconds = time.perf_counter() - start
    unpickles = sum(client.run(unpickled).values())
    placed = "+".join(str(n) for n in sorted(plugin.placed.values(), reverse=True))
    return seconds, plugin.total, unpickles, placed, summary["status"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000, help="rows of the partitioned batch")
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--reference-rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each way (the fastest is kept)")
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "bench_partition_work")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    generate(args.root, args.rows, args.partitions, args.reference_rows, single_rows=1)
    spec = write_spec(args.root, "partition_work", str(args.root / "parts" / "{batch}" / "*.parquet"))

    from distributed import Client, LocalCluster
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness
    from prefect_dask import DaskTaskRunner

    ways = (("work per task (before)", True), ("work shared (after)", False))
    best: dict[str, tuple[Any, ...]] = {}
    with prefect_test_harness(server_startup_timeout=60):
        os.environ["PREFECT_API_URL"] = PREFECT_API_URL.value()
        with (
            LocalCluster(
                n_workers=WORKERS, processes=True, threads_per_worker=1, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            plugin = SpecBytes(cluster.scheduler)
            cluster.scheduler.add_plugin(plugin)
            flow = bench_flow.with_options(task_runner=DaskTaskRunner(address=cluster.scheduler_address))
            flow(str(spec), per_task=False)  # warm-up: profiles fitted and cached, workers importing
            for _ in range(args.repeat):
                for label, per_task in ways:
                    outcome = measure_once(client, plugin, flow, spec, per_task)
                    if label not in best or outcome[0] < best[label][0]:
                        best[label] = outcome
    mb, size = 2**20, WORK_BYTES[-1]
    rows = [
        (label, placed, specs / mb, unpickles, unpickles * size / mb, seconds, status)
        for label, (seconds, specs, unpickles, placed, status) in best.items()
    ]
    print(f"{args.partitions} partitions, {args.rows:,} rows, {WORKERS} workers, work {size / mb:.1f} MB")
    header = ("mapper", "tasks/worker", "spec MB", "work unpickled", "work MB received", "wall s", "status")
    print(table(rows, header))


if __name__ == "__main__":
    # Run from the imported module, not `__main__`: the workers find `CountedWork` and its counter there.
    from benchmarks.bench_partition_work import main as run_main

    run_main()
