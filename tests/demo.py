"""Helpers over the demo's census data: a monitor spec pointing at it, row counts of a store, and the
start of a script that runs with Prefect made unimportable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import func, select

from driftline.tasks.history.db import open_store

# The first lines of a `python -c` script in which any import of Prefect fails.
BLOCK_PREFECT = """
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name == "prefect" or name.startswith("prefect."):
            raise ImportError(f"blocked: {name}")

sys.meta_path.insert(0, Blocker())
"""


def write_spec(demo_data: Path, tmp_path: Path, **overrides: Any) -> Path:
    """A copy of the demo spec with absolute data paths and `overrides` applied."""
    spec = yaml.safe_load(demo_data.read_text())
    data_dir = demo_data.parent / "data"
    spec["reference"] = {"path": str(data_dir / "reference.parquet")}
    spec["batches"] = {"path": str(data_dir / "batches" / "{batch}.parquet")}
    spec.update(overrides)
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def count(url: str, model: type) -> int:
    """Rows of one history table."""
    engine = open_store(url)
    try:
        with engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(model)).scalar_one()
    finally:
        engine.dispose()
