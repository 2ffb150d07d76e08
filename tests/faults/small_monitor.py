"""A small monitor for command-line fault tests: a numeric reference, batch files and a spec beside
them, written in a test's folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml


def write_monitor(folder: Path, batches: dict[str, pd.DataFrame] | None = None, **overrides: Any) -> Path:
    """`folder/monitor.yaml` over `reference.parquet` (200 rows of `age` and `income`) and one
    `batches/<id>.parquet` per entry of `batches` (default: one clean batch, `2024-05-01`)."""
    rng = np.random.default_rng(0)
    reference = pd.DataFrame({"age": rng.normal(40, 10, 200), "income": rng.normal(3, 1, 200)})
    reference.to_parquet(folder / "reference.parquet")
    (folder / "batches").mkdir(exist_ok=True)
    for batch_id, frame in (batches or {"2024-05-01": reference.iloc[:100]}).items():
        frame.to_parquet(folder / "batches" / f"{batch_id}.parquet")
    spec = {
        "name": "small",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric"],
        "store_url": f"sqlite:///{folder / 'history.db'}",
        **overrides,
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=True))
    return path
