"""Fixtures of the partitioned-batch tests: a monitor whose batch is stored both as one Parquet file
and as Parquet partitions, with one history database per run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.scale.helpers import mixed_frame

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

BATCH = "2024-05-01"
SIZES = (900, 1400, 700)
ROLES = {
    "label": "label",
    "score": "score",
    "prediction": "prediction",
    "numeric": ["x", "ties", "wide"],
    "categorical": ["cat"],
}
CHECKS = [
    "drift.numeric",
    "drift.categorical",
    "abnormal.nulls",
    {"check": "abnormal.out_of_range", "params": {"max_failing_ids": 30}},
    "performance.overall",
    "drift.label",  # not mergeable: evaluated on the gathered batch (it is small)
]


@pytest.fixture(scope="module")
def monitor_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """reference.parquet, single/<batch>.parquet and parts/<batch>/part-<i>.parquet of the same batch."""
    root = tmp_path_factory.mktemp("partitioned")
    mixed_frame(4000, seed=11).to_parquet(root / "reference.parquet", index=False)
    batch = mixed_frame(sum(SIZES), seed=12, shift=0.5)
    (root / "single").mkdir()
    batch.to_parquet(root / "single" / f"{BATCH}.parquet", index=False)
    parts = root / "parts" / BATCH
    parts.mkdir(parents=True)
    start = 0
    for i, size in enumerate(SIZES):
        batch.iloc[start : start + size].to_parquet(parts / f"part-{i}.parquet", index=False)
        start += size
    return root


def write_monitor(root: Path, folder: Path, batches: str | dict, name: str = "scale") -> Path:
    """A spec over `root`'s reference with its own history database and state in `folder`; `batches`
    is a path template or a whole batch source."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "name": name,
        "reference": {"path": str(root / "reference.parquet")},
        "batches": {"path": batches} if isinstance(batches, str) else batches,
        "columns": ROLES,
        "checks": CHECKS,
        "execution": {"isolation": "thread", "workers": 2},
        "store_url": f"sqlite:///{folder / 'history.db'}",
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.fixture(scope="module")
def prefect_api() -> Iterator[str]:
    """A temporary Prefect server; its URL is also put in the environment, so that Dask worker
    processes report to it instead of each starting a server of its own."""
    from prefect.settings import PREFECT_API_URL

    from tests.prefect_server import temporary_prefect_server

    with temporary_prefect_server():
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


@pytest.fixture
def specs(monitor_data: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A spec over the single-file batch and one over its Parquet partitions, each with its own store."""
    single = write_monitor(
        monitor_data, tmp_path / "single", str(monitor_data / "single" / "{batch}.parquet")
    )
    parts = write_monitor(
        monitor_data, tmp_path / "parts", str(monitor_data / "parts" / "{batch}" / "*.parquet")
    )
    return single, parts
