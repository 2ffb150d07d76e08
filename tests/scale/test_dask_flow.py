"""The partitioned flow on a 2-worker Dask LocalCluster (worker processes) through a real local
Prefect server: partition tasks run on the workers and the stored rows equal the single-file run's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftline.tasks.pipeline import run_monitor
from driftline.tasks.spec import load_spec
from tests.scale.conftest import BATCH, SIZES, write_monitor
from tests.scale.helpers import assert_same
from tests.scale.test_partitioned_run import stored

pytest.importorskip("prefect_dask")


@pytest.fixture(scope="module")
def prefect_api() -> Iterator[str]:
    """A temporary Prefect server; its URL is also put in the environment, so that Dask worker
    processes report to it instead of each starting a server of its own."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        url = PREFECT_API_URL.value()
        before = os.environ.get("PREFECT_API_URL")
        os.environ["PREFECT_API_URL"] = url
        try:
            yield url
        finally:
            if before is None:
                os.environ.pop("PREFECT_API_URL", None)
            else:
                os.environ["PREFECT_API_URL"] = before


def test_flow_on_a_local_cluster_matches_the_single_file_run(
    monitor_data: Path, tmp_path: Path, prefect_api: str
) -> None:
    from distributed import Client, LocalCluster

    from driftline.flows.partitioned import run_on_dask

    single = write_monitor(
        monitor_data, tmp_path / "single", str(monitor_data / "single" / "{batch}.parquet")
    )
    parted = write_monitor(
        monitor_data, tmp_path / "parts", str(monitor_data / "parts" / "{batch}" / "*.parquet")
    )
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
    key = lambda r: (r["check"], r["target"])  # noqa: E731
    assert_same(sorted(stored(parted), key=key), sorted(stored(single), key=key))
