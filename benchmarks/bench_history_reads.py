"""History reads against a long history: `driftline trend` and `driftline history` on a store of many runs.

A monitor that runs hourly for months keeps thousands of runs; what a person reads (the trend of the
newest runs, a metric's recent history) should cost what it shows, not what is stored. The store is
built with the real writer (`record_run`): every run has 25 feature results with a PSI, its bound and
p-value, and three model-level results. Each command runs in its own process; the table shows the CPU
seconds and the peak resident memory of that process, beside the same read of the whole history.

python -m benchmarks.bench_history_reads [--runs 5000] [--database URL]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from benchmarks.measure import table

MONITOR = "hourly-credit"
FEATURES = 25


def build_store(url: str, runs: int, seed: int = 0) -> float:
    """Write `runs` hourly runs of one monitor through the store's own writer; returns wall seconds."""
    from driftline.checks.result import CheckResult
    from driftline.tasks.history.db import open_store
    from driftline.tasks.history.store import record_run

    rng = np.random.default_rng(seed)
    engine = open_store(url)
    start, started = datetime(2025, 1, 1, tzinfo=UTC), time.perf_counter()
    try:
        for i in range(runs):
            psi = rng.gamma(2.0, 0.01, size=FEATURES)
            results = [
                CheckResult(
                    check="drift.numeric",
                    target=f"x{j}",
                    metrics={"psi": float(p), "psi_bound": float(p) / 2, "psi_p": float(rng.uniform())},
                    thresholds={"psi": (0.1, 0.2, 0.3)},
                )
                for j, p in enumerate(psi)
            ]
            results += [
                CheckResult(
                    check=check,
                    target="*",
                    metrics={metric: float(rng.normal(0.02, 0.01)), f"{metric}_p": float(rng.uniform())},
                    thresholds={metric: (0.1, 0.2, 0.3)},
                )
                for check, metric in (
                    ("drift.prediction", "psi"),
                    ("drift.score", "psi"),
                    ("performance.overall", "roc_auc_change"),
                )
            ]
            record_run(
                engine,
                monitor=MONITOR,
                batch_id=f"b{i:05d}",
                batch_time=start + timedelta(hours=i),
                results=results,
                status="passed",
                worst_severity="none",
                rows=1000,
            )
    finally:
        engine.dispose()
    return time.perf_counter() - started


def cost(command: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS (MB) of one command's process."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5000, help="runs in the store")
    parser.add_argument("--database", help="a history database URL to fill (default: SQLite, temporary)")
    parser.add_argument("--rows", type=int, help="ignored (the store's size is --runs)")
    args = parser.parse_args()
    cli = str(Path(sys.executable).with_name("driftline"))
    with tempfile.TemporaryDirectory() as folder:
        url = args.database or f"sqlite:///{Path(folder) / 'history.db'}"
        built = build_store(url, args.runs)
        recent = [cli, "history", MONITOR, "--check", "drift.prediction", "--db", url, "--json"]
        commands = [
            ("trend (newest 31 runs)", [cli, "trend", MONITOR, "--db", url, "--json"]),
            ("history --check drift.prediction (newest 50 runs)", recent),
            ("history --check drift.prediction --last 0 (whole history)", [*recent, "--last", "0"]),
            ("floor: driftline --help", [cli, "--help"]),
        ]
        rows = [(name, *cost(command)) for name, command in commands]
    rows_per_run = FEATURES * 3 + 3 * 2
    print(f"{args.runs} runs ({args.runs * rows_per_run:,} result rows), written in {built:.0f} s")
    print(table(rows, ("command", "CPU s", "peak RSS MB")))


if __name__ == "__main__":
    main()
