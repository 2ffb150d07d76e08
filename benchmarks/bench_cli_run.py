"""What one `driftline run` costs as a user runs it: one whole process, profiles cached, beside a floor.

The demo monitor (`driftline init`'s spec: 16 checks on the ACS table, 17 features, the
label, a scikit-learn model's prediction and score; its last batch, 6,000 rows) run by the command line,
and beside it:

- the floor, a plain Python process doing the least a monitor of this batch does: import pandas,
  scipy.stats and sklearn.metrics, read both Parquet files, one KS test or chi-square test and one PSI
  a column, and the model's AUC on each side;
- `driftline --help`, the cost of the command line before any step;
- the run without its Great Expectations check, and the import of Great Expectations alone (which bounds
  a run that validates a suite: it starts first, in its own worker);
- `driftline evaluate` of one check on the two files;
- one row per engine named with `--engine` (`local` by default; `prefect` starts a temporary server
  unless PREFECT_API_URL names a running one, which is passed on).

Each command is a child process: its CPU is user + system time of its whole tree (reaped), its memory the
peak of its tree's proportional set sizes summed (`TreeMemory`, sampled every 0.1 s). The commands run
in interleaved rounds (each round runs every command once) and each figure is its minimum over the
rounds, so a burst of load on a shared machine moves one round, not one row. The children read compiled
bytecode, as an installed package's modules are (written in a temporary folder by the first, untimed
round); `--no-bytecode` writes none, so modules without bytecode beside them (a checkout's) compile on
every start, as with PYTHONDONTWRITEBYTECODE set (about 0.1 CPU s more for a driftline command).

python -m benchmarks.bench_cli_run [--rounds 3] [--engine local --engine prefect] [--no-bytecode]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.measure import table
from benchmarks.wide_tables import TreeMemory

BATCH = "2018-12"
FLOOR = """\
import sys
import numpy as np, pandas as pd, scipy.stats, sklearn.metrics
reference, batch = pd.read_parquet(sys.argv[1]), pd.read_parquet(sys.argv[2])
for name in reference.columns.drop(["id", "employed", "prediction"]):
    ref, cur = reference[name].dropna(), batch[name].dropna()
    if name in ("AGEP", "score"):
        scipy.stats.ks_2samp(ref, cur)
        edges = np.unique(np.quantile(ref, np.linspace(0, 1, 11)))
        counts = [np.histogram(side, edges)[0] + 0.5 for side in (ref, cur)]
    else:
        seen = pd.concat([ref.value_counts(), cur.value_counts()], axis=1).fillna(0).to_numpy()
        scipy.stats.chi2_contingency(seen + 0.5)
        counts = [seen[:, 0] + 0.5, seen[:, 1] + 0.5]
    p, q = (c / c.sum() for c in counts)
    float(np.sum((q - p) * np.log(q / p)))
for side in (reference, batch):
    sklearn.metrics.roc_auc_score(side["employed"], side["score"])
"""


@dataclass(frozen=True)
class Cost:
    """One command's wall seconds, CPU seconds of its process tree and peak tree memory (PSS, MB)."""

    wall_s: float
    cpu_s: float
    peak_mb: float


def cost(command: list[str], env: dict[str, str]) -> Cost:
    """The cost of one command; exit 0 (passed) and 1 (a failed batch) both count as a run."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with TreeMemory(child.pid) as memory:
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read() if child.stderr else ""
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}:\n{stderr[-2000:]}")
    return Cost(seconds, usage.ru_utime + usage.ru_stime, memory.peak_pss / 2**20)


def least(costs: list[Cost]) -> Cost:
    """Each figure's minimum over the rounds."""
    return Cost(*(min(getattr(c, f) for c in costs) for f in ("wall_s", "cpu_s", "peak_mb")))


def without_expectations(spec: Path) -> Path:
    """A copy of the spec without its `expectations.suite` check, beside it."""
    import yaml

    data = yaml.safe_load(spec.read_text())
    data["checks"] = [c for c in data["checks"] if "expectations.suite" not in str(c)]
    data["name"] = f"{data['name']}-no-gx"
    copy = spec.with_name("monitor-no-gx.yaml")
    copy.write_text(yaml.safe_dump(data))
    return copy


def commands(folder: Path, spec: Path, engines: list[str]) -> dict[str, list[str]]:
    """The commands measured, by the name of their row; the floor first."""
    cli = str(Path(sys.executable).with_name("driftline"))
    data = folder / "data"
    reference, batch = str(data / "reference.parquet"), str(data / "batches" / f"{BATCH}.parquet")
    run = [cli, "run", str(spec), "--batch", BATCH, "--json"]
    no_gx = [cli, "run", str(without_expectations(spec)), "--batch", BATCH, "--json"]
    rows = {
        "floor: read both files, KS or chi-square and PSI a column, AUC": [
            sys.executable,
            "-c",
            FLOOR,
            reference,
            batch,
        ],
        "driftline --help": [cli, "--help"],
    }
    for engine in engines:
        rows[f"driftline run --engine {engine}"] = [*run, "--engine", engine]
        rows[f"driftline run --engine {engine}, without expectations.suite"] = [*no_gx, "--engine", engine]
    rows["driftline evaluate --check drift.numeric"] = [
        *(cli, "evaluate", "--check", "drift.numeric", "--json"),
        *("--reference", reference, "--current", batch),
    ]
    rows["python -c 'import great_expectations' (its import alone)"] = [
        sys.executable,
        "-c",
        "import great_expectations",
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each figure's minimum")
    parser.add_argument("--rows", type=int, help="ignored (the demo's batches have 6,000 rows)")
    parser.add_argument(
        "--engine", action="append", help="an engine to run the monitor on (repeatable; default local)"
    )
    parser.add_argument(
        "--no-bytecode", action="store_true", help="children compile every module from source each time"
    )
    args = parser.parse_args()
    engines = args.engine or ["local"]
    load = os.getloadavg()[0]
    from driftline.data.demo import build_demo_data

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        spec = build_demo_data(folder)
        env = dict(os.environ)
        env.update(
            DRIFTLINE_DATABASE_URL=f"sqlite:///{folder / 'history.db'}",
            PREFECT_HOME=str(folder / "prefect"),
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
        )
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(folder / "bytecode")
        measured = commands(folder, spec, engines)
        for command in measured.values():  # fits and caches the profiles, warms the file cache
            cost(command, env)
        costs: dict[str, list[Cost]] = {row: [] for row in measured}
        for round_ in range(args.rounds):
            for row, command in measured.items():
                costs[row].append(cost(command, env))
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    best = {row: least(c) for row, c in costs.items()}
    floor = next(iter(best.values()))
    rows = [
        (row, c.wall_s, c.cpu_s, c.cpu_s / floor.cpu_s, c.peak_mb, c.peak_mb / floor.peak_mb)
        for row, c in best.items()
    ]
    print(f"demo monitor, batch {BATCH} (6,000 rows, 16 checks), profiles cached; {args.rounds} rounds")
    bytecode = "no bytecode written" if args.no_bytecode else "bytecode cached"
    print(f"load average at the start: {load:.2f}; {bytecode}")
    print(table(rows, ("command", "wall s", "CPU s", "CPU × floor", "peak MB", "MB × floor")))


if __name__ == "__main__":
    main()
