"""Run every benchmark in its own process (so each reports its own peak memory) and print their tables.

python -m benchmarks.run              # full size (several minutes)
python -m benchmarks.run --rows 100000  # a quick pass at a smaller size
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

BENCHMARKS = (
    "bench_cli_run",
    "bench_init",
    "bench_isolation",
    "bench_pipeline",
    "bench_catalog",
    "bench_drift",
    "bench_abnormal",
    "bench_subset",
    "bench_fairness",
    "bench_attribution",
    "bench_rubrics",
    "bench_text",
    "bench_vs_evidently",
    "bench_reference_cache",
    "bench_subset_codes",
    "bench_store_opens",
    "bench_history_reads",
    "bench_baseline",
    "bench_dask",
    "bench_sql_pages",
    "bench_partition_work",
    "alert_quality",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, help="rows for every benchmark (default: each one's own size)")
    parser.add_argument("--only", nargs="*", choices=BENCHMARKS, help="run only these")
    args = parser.parse_args()
    failed = []
    for name in args.only or BENCHMARKS:
        command = [sys.executable, "-m", f"benchmarks.{name}"]
        if args.rows:
            command += ["--rows", str(args.rows)]
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        if subprocess.run(command).returncode != 0:
            failed.append(name)
        print(f"({name}: {time.perf_counter() - started:.0f} s wall in all)", flush=True)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
