"""A tall batch in one Parquet file: `driftline run --partitioned` streams its row groups, against a
whole-batch `driftline run`; wall time, CPU time and the peak memory of the process tree.

    python -m benchmarks.tall_tables                          # 20,000,000 rows x 50 float32 columns
    python -m benchmarks.tall_tables --rows 4000000 --whole-rows 1000000

The batch is written one row group of `--group-rows` (1,000,000) rows at a time, never whole in
memory, beside a 1,000,000-row reference; a whole-batch run reads a file of `--whole-rows` rows (the
batch's distribution, its own seed), which the partitioned run also reads for the ratio at one size.
Checks: drift.numeric, abnormal.nulls, abnormal.out_of_range (all mergeable), `execution.workers: 2`,
process isolation. A run over a small batch fits and caches the profiles before the timed runs. Each
run is a `driftline` subprocess; its process tree is sampled every 0.2 s: the summed resident memory
(RSS, which counts a page shared by forked workers once per process) and the summed proportional set
size (PSS, each shared page split between its sharers: the physical memory the tree holds). CPU time
is user + system of the run and every process it waited for.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from benchmarks.measure import table

CHECKS = ["drift.numeric", "abnormal.nulls", "abnormal.out_of_range"]
WARM_ROWS = 100_000
SAMPLE_S = 0.2


def write_batch(path: Path, rows: int, columns: int, group_rows: int, seed: int, shift: float) -> None:
    """`rows` × `columns` float32 values written one row group at a time; the first five columns
    shifted by `shift`, 1% of the second column null. A file already there with the rows is kept."""
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return
    rng = np.random.default_rng(seed)
    schema = pa.schema([(f"f{i}", pa.float32()) for i in range(columns)])
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, group_rows):
            n = min(group_rows, rows - start)
            values = rng.standard_normal((columns, n), dtype=np.float32)
            values[:5] += shift
            values[1, rng.random(n) < 0.01] = np.nan
            writer.write_table(pa.Table.from_arrays(list(values), schema=schema))


def write_spec(root: Path, columns: int) -> Path:
    """The monitor over `root`: batches `batches/{batch}.parquet`, history and profiles beside it."""
    spec = {
        "name": "tall",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "columns": {"numeric": [f"f{i}" for i in range(columns)]},
        "checks": CHECKS,
        "execution": {"workers": 2},
        "store_url": f"sqlite:///{root / 'history.db'}",
    }
    path = root / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@dataclass
class Measured:
    """One run: wall and CPU seconds, peaks of the tree's summed RSS and PSS and of the driver's RSS
    (MB), the system load average before it, and its exit code."""

    wall_s: float
    cpu_s: float
    tree_rss_mb: float
    tree_pss_mb: float
    driver_rss_mb: float
    load: float
    returncode: int


class TreeSampler(threading.Thread):
    """Samples a process and its descendants until it exits, keeping the peaks."""

    def __init__(self, pid: int) -> None:
        import psutil

        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.rss = self.pss = self.driver = 0

    def run(self) -> None:
        import psutil

        while self.root.is_running() and self.root.status() != psutil.STATUS_ZOMBIE:
            rss = pss = 0
            for process in [self.root, *self.root.children(recursive=True)]:
                try:
                    memory = process.memory_full_info()
                except psutil.Error:
                    continue
                rss, pss = rss + memory.rss, pss + memory.pss
                if process.pid == self.root.pid:
                    self.driver = max(self.driver, memory.rss)
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)
            time.sleep(SAMPLE_S)


def measured(command: list[str], log: Path) -> Measured:
    """Run `command` with its output in `log`, sampling its process tree."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        sampler = TreeSampler(process.pid)
        sampler.start()
        process.wait()
        sampler.join()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    mb = 2**20
    return Measured(
        wall, cpu, sampler.rss / mb, sampler.pss / mb, sampler.driver / mb, load, process.returncode
    )


def run(spec: Path, batch_id: str, partitioned: bool) -> Measured:
    """`driftline run` of one batch, partitioned or whole; a crash or bad input stops the benchmark."""
    driftline = str(Path(sys.executable).with_name("driftline"))
    command = [driftline, "run", str(spec), "--batch", batch_id, "--quiet", "--engine", "local"]
    log = spec.parent / f"{batch_id}-{'partitioned' if partitioned else 'whole'}.log"
    result = measured(command + (["--partitioned"] if partitioned else []), log)
    if result.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {result.returncode}; see {log}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--whole-rows", type=int, default=4_000_000)
    parser.add_argument("--columns", type=int, default=50)
    parser.add_argument("--group-rows", type=int, default=1_000_000)
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "driftline-tall")
    args = parser.parse_args()
    root: Path = args.folder
    batches = root / "batches"
    started = time.perf_counter()
    write_batch(root / "reference.parquet", args.reference_rows, args.columns, args.group_rows, 0, 0.0)
    sizes = {"warm": WARM_ROWS, "whole": args.whole_rows, "tall": args.rows}
    for seed, (batch_id, rows) in enumerate(sizes.items(), start=1):
        write_batch(batches / f"{batch_id}.parquet", rows, args.columns, args.group_rows, seed, 0.05)
    print(f"data ready in {time.perf_counter() - started:.0f} s under {root}", file=sys.stderr)
    spec = write_spec(root, args.columns)
    run(spec, "warm", partitioned=True)  # fits and caches the profiles
    plan = [("tall", True), ("whole", True), ("whole", False)]
    rows = []
    for batch_id, partitioned in plan:
        m = run(spec, batch_id, partitioned)
        kind = "--partitioned (row groups)" if partitioned else "whole batch"
        n = sizes[batch_id]
        memory = (round(m.tree_rss_mb), round(m.tree_pss_mb), round(m.driver_rss_mb))
        rows.append((kind, f"{n:,}", round(m.wall_s), round(m.cpu_s), n / m.wall_s / 1e6, *memory, m.load))
    header = (
        "driftline run",
        "rows",
        "wall s",
        "CPU s",
        "M rows/s",
        "tree RSS MB",
        "tree PSS MB",
        "driver MB",
    )
    header += ("load",)
    print(f"{args.columns} float32 columns, row groups of {args.group_rows:,} rows, {os.cpu_count()} cores")
    print(table(rows, header))


if __name__ == "__main__":
    main()
