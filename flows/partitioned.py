"""The partitioned monitor as a Prefect flow: one Prefect task per Parquet partition, run on the flow's
task runner (a Dask cluster through prefect-dask for batches larger than one machine's memory).

Process-based runners must talk to a real Prefect server (`PREFECT_API_URL`): without one, every
worker process starts a temporary server of its own.
"""

from __future__ import annotations

from typing import Any, cast

from prefect.states import State
from prefect.task_runners import ThreadPoolTaskRunner

from driftline.flows.monitor import run_as_flow, summary_of, verdict_flow
from driftline.tasks.retraining.actions import Retraining
from driftline.tasks.run.partitioned import run_partitioned

# Dask worker memory cap of `dask_runner`'s local cluster: a partition and its states fit well within it.
WORKER_MEMORY = "4GB"


@verdict_flow(name="driftline-partitioned", task_runner=ThreadPoolTaskRunner(max_workers=2))
def partitioned_monitor(
    spec_path: str,
    batch_id: str | None = None,
    alerts: bool = True,
    retrain: Retraining = True,
    fail_flow_run: bool = True,
) -> State:
    """Run the monitor over one partitioned batch (the newest when `batch_id` is empty); the run ends
    `Failed` when the batch reaches `fail_on`, unless `fail_flow_run` is off."""
    return run_as_flow(run_partitioned, spec_path, batch_id, alerts, retrain, fail_flow_run)


def dask_runner(address: str | None = None, n_workers: int = 2, memory_limit: str = WORKER_MEMORY) -> Any:
    """A prefect-dask task runner: on the cluster at `address`, else on a local cluster of
    `n_workers` single-threaded worker processes."""
    from prefect_dask import DaskTaskRunner

    if address:
        return DaskTaskRunner(address=address)
    cluster = {
        "n_workers": n_workers,
        "processes": True,
        "threads_per_worker": 1,
        "memory_limit": memory_limit,
    }
    return DaskTaskRunner(cluster_kwargs=cluster)


def run_on_dask(
    spec_path: str,
    batch_id: str | None = None,
    *,
    address: str | None = None,
    n_workers: int = 2,
    alerts: bool = True,
    retrain: Retraining = True,
) -> dict[str, Any]:
    """The partitioned flow with its partition tasks on a Dask cluster (see `dask_runner`); its
    summary, whatever the verdict."""
    runner = dask_runner(address, n_workers)
    on_dask = partitioned_monitor.with_options(task_runner=runner)
    # Prefect's overloads pick the `NoReturn` one for an unparameterised `Flow`.
    return summary_of(cast(State, on_dask(spec_path, batch_id, alerts, retrain, return_state=True)))
