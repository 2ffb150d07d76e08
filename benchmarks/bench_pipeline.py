"""The monitor flow end to end on 1,000,000 rows × 50 columns: load, checks in parallel, store, alert.

Run: `.venv/bin/python -m benchmarks.bench_pipeline [--rows N]`. Writes a reference and a shifted batch
as Parquet, then runs the real `monitor` flow (local Prefect, SQLite history) twice: the first run
fits the reference profiles, the second finds them in the cache, as every scheduled run after the
first does. Peer in the same run: the same five checks called one after the other in plain Python,
profiles cached, without Prefect or storage, to show what orchestration costs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.measure import peak_rss_mb, table
from benchmarks.synthetic import make_frame

CHECKS = ["drift.numeric", "drift.categorical", "drift.label", "drift.prediction", "performance.overall"]


def write_inputs(folder: Path, rows: int, batch_rows: int | None = None, checks: list[str] = CHECKS) -> Path:
    """Reference (`rows`), batch (`batch_rows`, default as many) and spec files; returns the spec path."""
    (folder / "batches").mkdir(parents=True)
    make_frame(rows).to_parquet(folder / "reference.parquet")
    make_frame(batch_rows or rows, shift=0.1, seed=1).to_parquet(folder / "batches" / "2024-01-01.parquet")
    spec = {
        "name": "bench",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "columns": {"label": "label", "prediction": "prediction", "score": "score"},
        "checks": checks,
        "alerts": {"console": False},
        "store_url": f"sqlite:///{folder / 'history.db'}",
    }
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def plain_python(folder: Path) -> float:
    """Seconds to evaluate the same checks sequentially on in-memory frames, profiles fitted beforehand."""
    import pandas as pd

    from driftline.checks import create, infer_columns, run_check

    reference = pd.read_parquet(folder / "reference.parquet")
    batch = pd.read_parquet(folder / "batches" / "2024-01-01.parquet")
    columns = infer_columns(reference, {"label": "label", "prediction": "prediction", "score": "score"})
    checks = [create(name) for name in CHECKS]
    profiles = [c.fit(reference, columns) for c in checks]
    started = time.perf_counter()
    for check, profile in zip(checks, profiles, strict=True):
        run_check(check, batch, columns, profile=profile)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect import flow

    from driftline.flows.monitor import monitor

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec = write_inputs(folder, args.rows)
        started = time.perf_counter()
        flow(lambda: None, name="warm-up")()
        rows = [("start the local Prefect server", time.perf_counter() - started, "-", 0)]
        for label in ("first run (fits profiles)", "later run (profiles cached)"):
            started = time.perf_counter()
            summary = monitor(str(spec), "2024-01-01")
            rows.append((label, time.perf_counter() - started, summary["status"], len(summary["results"])))
        peer = plain_python(folder)
    print(f"monitor flow on {args.rows:,} rows x 50 columns, checks: {', '.join(CHECKS)}")
    print(table(rows, ("run", "wall s", "status", "results")))
    print(f"\npeer: the same checks in plain Python, profiles cached, no Prefect or storage: {peer:.2f} s")
    print(f"process peak RSS {peak_rss_mb():,.0f} MB (both frames, the local Prefect client, the checks)")


if __name__ == "__main__":
    main()
