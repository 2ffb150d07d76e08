"""`driftline evaluate` of drift.numeric and drift.categorical against Evidently 0.7's DataDriftPreset.

Real data: the ACS employment survey of Massachusetts shipped in the nannyml 0.13.1 wheel (read from the
archive, nannyml is not installed). Reference = the 2015 rows (68,785), current = 2016-2018 (208,892):
277,677 rows in all. Both sides read the same two Parquet files (19 columns: 16 survey features, the
label `employed`, `prediction`, `predicted_probability`) and compare the same columns: the ones
driftline infers as numeric and categorical features (2 numeric: AGEP and `employed`, whose name is not
a known label name; 15 categorical), which Evidently gets as its data definition.

Each command is one whole process as a user runs it (interpreter start, imports, reading, compute,
output). The commands run in turn, --repeat rounds, and each reports its best wall time and its best
CPU time (user + system, less sensitive to other load on the machine). Evidently runs in its own
virtualenv (Evidently 0.7.23 imports a pandas internal that pandas 3 removed, so that venv has pandas
2.3), created on first use under the cache folder. The bar: the two driftline processes together at
least 12x faster than one DataDriftPreset process over the same columns (goal 20x); each process
against that one is shown too, and so are the in-process times after imports.

python -m benchmarks.bench_vs_evidently [--repeat 3] [--cache DIR] [--venv DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.measure import table, venv_python

NANNYML = "nannyml==0.13.1"
DATA = "nannyml/datasets/data/"
EVIDENTLY = ("evidently==0.7.23", "pandas<3")  # 0.7.23 fails to import with pandas 3 (see docstring)
PEER_SCRIPT = Path(__file__).with_name("evidently_drift.py")
CHECKS = ("drift.numeric", "drift.categorical")


def default_cache() -> Path:
    """Where the downloaded wheel and Evidently's virtualenv live: outside the repository."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "driftline-bench"


def employment_frames(cache: Path) -> tuple[Any, Any]:
    """The ACS reference (2015) and analysis (2016-2018) frames, label joined on, id and year dropped."""
    import pandas as pd

    wheels = sorted(cache.glob("nannyml-0.13.1-*.whl"))
    if not wheels:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", NANNYML, "-d", str(cache)]
        subprocess.run(command, check=True, capture_output=True)
        wheels = sorted(cache.glob("nannyml-0.13.1-*.whl"))
    with zipfile.ZipFile(wheels[0]) as archive:

        def read(name: str) -> pd.DataFrame:
            return pd.read_parquet(io.BytesIO(archive.read(DATA + name)))

        reference = read("employment_MA_reference.pq")
        current = read("employment_MA_analysis.pq").merge(read("employment_MA_analysis_target.pq"), on="id")
    keep = [c for c in reference.columns if c not in ("id", "year")]
    return reference[keep], current[keep]


@dataclass
class Runs:
    """Every run of one command: wall seconds, CPU seconds (user + system) and standard output."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    out: list[str] = field(default_factory=list)


def run_once(command: list[str], into: Runs) -> None:
    """Run one command as a user would; it must succeed (exit 1 = checks that failed, still a run)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    into.wall.append(seconds)
    into.cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    into.out.append(done.stdout)


def round_robin(repeat: int, commands: dict[str, list[str]]) -> dict[str, Runs]:
    """Run every command once per round, `repeat` rounds, so both sides meet the same machine load."""
    runs = {name: Runs() for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            run_once(command, runs[name])
    return runs


def driftline_compute(repeat: int, folder: Path, checks: tuple[str, ...]) -> float:
    """Best in-process seconds of `driftline evaluate`'s work after imports: read, infer roles, run."""
    from driftline.checks import registry
    from driftline.checks.columns import infer_columns
    from driftline.checks.runner import run_check
    from driftline.tasks.sources import read_table

    def once() -> None:
        reference = read_table(folder / "reference.parquet")
        current = read_table(folder / "current.parquet")
        columns = infer_columns(reference, {})
        for name in checks:
            run_check(registry.create(name, {}), current, columns, reference=reference)

    return min(_timed(once) for _ in range(repeat))


def _timed(fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the best is reported")
    parser.add_argument("--cache", type=Path, default=default_cache(), help="wheel and venv folder")
    parser.add_argument("--venv", type=Path, help="Evidently's virtualenv (default: CACHE/venv-evidently)")
    parser.add_argument("--rows", type=int, help="ignored (the real data has a fixed size)")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    peer_python, setup = venv_python(
        args.venv or args.cache / "venv-evidently", EVIDENTLY, "evidently", "0.7.23"
    )
    if peer_python is None:
        raise SystemExit(setup)
    print(setup)
    cli = str(Path(sys.executable).with_name("driftline"))

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reference, current = employment_frames(args.cache)
        reference.to_parquet(folder / "reference.parquet", index=False)
        current.to_parquet(folder / "current.parquet", index=False)
        files = [
            "--reference",
            str(folder / "reference.parquet"),
            "--current",
            str(folder / "current.parquet"),
        ]

        def evaluate(*checks: str) -> list[str]:
            return [cli, "evaluate", *[a for c in checks for a in ("--check", c)], *files, "--json"]

        first = Runs()
        run_once(evaluate(*CHECKS), first)  # warms the file cache; tells the compared columns
        targets = {c: [r["target"] for r in json.loads(first.out[0]) if r["check"] == c] for c in CHECKS}
        numeric, categorical = targets["drift.numeric"], targets["drift.categorical"]

        def peer(num: list[str], cat: list[str]) -> list[str]:
            paths = [str(folder / "reference.parquet"), str(folder / "current.parquet")]
            columns = ["--numeric", ",".join(num), "--categorical", ",".join(cat)]
            return [str(peer_python), str(PEER_SCRIPT), *paths, *columns]

        run_once(peer(numeric, categorical), Runs())  # warm-up: first imports compile bytecode
        runs = round_robin(
            args.repeat,
            {
                "ours numeric": evaluate("drift.numeric"),
                "ours categorical": evaluate("drift.categorical"),
                "ours both": evaluate(*CHECKS),
                "theirs numeric": peer(numeric, []),
                "theirs categorical": peer([], categorical),
                "theirs both": peer(numeric, categorical),
            },
        )
        compute = {
            "numeric": driftline_compute(args.repeat, folder, ("drift.numeric",)),
            "categorical": driftline_compute(args.repeat, folder, ("drift.categorical",)),
            "both": driftline_compute(args.repeat, folder, CHECKS),
        }

    def best(name: str) -> tuple[float, float]:
        return min(runs[name].wall), min(runs[name].cpu)

    def peer_compute(key: str) -> float:
        reports = [json.loads(out) for out in runs[f"theirs {key}"].out]
        return min(r["load_s"] + r["compute_s"] for r in reports)

    num, cat, both = best("ours numeric"), best("ours categorical"), best("ours both")
    two = (num[0] + cat[0], num[1] + cat[1])
    all_cols = best("theirs both")
    pairs = [
        ("drift.numeric | preset on numeric cols", num, best("theirs numeric")),
        ("drift.categorical | preset on categorical cols", cat, best("theirs categorical")),
        ("drift.numeric | preset on all cols", num, all_cols),
        ("drift.categorical | preset on all cols", cat, all_cols),
        ("both checks, two processes (the bar) | preset on all", two, all_cols),
        ("both checks, one process | preset on all", both, all_cols),
    ]
    wall_rows = [(name, d[0], e[0], e[0] / d[0], d[1], e[1], e[1] / d[1]) for name, d, e in pairs]
    in_process = [
        ("drift.numeric | numeric cols", compute["numeric"], peer_compute("numeric")),
        ("drift.categorical | categorical cols", compute["categorical"], peer_compute("categorical")),
        ("both checks | all cols", compute["both"], peer_compute("both")),
    ]
    drifted = json.loads(runs["theirs both"].out[0])["drifted"]
    print(
        f"ACS employment MA (nannyml 0.13.1): reference {len(reference):,} rows (2015), current "
        f"{len(current):,} rows (2016-2018), {reference.shape[1]} columns in each file; compared: "
        f"{len(numeric)} numeric {numeric}, {len(categorical)} categorical; Evidently flags {drifted:g} "
        f"drifted; best of {args.repeat}"
    )
    print(
        "\nwhole process, best wall and best CPU (user + system) seconds"
        " (driftline evaluate | Evidently 0.7.23 DataDriftPreset)"
    )
    header = ("workload (driftline | Evidently)", "driftline s", "evidently s", "ratio")
    print(table(wall_rows, (*header, "driftline cpu s", "evidently cpu s", "cpu ratio")))
    print("\nin-process, after imports: read both files + compute (driftline | Evidently)")
    print(
        table(
            [(n, d, e, e / d) for n, d, e in in_process],
            ("workload", "driftline s", "evidently s", "ratio"),
        )
    )
    print(f"\nbar: the two-process wall ratio >= 12 (goal 20); measured {all_cols[0] / two[0]:.1f}")


if __name__ == "__main__":
    main()
