"""SQL batch reads: peak memory of one whole read against chunked streaming, page planning and a page.

    python -m benchmarks.bench_sql_pages                  # 2,000,000 rows x 20 columns in SQLite
    python -m benchmarks.bench_sql_pages --rows 500000 --page-rows 100000

The table `events` (an integer key `id`, 16 float, 1 integer and 2 text columns) is written to a SQLite
file chunk by chunk. Each read runs in a child process of its own, which reports its wall time and
peak resident memory (VmHWM) after the read, and its resident memory before it (imports done):

- `pd.read_sql, one fetch`: the former `read_sql`, every row fetched as Python tuples, then the frame;
- `read_sql, streamed chunks`: `tasks.sources.read_sql`, `stream_results` and 50,000 rows at a time;
- `plan pages (keys only)`: `plan_sql_pages` on `id`, the key column streamed in order;
- `one page`: one page of `--page-rows` rows, what a partition worker holds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.measure import table

QUERY = "SELECT * FROM events"
MODES = {
    "whole": "pd.read_sql, one fetch",
    "chunked": "read_sql, streamed chunks",
    "plan": "plan pages (keys only)",
    "page": "one page",
}


def write_table(path: Path, rows: int, chunk: int = 200_000) -> None:
    """`events`: id, f0..f15 (floats, 2% NULL), n (integer), c0, c1 (text), written chunk by chunk."""
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{path}")
    rng = np.random.default_rng(0)
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        floats = rng.normal(size=(n, 16))
        floats[rng.random((n, 16)) < 0.02] = np.nan
        frame = pd.DataFrame(floats, columns=[f"f{i}" for i in range(16)])
        frame.insert(0, "id", np.arange(start, start + n))
        frame["n"] = rng.integers(0, 1000, n)
        frame["c0"] = rng.choice(["alpha", "beta", "gamma", "delta"], n)
        frame["c1"] = [f"user-{v}" for v in rng.integers(0, 50_000, n)]
        frame.to_sql("events", engine, index=False, if_exists="append")
    with engine.begin() as conn:
        conn.execute(text("CREATE INDEX events_id ON events (id)"))
    engine.dispose()


def memory_mb(field: str) -> float:
    """`VmRSS` (resident now) or `VmHWM` (peak resident) of this process, in MB. Not `ru_maxrss`: a
    child started by fork and exec keeps its parent's peak there."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(f"{field}:"))
    return int(line.split()[1]) / 2**10


def child(mode: str, url: str, page_rows: int) -> dict[str, float]:
    """One read in this process: wall seconds, resident MB before, peak resident MB, rows."""
    from sqlalchemy import create_engine, text

    from driftline.tasks.run.sql_pages import plan_sql_pages
    from driftline.tasks.sources import read_sql

    before = memory_mb("VmRSS")
    start = time.perf_counter()
    if mode == "whole":
        engine = create_engine(url)
        with engine.connect() as conn:
            rows = len(pd.read_sql(text(QUERY), conn))
        engine.dispose()
    elif mode == "chunked":
        rows = len(read_sql(url, QUERY))
    elif mode == "plan":
        rows = sum(p.rows for p in plan_sql_pages(url, QUERY, {}, "id", page_rows))
    else:
        page = plan_sql_pages(url, QUERY, {}, "id", page_rows)[0]
        before, start = memory_mb("VmRSS"), time.perf_counter()
        rows = len(page.read())
    seconds = time.perf_counter() - start
    peak = memory_mb("VmHWM")
    return {"seconds": seconds, "before_mb": before, "peak_mb": peak, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--page-rows", type=int, default=250_000)
    parser.add_argument("--child", choices=sorted(MODES), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.url, args.page_rows)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.db"
        start = time.perf_counter()
        write_table(path, args.rows)
        size, took = path.stat().st_size / 2**20, time.perf_counter() - start
        print(f"{args.rows:,} rows x 20 columns, {size:.0f} MB SQLite file, written in {took:.0f} s")
        rows = []
        for mode, label in MODES.items():
            command = [sys.executable, "-m", "benchmarks.bench_sql_pages", "--child", mode]
            command += ["--url", f"sqlite:///{path}", "--page-rows", str(args.page_rows)]
            result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
            rows.append(
                (
                    label,
                    f"{result['rows']:,}",
                    round(result["seconds"], 1),
                    round(result["before_mb"]),
                    round(result["peak_mb"]),
                    round(result["peak_mb"] - result["before_mb"]),
                )
            )
        header = ("read", "rows", "wall s", "RSS before MB", "peak RSS MB", "peak - before MB")
        print(table(rows, header))


if __name__ == "__main__":
    main()
