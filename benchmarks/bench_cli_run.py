"""`driftline run` of the demo's last batch as a user runs it: one whole process, profiles cached.

Compares the plain engine (the default without PREFECT_API_URL) with a floor process (the interpreter
importing pandas, scikit-learn and scipy and reading the same two Parquet files), with the same run
without its Great Expectations check, with the import of Great Expectations alone (which bounds a run
that validates a suite: it starts first, in its own worker), with `driftline evaluate`
of one check, and with the Prefect engine: starting a temporary Prefect server inside the command,
and against a Prefect server already running (`benchmarks.bench_prefect_engine` gives its CPU).
Target: the plain engine within 2x the floor.

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
from driftline.flows.temporary_server import temporary_prefect_server

BATCH = "2018-12"
FLOOR = (
    "import pandas, scipy.stats, sklearn.metrics, sys\n"
    "pandas.read_parquet(sys.argv[1]); pandas.read_parquet(sys.argv[2])\n"
)


def without_expectations(spec: Path) -> Path:
    """A copy of the spec without its `expectations.suite` check, beside it."""
    import yaml

    data = yaml.safe_load(spec.read_text())
    data["checks"] = [c for c in data["checks"] if "expectations.suite" not in str(c)]
    data["name"] = f"{data['name']}-no-gx"
    copy = spec.with_name("monitor-no-gx.yaml")
    copy.write_text(yaml.safe_dump(data))
    return copy


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
    load = os.getloadavg()[0]
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
        no_gx = [cli, "run", str(without_expectations(spec)), "--batch", BATCH, "--json", "--engine", "local"]
        wall(no_gx, env)  # fits and caches its profiles
        reference, batch = str(data / "reference.parquet"), str(data / "batches" / f"{BATCH}.parquet")
        floor = best_of(args.repeat, [sys.executable, "-c", FLOOR, reference, batch], env)
        local = best_of(args.repeat, [*run, "--engine", "local"], env)
        without_gx = best_of(args.repeat, no_gx, env)
        evaluated = best_of(args.repeat, evaluate, env)
        gx_import = best_of(args.repeat, [sys.executable, "-c", "import great_expectations"], env)
        prefect = best_of(args.repeat, [*run, "--engine", "prefect"], env)
        with temporary_prefect_server(env) as url:
            served = best_of(args.repeat, [*run, "--engine", "prefect"], {**env, "PREFECT_API_URL": url})
    rows = [
        ("floor: import pandas, scipy, sklearn; read both files", floor, 1.0),
        ("driftline run --engine local", local, local / floor),
        ("driftline run --engine local, without expectations.suite", without_gx, without_gx / floor),
        ("driftline evaluate --check drift.numeric", evaluated, evaluated / floor),
        ("python -c 'import great_expectations' (its import alone)", gx_import, gx_import / floor),
        ("driftline run --engine prefect (temporary server)", prefect, prefect / floor),
        ("driftline run --engine prefect (running server)", served, served / floor),
    ]
    print(
        f"demo monitor, batch {BATCH} (6,000 rows, the demo's checks), profiles cached; best of {args.repeat}"
    )
    print(f"load average at the start: {load:.2f}")
    print(table(rows, ("command", "wall s", "× floor")))


if __name__ == "__main__":
    main()
