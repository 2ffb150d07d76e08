"""Partitioned batches on a Dask LocalCluster against the single-process run: wall time and peak memory.

    python -m benchmarks.bench_dask                      # 20,000,000 rows x 53 columns, 40 partitions
    python -m benchmarks.bench_dask --rows 2000000       # a smaller batch, same 40 partitions
    python -m benchmarks.bench_dask --prefect            # also the Prefect flow on the same cluster

The batch is written partition by partition (benchmarks.synthetic.make_frame, 40 numeric and 10
categorical features, label, score, prediction), never whole in memory. Checks: drift.numeric (PSI
and KS), drift.categorical, abnormal.nulls, abnormal.out_of_range, performance.overall. Each engine
runs in a child process of its own: the plain partitioned run with a 2-worker LocalCluster (worker
processes, 4 GB memory limit each; worker memory is sampled every 0.2 s), optionally the Prefect flow
on such a cluster against a temporary Prefect server, and the single-process `run_monitor` on one
Parquet file of `--single-rows` rows. Profiles are fitted once before the timed runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from benchmarks.measure import table
from benchmarks.synthetic import make_frame

BATCH = "b1"
CHECKS = [
    "drift.numeric",
    "drift.categorical",
    "abnormal.nulls",
    "abnormal.out_of_range",
    "performance.overall",
]
WORKER_LIMIT = "4GB"


def generate(root: Path, rows: int, partitions: int, reference_rows: int, single_rows: int) -> None:
    """Reference, the partitioned batch and a single-file batch of `single_rows` (the first partitions);
    files already there with the right row counts are kept."""
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    if not (root / "reference.parquet").exists():
        make_frame(reference_rows, seed=0).to_parquet(root / "reference.parquet", index=False)
    folder = root / "parts" / BATCH
    folder.mkdir(parents=True, exist_ok=True)
    per = rows // partitions
    sizes = [per + (1 if i < rows % partitions else 0) for i in range(partitions)]
    for i, size in enumerate(sizes):
        path = folder / f"part-{i:03d}.parquet"
        if path.exists() and pq.ParquetFile(path).metadata.num_rows == size:
            continue
        make_frame(size, shift=0.2, seed=1000 + i).to_parquet(path, index=False)
    for stale in sorted(folder.glob("part-*.parquet"))[partitions:]:
        stale.unlink()
    single = root / "single" / f"{BATCH}.parquet"
    single.parent.mkdir(exist_ok=True)
    if not single.exists() or pq.ParquetFile(single).metadata.num_rows != single_rows:
        frames, have, i = [], 0, 0
        while have < single_rows:
            frame = make_frame(min(per, single_rows - have), shift=0.2, seed=1000 + i)
            frames.append(frame)
            have, i = have + len(frame), i + 1
        pd.concat(frames, ignore_index=True).to_parquet(single, index=False)


def write_spec(root: Path, name: str, batches: str) -> Path:
    """A monitor over the generated data; every spec shares the folder, so the profile cache too."""
    spec = {
        "name": name,
        "reference": {"path": str(root / "reference.parquet")},
        "batches": {"path": batches},
        "columns": {
            "label": "label",
            "score": "score",
            "prediction": "prediction",
            "numeric": [f"num_{i}" for i in range(40)],
            "categorical": [f"cat_{i}" for i in range(10)],
        },
        "checks": CHECKS,
        "execution": {"isolation": "thread", "workers": 2},
        "store_url": f"sqlite:///{root / f'{name}.db'}",
    }
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


class WorkerMemory:
    """Samples the resident memory of the Dask worker processes until stopped; keeps each one's peak."""

    def __init__(self, client: Any) -> None:
        import psutil

        self.processes = {addr: psutil.Process(pid) for addr, pid in client.run(os.getpid).items()}
        self.peaks = dict.fromkeys(self.processes, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            for addr, process in self.processes.items():
                try:
                    self.peaks[addr] = max(self.peaks[addr], process.memory_info().rss)
                except Exception:
                    continue

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def child_single(spec_path: str) -> dict[str, Any]:
    """The single-process run of the single-file batch."""
    from driftline.tasks.config.spec import load_spec
    from driftline.tasks.run.pipeline import run_monitor

    start = time.perf_counter()
    summary = run_monitor(load_spec(spec_path), BATCH, alerts=False, retrain=False)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "rows": summary.rows,
        "status": summary.status,
        "results": len(summary.results),
    }


def child_dask(spec_path: str, workers: int, prefect: bool) -> dict[str, Any]:
    """The partitioned run on a local cluster: plain Dask, or the Prefect flow on the same cluster."""
    from distributed import Client, LocalCluster

    started = time.perf_counter()
    cluster = LocalCluster(
        n_workers=workers,
        processes=True,
        threads_per_worker=1,
        memory_limit=WORKER_LIMIT,
        dashboard_address=None,
    )
    client = Client(cluster)
    cluster_s = time.perf_counter() - started
    try:
        with WorkerMemory(client) as memory:
            start = time.perf_counter()
            if prefect:
                summary = _prefect_run(spec_path, cluster.scheduler_address)
            else:
                from driftline.tasks.config.spec import load_spec
                from driftline.tasks.run.driver import Driver
                from driftline.tasks.run.partitioned import run_partitioned

                run = run_partitioned(
                    load_spec(spec_path), BATCH, driver=Driver(client), alerts=False, retrain=False
                )
                summary = run.to_dict()
            seconds = time.perf_counter() - start
        restarted = sum(1 for p in memory.processes.values() if not p.is_running())
    finally:
        client.close()
        cluster.close()
    return {
        "seconds": seconds,
        "cluster_s": cluster_s,
        "rows": summary["rows"],
        "status": summary["status"],
        "results": len(summary["results"]),
        "worker_peaks_mb": [round(v / 2**20) for v in memory.peaks.values()],
        "workers_lost": restarted,
    }


def _prefect_run(spec_path: str, address: str) -> dict[str, Any]:
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    from driftline.flows.partitioned import run_on_dask

    with prefect_test_harness(server_startup_timeout=60):
        os.environ["PREFECT_API_URL"] = PREFECT_API_URL.value()
        return run_on_dask(spec_path, BATCH, address=address, alerts=False, retrain=False)


def in_child(*args: str) -> dict[str, Any]:
    """Run one engine in a fresh process; its result with the child's peak resident memory."""
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_dask", "--child", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000, help="rows of the partitioned batch")
    parser.add_argument("--partitions", type=int, default=40)
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--single-rows", type=int, default=4_000_000, help="rows of the single-process batch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--prefect", action="store_true", help="also run the Prefect flow on the cluster")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "driftline-bench-dask")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "single":
            out = child_single(rest[0])
        else:
            out = child_dask(rest[0], int(rest[1]), kind == "prefect")
        out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10)
        print(json.dumps(out))
        return

    started = time.perf_counter()
    generate(args.data, args.rows, args.partitions, args.reference_rows, args.single_rows)
    print(f"data in {args.data} ({time.perf_counter() - started:.0f} s to generate or check)", flush=True)
    single = write_spec(args.data, "single", str(args.data / "single" / "{batch}.parquet"))
    parted = write_spec(args.data, "parted", str(args.data / "parts" / "{batch}" / "*.parquet"))
    warm = in_child("single", str(single))  # fits and caches every profile
    print(f"warm-up (profiles fitted): {warm['seconds']:.1f} s", flush=True)

    rows = []
    single_run = in_child("single", str(single))
    rows.append(("single process", single_run, "-", f"{single_run['peak_mb']}"))
    engines = [("dask", "LocalCluster (plain)")] + (
        [("prefect", "Prefect + DaskTaskRunner")] if args.prefect else []
    )
    for kind, label in engines:
        run = in_child(kind, str(parted), str(args.workers))
        peaks = "/".join(str(p) for p in run["worker_peaks_mb"])
        rows.append((label, run, peaks, f"{run['peak_mb']}"))
        if run["workers_lost"]:
            print(f"{label}: {run['workers_lost']} worker(s) lost (memory limit {WORKER_LIMIT})")
    header = (
        "engine",
        "rows",
        "partitions",
        "wall s",
        "M rows/s",
        "peak MB per worker",
        "driver peak MB",
        "status",
    )
    base = rows[0][1]["rows"] / rows[0][1]["seconds"]
    lines = [
        (
            label,
            run["rows"],
            1 if label == "single process" else args.partitions,
            run["seconds"],
            run["rows"] / run["seconds"] / 1e6,
            peaks,
            driver,
            run["status"],
        )
        for label, run, peaks, driver in rows
    ]
    print(table(lines, header))
    for label, run, _, _ in rows[1:]:
        ratio = run["rows"] / run["seconds"] / base
        print(f"{label}: {ratio:.2f}x the single process's rows/s; cluster start {run['cluster_s']:.1f} s")


if __name__ == "__main__":
    main()
