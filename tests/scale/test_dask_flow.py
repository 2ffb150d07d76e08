"""The partitioned flow on a 2-worker Dask LocalCluster (worker processes) through a real local
Prefect server: partition tasks run on the workers and the stored rows equal the single-file run's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driftline.tasks.config.spec import load_spec
from driftline.tasks.run.pipeline import run_monitor
from tests.scale.conftest import BATCH, SIZES
from tests.scale.helpers import assert_same_history

pytest.importorskip("prefect_dask")


def test_flow_on_a_local_cluster_matches_the_single_file_run(
    specs: tuple[Path, Path], prefect_api: str
) -> None:
    from distributed import Client, LocalCluster

    from driftline.flows.partitioned import run_on_dask

    single, parted = specs
    one = run_monitor(load_spec(single), BATCH, alerts=False, retrain=False)
    with (
        LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        summary = run_on_dask(
            str(parted), BATCH, address=cluster.scheduler_address, alerts=False, retrain=False
        )
        worker_pids = set(client.run(os.getpid).values())
        ran = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert os.getpid() not in worker_pids and len(worker_pids) == 2
    assert any("partition" in prefix for prefix in ran), ran
    assert summary["engine"] == "prefect" and summary["rows"] == one.rows == sum(SIZES)
    assert (summary["status"], summary["worst_severity"]) == (one.status, one.worst_severity)
    assert_same_history(parted, single, BATCH)
