"""History-store opens of one monitor run: one engine lent to every step (a store scope) against each
step opening, migrating to head and disposing its own, as runs did before.

Run: `.venv/bin/python -m benchmarks.bench_store_opens [--rows N] [--postgres URL]`. A small monitor
(drift and performance checks, N-row reference and batch) stored in SQLite and, when reachable, in
PostgreSQL; prints per database the opens of one run and the seconds spent opening, best of `--repeat`.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from benchmarks.bench_pipeline import write_inputs
from benchmarks.measure import table
from driftline import load_spec, run_monitor
from driftline.tasks.history import db

CHECKS = ["drift.numeric", "performance.overall"]


class OpenTimer:
    """Counts `open_store` calls and the seconds they take."""

    def __init__(self) -> None:
        self.opens, self.seconds = 0, 0.0
        self._real = db.open_store

    def __call__(self, url: str, *, create: bool = True) -> Any:
        started = time.perf_counter()
        try:
            return self._real(url, create=create)
        finally:
            self.opens += 1
            self.seconds += time.perf_counter() - started


def timed_run(spec_path: Path, url: str, scoped: bool) -> tuple[int, float]:
    """(opens, seconds opening) of one run, with the run's store scope or without it."""
    timer = OpenTimer()
    real_scope = db.store_scope
    db.open_store = timer
    if not scoped:
        db.store_scope = lambda url: contextlib.nullcontext()
    try:
        spec = load_spec(spec_path)
        spec.store_url = url
        run_monitor(spec, "2024-01-01", retrain=False)
    finally:
        db.open_store, db.store_scope = timer._real, real_scope
    return timer.opens, timer.seconds


@contextlib.contextmanager
def postgres_database(admin_url: str) -> Any:
    """A throw-away database on PostgreSQL, or None when it is unreachable."""
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    name = f"driftline_bench_{uuid.uuid4().hex[:8]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError:
        admin.dispose()
        yield None
        return
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="driftline-bench-"))
    rows = []
    try:
        spec_path = write_inputs(folder, args.rows, args.rows, CHECKS)
        with postgres_database(args.postgres) as pg_url:
            urls = {"SQLite": f"sqlite:///{folder / 'history.db'}", "PostgreSQL": pg_url}
            for name, url in urls.items():
                if url is None:
                    print(f"{name}: unreachable, left out")
                    continue
                timed_run(spec_path, url, scoped=True)  # create and migrate the store first
                for scoped, label in (
                    (False, "each step opens its own (before)"),
                    (True, "one engine a run"),
                ):
                    best = min(
                        (timed_run(spec_path, url, scoped) for _ in range(args.repeat)), key=lambda r: r[1]
                    )
                    rows.append((f"{name}: {label}", best[0], best[1] * 1000))
        print(f"\nhistory-store opens of one monitor run ({', '.join(CHECKS)}; {args.rows:,} rows)\n")
        print(table(rows, ("store", "opens", "opening ms")))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
