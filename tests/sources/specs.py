"""The monitor spec the source tests write: one check list, roles and sources, thread isolation and a
history database of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_monitor(
    folder: Path, name: str, sources: dict[str, Any], columns: dict[str, Any], checks: list
) -> Path:
    """`folder/monitor.yaml` over `sources` (its reference and batches sections), with its history in
    `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "name": name,
        **sources,
        "columns": columns,
        "checks": checks,
        "execution": {"isolation": "thread", "workers": 1},
        "store_url": f"sqlite:///{folder / 'history.db'}",
        "alerts": {"min_severity": "high"},
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path
