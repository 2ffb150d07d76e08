"""Subset checks with the batch's subset codes shared (cut once per feature) against every check cutting
the batch itself, as each did before.

Run: `.venv/bin/python -m benchmarks.bench_subset_codes [--rows N]`. A reference of N rows and a batch of
N/10 (50 features), the nine binary subset checks with their profiles fitted. Two ways, each timed
both with and without sharing, alternating, best of `--repeat`:
- in one process: the nine `evaluate` calls one after the other (sharing includes the cut itself);
- a monitor run: the check fan-out of a cached run, each check in its forked worker.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks.bench_pipeline import write_inputs
from benchmarks.bench_reference_cache import TimedDriver
from benchmarks.bench_subset import METRICS
from benchmarks.measure import table
from driftline import infer_columns, load_spec, run_monitor
from driftline.checks import registry
from driftline.checks.slice_codes import sharing_codes
from driftline.tasks.run import pipeline

ROLES = {"label": "label", "prediction": "prediction", "score": "score"}


def in_process_seconds(folder: Path, repeat: int) -> tuple[float, float]:
    """Best seconds of the nine evaluations in one process: (each check cuts, codes shared)."""
    reference = pd.read_parquet(folder / "reference.parquet")
    batch = pd.read_parquet(folder / "batches" / "2024-01-01.parquet")
    columns = infer_columns(reference, ROLES)
    checks = [registry.create(name, {}) for name in METRICS]
    profiles = [check.fit(reference, columns) for check in checks]

    def evaluate_all(shared: bool) -> float:
        started = time.perf_counter()
        with sharing_codes(batch) as store:
            if shared:
                for check, profile in zip(checks, profiles, strict=True):
                    for feature, slices in check.slice_definitions(profile).items():
                        store.add(feature, slices)
            for check, profile in zip(checks, profiles, strict=True):
                check.evaluate(batch, profile, columns)
        return time.perf_counter() - started

    timings = [(evaluate_all(False), evaluate_all(True)) for _ in range(repeat)]
    return min(t[0] for t in timings), min(t[1] for t in timings)


def fan_out_seconds(spec_path: Path, shared: bool) -> float:
    """Seconds of the check fan-out of one cached monitor run, with or without shared subset codes."""
    real = pipeline.share_slice_codes
    if not shared:
        pipeline.share_slice_codes = lambda *args: None
    try:
        driver = TimedDriver()
        run_monitor(load_spec(spec_path), "2024-01-01", driver=driver, alerts=False, retrain=False)
        return driver.fan_out_s
    finally:
        pipeline.share_slice_codes = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    batch_rows = max(args.rows // 10, 1000)
    folder = Path(tempfile.mkdtemp(prefix="driftline-bench-"))
    try:
        spec_path = write_inputs(folder, args.rows, batch_rows, list(METRICS))
        own, shared = in_process_seconds(folder, args.repeat)
        run_monitor(load_spec(spec_path), "2024-01-01", alerts=False, retrain=False)  # fit every profile
        runs = [
            (fan_out_seconds(spec_path, False), fan_out_seconds(spec_path, True)) for _ in range(args.repeat)
        ]
        run_own, run_shared = min(r[0] for r in runs), min(r[1] for r in runs)
        rows = [
            ("in one process", own, shared, own / shared),
            ("monitor run, forked workers", run_own, run_shared, run_own / run_shared),
        ]
        print(f"\n{len(METRICS)} subset checks, batch {batch_rows:,} rows, 50 features\n")
        print(table(rows, ("subset checks", "each cuts s", "shared s", "ratio")))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
