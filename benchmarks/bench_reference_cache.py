"""A monitor run with every profile cached: the reference read and hashed again (as every run did before
the reference's facts were cached) against the reference known from its cached facts.

Run: `.venv/bin/python -m benchmarks.bench_reference_cache [--rows N]`. Writes a 1,000,000-row reference
and a 100,000-row batch (50 columns), runs the monitor once to fit and cache the profiles, then times
runs of the plain engine both ways, in one process, alternating. "Outside the checks" is the run's wall
time minus the time of the check fan-out (load, score, hash, store, alerts, report).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_pipeline import write_inputs
from benchmarks.measure import table
from driftline import load_spec, run_monitor
from driftline.tasks.run.driver import Driver

CHECKS = ["drift.numeric", "drift.categorical", "drift.prediction", "performance.overall", "abnormal.nulls"]


class TimedDriver(Driver):
    """The plain driver, noting how long the check fan-out took."""

    fan_out_s = 0.0

    def fan_out(self, jobs: list[Any], workers: int) -> Any:
        started = time.perf_counter()
        outcomes = super().fan_out(jobs, workers)
        self.fan_out_s = time.perf_counter() - started
        return outcomes


def timed_run(spec_path: Path, forget_facts: bool) -> tuple[float, float]:
    """(wall seconds, fan-out seconds) of one run; with `forget_facts` the reference is read again."""
    if forget_facts:
        for facts in (spec_path.parent / ".driftline" / "profiles").glob("reference-*.json"):
            facts.unlink()
    driver = TimedDriver()
    started = time.perf_counter()
    run_monitor(load_spec(spec_path), "2024-01-01", driver=driver)
    return time.perf_counter() - started, driver.fan_out_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="driftline-bench-"))
    try:
        spec_path = write_inputs(folder, args.rows, max(args.rows // 10, 1000), CHECKS)
        run_monitor(load_spec(spec_path), "2024-01-01")  # fit and cache every profile
        read, cached = [], []
        for _ in range(args.repeat):
            read.append(timed_run(spec_path, forget_facts=True))
            cached.append(timed_run(spec_path, forget_facts=False))
        best_read, best_cached = min(read), min(cached)
        outside_read, outside_cached = best_read[0] - best_read[1], best_cached[0] - best_cached[1]
        rows = [
            ("reference read and hashed (before)", best_read[0], best_read[1], outside_read),
            ("reference known from cached facts", best_cached[0], best_cached[1], outside_cached),
        ]
        sizes = f"reference {args.rows:,} rows, batch {args.rows // 10:,}, 50 columns"
        print(f"\nmonitor run, profiles cached: {sizes}\n")
        print(table(rows, ("run", "wall s", "checks s", "outside the checks s")))
        print(f"\noutside the checks: {outside_read / outside_cached:.1f}x less time with cached facts")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
