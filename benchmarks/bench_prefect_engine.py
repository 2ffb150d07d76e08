"""What `driftline run` costs on each engine: CPU of the command's process tree (its forked check
workers included) and of a running Prefect server, plain engine against `--engine prefect`.

The demo monitor (its 16 checks, a 10,000-row reference, profiles cached) on two batches: the
demo's 6,000-row batch 2018-12 and a 1,000-row sample of it, each with and without the Great
Expectations check. One Prefect server is started for the benchmark (its own PREFECT_HOME) and
every Prefect run talks to it; its CPU is read from /proc before and after each run, less what it
burns idle over the same wall time. Engines are interleaved, the minimum of `--repeat` rounds kept.
Target (issue 32): the Prefect run within 2x the plain run.

python -m benchmarks.bench_prefect_engine [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from benchmarks.measure import table
from driftline.flows.temporary_server import cpu_seconds, temporary_prefect_server

BATCH = "2018-12"
SMALL_ROWS = 1000
IDLE_S = 10.0


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and of its live children (the server's uvicorn workers, if any)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = [int(c) for c in children.read_text().split()] if children.exists() else []
    return sum(cpu_seconds(p) or 0.0 for p in [pid, *kids])


def run_cpu(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds of the command's whole tree (waited descendants included) and its wall seconds;
    exit 0 (passed) and 1 (failed batch) both count as a run."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    stderr = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr[-2000:]}")
    return usage.ru_utime + usage.ru_stime, seconds


def monitors(folder: Path) -> dict[str, Path]:
    """The demo's spec and data, a 1,000-row batch beside them, and both without the GX check."""
    from driftline.data.demo import build_demo_data

    spec = build_demo_data(folder / "demo")
    small = folder / "small"
    (small / "data" / "batches").mkdir(parents=True)
    (small / "data" / "reference.parquet").write_bytes((folder / "demo/data/reference.parquet").read_bytes())
    batch = pd.read_parquet(folder / "demo" / "data" / "batches" / f"{BATCH}.parquet")
    batch.sample(SMALL_ROWS, random_state=0).sort_index().to_parquet(
        small / "data" / "batches" / f"{BATCH}.parquet"
    )
    specs = {}
    for name, root in ((f"{SMALL_ROWS:,} rows", small), ("6,000 rows", spec.parent)):
        data = yaml.safe_load(spec.read_text())
        specs[f"{name}, 16 checks"] = root / "monitor.yaml"
        (root / "monitor.yaml").write_text(yaml.safe_dump(data))
        data["checks"] = [c for c in data["checks"] if "expectations.suite" not in str(c)]
        data["name"] = f"{data['name']}-no-gx"
        specs[f"{name}, 15 checks (no GX)"] = root / "monitor-no-gx.yaml"
        (root / "monitor-no-gx.yaml").write_text(yaml.safe_dump(data))
    return specs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds; the minimum is reported")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    cli = str(Path(sys.executable).with_name("driftline"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        specs = monitors(folder)
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(
            DRIFTLINE_DATABASE_URL=f"sqlite:///{folder / 'history.db'}",
            PREFECT_HOME=str(folder / "prefect"),
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
        )
        with temporary_prefect_server(env) as url:
            server = server_pid(url)
            prefect_env = {**env, "PREFECT_API_URL": url}
            before = tree_cpu(server)
            time.sleep(IDLE_S)
            idle_rate = (tree_cpu(server) - before) / IDLE_S
            for label, spec in specs.items():
                run = [cli, "run", str(spec), "--batch", BATCH, "--json"]
                run_cpu([*run, "--engine", "local"], env)  # fits and caches the profiles
                run_cpu([*run, "--engine", "prefect"], prefect_env)  # registers the flow
                plain, prefect, served = [], [], []
                for _ in range(args.repeat):
                    plain.append(run_cpu([*run, "--engine", "local"], env)[0])
                    before = tree_cpu(server)
                    cpu, seconds = run_cpu([*run, "--engine", "prefect"], prefect_env)
                    prefect.append(cpu)
                    served.append(max(0.0, tree_cpu(server) - before - idle_rate * seconds))
                best = min(plain)
                rows.append((label, best, min(prefect), min(served), (min(prefect) + min(served)) / best))
    print(f"driftline run, batch {BATCH}, profiles cached; minimum of {args.repeat} interleaved rounds")
    print(f"load average at the start: {load:.2f}; idle server {idle_rate:.3f} CPU s/s (subtracted)")
    print(table(rows, ("monitor", "plain CPU s", "prefect CPU s", "server CPU s", "prefect+server / plain")))


def server_pid(url: str) -> int:
    """The pid of the server listening at `url` (the one process whose command line names its port)."""
    port = url.rsplit(":", 1)[1].split("/", 1)[0]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"prefect.server.api.server:create_app" in command and port.encode() in command:
                return int(entry.name)
    raise SystemExit(f"no Prefect server process found for {url}")


if __name__ == "__main__":
    main()
