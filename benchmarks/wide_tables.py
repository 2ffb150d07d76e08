"""Wide tables: `driftline evaluate` of drift.numeric on two Parquet files of float32 columns, beside a
numpy floor, with wall time, CPU time and the peak memory of each run's whole process tree.

    python -m benchmarks.wide_tables                                # 1,000,000 rows x 1,000 columns
    python -m benchmarks.wide_tables --rows 300000 --columns 1000
    python -m benchmarks.wide_tables --rows 300000 --whole          # also the whole-frame path

The reference and the current file (every tenth column shifted by 0.1 standard deviations) are written
seeded, `ROW_GROUP_ROWS` rows at a time, into a temporary folder deleted at the end. Each run is a
child process whose tree's memory is sampled every `SAMPLE_S` seconds (`TreeMemory`: resident and
proportional set sizes summed): `driftline evaluate` with the PSI and
the KS test (drift.numeric's default) and with the PSI alone (`-p tests=[]`); the floor, which reads
`FLOOR_COLUMNS` columns of both files at a time with pyarrow and counts each column in ten bins on the
reference's range; and with `--whole`, `evaluate` on both files read whole (the path CSV files take;
about 22 bytes a cell, so keep it to a few hundred thousand rows).
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

from benchmarks.measure import table

ROW_GROUP_ROWS = 250_000
SAMPLE_S = 0.1
FLOOR_COLUMNS = 50
SHIFTED_EVERY = 10
ROOT = Path(__file__).resolve().parents[1]
DRIFTLINE = Path(sys.executable).with_name("driftline")
WHOLE = (
    "import sys\nfrom pathlib import Path\nfrom driftline.tasks.run.evaluate import evaluate\n"
    "from driftline.tasks.sources import read_table\n"
    "evaluate(['drift.numeric'], read_table(Path(sys.argv[1])), read_table(Path(sys.argv[2])))\n"
)
FLOOR = "import sys\nfrom benchmarks.wide_tables import numpy_floor\nnumpy_floor(sys.argv[1], sys.argv[2])\n"


def write_tables(folder: Path, rows: int, columns: int, seed: int = 0) -> tuple[Path, Path]:
    """A reference and a current Parquet file of `rows` x `columns` standard normal float32 values,
    every `SHIFTED_EVERY`-th column of the current one shifted by 0.1; never whole in memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    names = [f"f{i:04d}" for i in range(columns)]
    shift = np.where(np.arange(columns) % SHIFTED_EVERY == 0, 0.1, 0.0).astype(np.float32)
    paths = folder / "reference.parquet", folder / "current.parquet"
    for path, moved in zip(paths, (np.zeros_like(shift), shift), strict=True):
        schema = pa.schema([(name, pa.float32()) for name in names])
        with pq.ParquetWriter(path, schema) as writer:
            for start in range(0, rows, ROW_GROUP_ROWS):
                block = rng.standard_normal((min(ROW_GROUP_ROWS, rows - start), columns), dtype=np.float32)
                block += moved
                writer.write_table(pa.Table.from_arrays(list(block.T), schema=schema))
    return paths


def numpy_floor(reference: str, current: str) -> None:
    """Each column of both files counted in ten bins on the reference's range, `FLOOR_COLUMNS` columns
    read at a time: the least any drift check must do."""
    import pyarrow.parquet as pq

    names = pq.read_schema(reference).names
    for start in range(0, len(names), FLOOR_COLUMNS):
        group = names[start : start + FLOOR_COLUMNS]
        ref, cur = pq.read_table(reference, columns=group), pq.read_table(current, columns=group)
        for name in group:
            _, edges = np.histogram(ref[name].to_numpy(), bins=10)
            np.histogram(cur[name].to_numpy(), bins=edges)


class TreeMemory:
    """The peaks of the memory of a process and all its descendants, sampled every `interval` seconds
    from a thread until the context ends: resident memory summed (a forked worker's pages shared with
    its parent count in both, so it errs high) and proportional set sizes summed (shared pages split
    between the processes that share them: what the tree takes from the machine)."""

    def __init__(self, pid: int, interval: float = SAMPLE_S) -> None:
        import psutil

        self.process = psutil.Process(pid)
        self.interval = interval
        self.peak_rss = self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            rss, pss = self.sample()
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)

    def sample(self) -> tuple[int, int]:
        """Bytes (resident, proportional) in the process and its descendants now; those that end
        meanwhile are left out."""
        import psutil

        try:
            processes = [self.process, *self.process.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0, 0
        rss = pss = 0
        for process in processes:
            try:
                info = process.memory_full_info()
            except psutil.NoSuchProcess:
                continue
            rss, pss = rss + info.rss, pss + info.pss
        return rss, pss

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass(frozen=True)
class Measured:
    """One command's wall seconds, CPU seconds (its whole tree, reaped) and peak tree memory in MB,
    resident and proportional (see `TreeMemory`)."""

    wall_s: float
    cpu_s: float
    rss_mb: float
    pss_mb: float

    def row(self, name: str, floor: Measured) -> tuple[str, ...]:
        """This run as a row of the table, with its wall time and memory against the floor's."""
        ratios = self.wall_s / floor.wall_s, self.pss_mb / floor.pss_mb
        return (
            name,
            f"{self.wall_s:.1f}",
            f"{self.cpu_s:.1f}",
            f"{self.rss_mb:,.0f}",
            f"{self.pss_mb:,.0f}",
            *(f"{r:.1f}" for r in ratios),
        )


def measure_command(args: list[str]) -> Measured:
    """Run `args` from the repository's root, sampling its process tree; a failure raises with its
    standard error."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with TreeMemory(child.pid) as memory:
        _, stderr = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {child.returncode}: {stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Measured(wall, cpu, memory.peak_rss / 2**20, memory.peak_pss / 2**20)


def runs(reference: Path, current: Path, whole: bool) -> dict[str, list[str]]:
    """The commands measured, by name."""
    evaluate = [
        str(DRIFTLINE),
        "evaluate",
        "-c",
        "drift.numeric",
        "-r",
        str(reference),
        "--current",
        str(current),
    ]
    commands = {
        "numpy floor (pyarrow, 50 columns at a time)": [
            sys.executable,
            "-c",
            FLOOR,
            str(reference),
            str(current),
        ],
        "driftline evaluate drift.numeric (PSI, KS)": [*evaluate, "--json"],
        "driftline evaluate drift.numeric -p tests=[] (PSI)": [*evaluate, "--json", "-p", "tests=[]"],
    }
    if whole:
        commands["evaluate() on the whole frames (before)"] = [
            sys.executable,
            "-c",
            WHOLE,
            str(reference),
            str(current),
        ]
    return commands


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=1_000)
    parser.add_argument("--whole", action="store_true", help="also evaluate() on the frames read whole")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="driftline-wide-") as folder:
        started = time.perf_counter()
        reference, current = write_tables(Path(folder), args.rows, args.columns)
        size = sum(p.stat().st_size for p in (reference, current)) / 2**20
        seconds = time.perf_counter() - started
        print(f"wrote {args.rows:,} x {args.columns:,} float32 twice ({size:,.0f} MB) in {seconds:.0f} s")
        print(
            f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} cores"
        )
        measured = {
            name: measure_command(command) for name, command in runs(reference, current, args.whole).items()
        }
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    floor = next(iter(measured.values()))
    rows = [m.row(name, floor) for name, m in measured.items()]
    header = ("run", "wall s", "CPU s", "peak RSS MB", "peak PSS MB", "wall / floor", "PSS / floor")
    print(table(rows, header))


if __name__ == "__main__":
    main()
