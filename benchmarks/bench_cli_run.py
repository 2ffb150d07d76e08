"""`driftline run` of the demo's last batch as a user runs it: one whole process, profiles cached.

Compares the plain engine (the default without PREFECT_API_URL) with the Prefect engine, which starts
a temporary Prefect server inside the command, and with `driftline evaluate` of one check (the floor:
interpreter, imports, reading two files). Target: the plain engine within 3 s wall.

python -m benchmarks.bench_cli_run [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.measure import table

BATCH = "2018-12"


def wall(command: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one command; exit 0 (passed) and 1 (failed batch) both count as a run."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds


def best_of(repeat: int, command: list[str], env: dict[str, str]) -> float:
    return min(wall(command, env) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine; the best is reported")
    parser.add_argument("--rows", type=int, help="ignored (the demo's batches have 6,000 rows)")
    args = parser.parse_args()
    from driftline.data.demo import build_demo_data

    cli = str(Path(sys.executable).with_name("driftline"))
    with tempfile.TemporaryDirectory() as folder:
        spec = build_demo_data(Path(folder))
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(
            DRIFTLINE_DATABASE_URL=f"sqlite:///{Path(folder) / 'history.db'}",
            PREFECT_HOME=str(Path(folder) / "prefect"),
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
        )
        run = [cli, "run", str(spec), "--batch", BATCH, "--json"]
        wall([*run, "--engine", "local"], env)  # fits and caches the profiles
        data = Path(folder) / "data"
        evaluate = [
            cli,
            "evaluate",
            "--check",
            "drift.numeric",
            "--reference",
            str(data / "reference.parquet"),
            "--current",
            str(data / "batches" / f"{BATCH}.parquet"),
            "--json",
        ]
        local = best_of(args.repeat, [*run, "--engine", "local"], env)
        prefect = best_of(args.repeat, [*run, "--engine", "prefect"], env)
        floor = best_of(args.repeat, evaluate, env)
    rows = [
        ("driftline run --engine local", local, 1.0),
        ("driftline run --engine prefect (temporary server)", prefect, prefect / local),
        ("driftline evaluate --check drift.numeric", floor, floor / local),
    ]
    print(f"demo monitor, batch {BATCH} (6,000 rows, 17 checks), profiles cached; best of {args.repeat}")
    print(table(rows, ("command", "wall s", "× local")))


if __name__ == "__main__":
    main()
