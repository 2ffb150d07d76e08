"""The partition tasks' shared work (checks, profiles, model) travels to each Dask worker about once, not
once per partition task, and the partitioned flow gives the same results on the default thread pool.

The work carries a payload that counts, in each process, how many times it is unpickled: shipped with
every task, a 2-worker cluster would unpickle it once per partition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prefect import flow

from driftline.checks.columns import Columns
from driftline.flows.prefect_driver import PrefectDriver
from driftline.tasks.config.spec import load_spec
from driftline.tasks.run.partitioned import Partition, PartitionWork
from driftline.tasks.run.pipeline import run_monitor
from tests.scale.conftest import BATCH, SIZES
from tests.scale.helpers import assert_same_history

pytest.importorskip("prefect_dask")

PARTITIONS = 10
WORKERS = 2
# Times a `Payload` was unpickled in this process (read on each Dask worker with `client.run`).
UNPICKLED = 0


class Payload:
    """Bytes standing in for the profiles; unpickling one counts in the receiving process."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return revive, (self.data,)


def revive(data: bytes) -> Payload:
    global UNPICKLED
    UNPICKLED += 1
    return Payload(data)


def unpickled() -> int:
    return UNPICKLED


def reset() -> None:
    global UNPICKLED
    UNPICKLED = 0


def digest(partition: Partition, work: PartitionWork) -> tuple[int, int]:
    """A partition task: the partition's offset and the sum of the payload's bytes."""
    return partition.offset, int(np.frombuffer(work.model.data, dtype=np.uint8).sum(dtype=np.int64))


def payload_bytes() -> bytes:
    return np.random.default_rng(3).integers(0, 256, 2_000_000, dtype=np.uint8).tobytes()


def partitions() -> list[Partition]:
    return [Partition(f"part-{i}.parquet", i * 100, 100) for i in range(PARTITIONS)]


@flow(name="partition-work-test")
def fan_out() -> list[tuple[int, int]]:
    """The work is made inside the flow (a module-level function, pickled by reference), so that it
    reaches the workers through the partition tasks only, not inside the flow or its parameters."""
    work = PartitionWork(jobs=[], roles=Columns(), model=Payload(payload_bytes()))
    return list(PrefectDriver().map_partitions(digest, partitions(), work, workers=WORKERS))


def expected() -> list[tuple[int, int]]:
    total = sum(payload_bytes())
    return [(i * 100, total) for i in range(PARTITIONS)]


def test_the_work_is_unpickled_about_once_per_dask_worker(
    prefect_api: str,
) -> None:
    from distributed import Client, LocalCluster
    from prefect_dask import DaskTaskRunner

    with (
        LocalCluster(
            n_workers=WORKERS, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(reset)
        results = fan_out.with_options(task_runner=DaskTaskRunner(address=cluster.scheduler_address))()
        counts = client.run(unpickled)
    assert results == expected()
    # once per worker, plus a rare fetch again of a copy Dask's memory manager dropped meanwhile;
    # shipped with every task it would be PARTITIONS
    assert 1 <= sum(counts.values()) <= 2 * WORKERS < PARTITIONS, counts


def test_the_thread_pool_shares_the_work_object_without_pickling(
    prefect_api: str,
) -> None:
    from prefect.task_runners import ThreadPoolTaskRunner

    reset()
    assert fan_out.with_options(task_runner=ThreadPoolTaskRunner(max_workers=2))() == expected()
    assert UNPICKLED == 0


def test_the_flow_on_the_thread_pool_matches_the_single_file_run(
    specs: tuple[Path, Path], prefect_api: str
) -> None:
    from driftline.flows.partitioned import partitioned_monitor

    single, parted = specs
    one = run_monitor(load_spec(single), BATCH, alerts=False, retrain=False)
    summary = partitioned_monitor(str(parted), BATCH, alerts=False, retrain=False)
    assert summary["rows"] == one.rows == sum(SIZES)
    assert (summary["status"], summary["worst_severity"]) == (one.status, one.worst_severity)
    assert_same_history(parted, single, BATCH)
