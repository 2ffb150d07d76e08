"""`driftline run --partitioned` and `--dask-address`: a partitioned run from the command line stores
the rows of a plain run of the same batch (Parquet partitions and SQL pages; a process pool, a Dask
cluster, the Prefect engine), and bad input exits 2, a crash 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine
from typer.testing import CliRunner

from driftline.flows import cli_run
from driftline.flows.cli import EXIT_INTERNAL, EXIT_USAGE, app
from driftline.tasks.run import partitioned
from tests.scale.conftest import BATCH, SIZES, write_monitor
from tests.scale.helpers import assert_same_history, mixed_frame

runner = CliRunner()


def invoke(*args: str) -> tuple[int, dict]:
    """`driftline run ... --json`: the exit code and the printed summary."""
    result = runner.invoke(app, ["run", *args, "--batch", BATCH, "--json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_partitioned_run_from_the_cli_stores_the_plain_run(specs: tuple[Path, Path]) -> None:
    """Three Parquet partitions in a pool of two worker processes."""
    single, parts = specs
    plain_code, plain = invoke(str(single))
    code, summary = invoke(str(parts), "--partitioned")
    assert code == plain_code and summary["rows"] == plain["rows"] == sum(SIZES)
    assert (summary["status"], summary["worst_severity"]) == (plain["status"], plain["worst_severity"])
    assert_same_history(parts, single, BATCH)


@pytest.fixture
def sql_specs(monitor_data: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A SQLite batch: a spec reading it whole, and one reading it in pages of 500 rows of `id`."""
    url = f"sqlite:///{tmp_path / 'source.db'}"
    engine = create_engine(url)
    frame = mixed_frame(sum(SIZES), seed=12, shift=0.5)
    frame.insert(0, "id", range(len(frame)))
    frame.assign(day="2024-05-01").to_sql("events", engine, index=False)
    engine.dispose()
    query = "SELECT * FROM events WHERE day >= date(:start) AND day < date(:end) ORDER BY id"
    paths = []
    for name, paging in (("plain", {}), ("paged", {"page_by": "id", "page_rows": 500})):
        path = write_monitor(monitor_data, tmp_path / name, "unused")
        spec = yaml.safe_load(path.read_text())
        spec["batches"] = {"sql": {"url": url, "query": query, **paging}}
        path.write_text(yaml.safe_dump(spec))
        paths.append(path)
    return paths[0], paths[1]


def test_backfill_takes_the_same_switch(specs: tuple[Path, Path]) -> None:
    single, parts = specs
    invoke(str(single))
    result = runner.invoke(app, ["backfill", str(parts), "--partitioned", "--json"])
    assert result.exit_code in (0, 1), result.output
    assert [s["batch_id"] for s in json.loads(result.stdout)] == [BATCH]
    assert_same_history(parts, single, BATCH)


def test_sql_pages_from_the_cli(sql_specs: tuple[Path, Path]) -> None:
    """The SQL batch in pages, against the plain run of the same query."""
    plain_path, paged_path = sql_specs
    plain_code, plain = invoke(str(plain_path))
    code, summary = invoke(str(paged_path), "--partitioned")
    assert code == plain_code and summary["rows"] == plain["rows"] == sum(SIZES)
    assert_same_history(paged_path, plain_path, BATCH)


def test_dask_address_runs_the_partitions_on_the_cluster(specs: tuple[Path, Path]) -> None:
    """`--dask-address` alone (it implies --partitioned), on a 2-worker LocalCluster."""
    from distributed import Client, LocalCluster

    single, parts = specs
    invoke(str(single))
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        _, summary = invoke(str(parts), "--dask-address", cluster.scheduler_address)
        with Client(cluster) as client:
            ran = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert any("evaluate_partition" in prefix for prefix in ran), ran
    assert summary["engine"] == "local" and summary["rows"] == sum(SIZES)
    assert_same_history(parts, single, BATCH)


@pytest.mark.usefixtures("prefect_server")
def test_partitioned_run_under_the_prefect_engine(
    specs: tuple[Path, Path], sql_specs: tuple[Path, Path]
) -> None:
    """One Prefect task per partition (the partitioned flow) on a real local Prefect server, for
    Parquet partitions and for SQL pages."""
    for whole, parted in (specs, sql_specs):
        invoke(str(whole))
        _, summary = invoke(str(parted), "--partitioned", "--engine", "prefect")
        assert summary["engine"] == "prefect" and summary["rows"] == sum(SIZES)
        assert_same_history(parted, whole, BATCH)


def test_bad_input_exits_2_and_a_crash_3(
    specs: tuple[Path, Path], monitor_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, parts = specs
    csv = write_monitor(monitor_data, tmp_path / "csv", str(tmp_path / "{batch}.csv"))
    refused = runner.invoke(app, ["run", str(csv), "--partitioned"])
    assert refused.exit_code == EXIT_USAGE
    assert "--partitioned" in refused.stderr and "page_by" in refused.stderr
    assert "batches.path" in refused.stderr

    monkeypatch.setattr(cli_run, "DASK_CONNECT_S", 1)
    unreachable = runner.invoke(app, ["run", str(parts), "--dask-address", "tcp://127.0.0.1:9"])
    assert unreachable.exit_code == EXIT_USAGE
    assert (
        "tcp://127.0.0.1:9" in unreachable.stderr and "cannot reach the Dask scheduler" in unreachable.stderr
    )

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("worker lost")

    monkeypatch.setattr(partitioned, "run_partitioned", broken)
    crashed = runner.invoke(app, ["run", str(parts), "--partitioned"])
    assert crashed.exit_code == EXIT_INTERNAL and "worker lost" in crashed.stderr
