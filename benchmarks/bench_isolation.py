"""What per-check process isolation costs: the first set of checks on 1,000,000 rows × 50 columns,
profiles fitted beforehand, evaluated four at a time in threads and in forked worker processes.

Run: `.venv/bin/python -m benchmarks.bench_isolation [--rows N]`. Target: isolated within 1.2× of
threads (the frames reach the workers by fork, not by pickle).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.bench_drift import FIRST_SET
from benchmarks.measure import peak_rss_mb, table
from benchmarks.synthetic import make_frame
from driftline.checks import infer_columns, registry
from driftline.checks.runner import run_check
from driftline.tasks.run.isolation import run_isolated

WORKERS = 4


def evaluate_all(jobs: list[Any]) -> float:
    """Wall seconds to run every job, `WORKERS` at a time."""
    started = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as pool:
        for outcome in pool.map(lambda job: job(), jobs):
            assert all(r.status == "ok" for r in outcome), outcome
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reference = make_frame(args.rows)
    current = make_frame(args.rows, shift=0.1, seed=1)
    columns = infer_columns(reference, {"label": "label", "score": "score", "prediction": "prediction"})
    fitted = [(c, c.fit(reference, columns)) for c in (registry.create(n) for n in FIRST_SET)]

    def in_thread(check: Any, profile: Any) -> Any:
        return lambda: run_check(check, current, columns, profile=profile)

    def isolated(check: Any, profile: Any) -> Any:
        return lambda: run_isolated(in_thread(check, profile), timeout_s=600, label=check.name)

    threads = min(evaluate_all([in_thread(c, p) for c, p in fitted]) for _ in range(args.repeat))
    processes = min(evaluate_all([isolated(c, p) for c, p in fitted]) for _ in range(args.repeat))
    print(f"first set ({', '.join(FIRST_SET)}) on {args.rows:,} rows x 50 columns, {WORKERS} at a time")
    print(
        table(
            [("threads", threads, 1.0), ("forked worker per check", processes, processes / threads)],
            ("evaluation", "wall s (best)", "× threads"),
        )
    )
    print(f"peak RSS of the parent: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
