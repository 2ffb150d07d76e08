"""`driftline init` against its CPU budget: CPU seconds of the whole process tree (user + system, the
command and every child it waits for), as a new user pays them.

Rows: the interpreter importing the CLI (a floor), `driftline init` (the demo's data from the shipped
model scores), and training the demo model as `init` did before its scores shipped (what
`python -m driftline.data.demo` does to rewrite them). Budget: `driftline init` at most 5 CPU seconds.

python -m benchmarks.bench_init [--repeat 3]
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.measure import repeat_arguments, table

BUDGET_CPU_S = 5.0
TRAIN = "from driftline.data.demo import model_scores, read_census\nmodel_scores(read_census())\n"


def cpu_and_wall(command: list[str]) -> tuple[float, float]:
    """CPU seconds of the command's process tree (its waited-for children included) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def best_of(repeat: int, make_command) -> tuple[float, float]:
    """The least CPU over `repeat` runs, with that run's wall time (`make_command(i)` gives run i's)."""
    return min(cpu_and_wall(make_command(i)) for i in range(repeat))


def main() -> None:
    args = repeat_arguments(
        __doc__, "runs per row; the least CPU is reported", "the demo's data have a fixed size"
    )
    load = os.getloadavg()[0]
    cli = str(Path(sys.executable).with_name("driftline"))
    with tempfile.TemporaryDirectory() as folder:
        floor = best_of(args.repeat, lambda i: [sys.executable, "-c", "import driftline.flows.cli"])
        init = best_of(args.repeat, lambda i: [cli, "init", str(Path(folder, f"project-{i}"))])
        train = best_of(1, lambda i: [sys.executable, "-c", TRAIN])
    rows = [
        ("floor: import the CLI", *floor, ""),
        ("driftline init (shipped model scores)", *init, "yes" if init[0] <= BUDGET_CPU_S else "NO"),
        ("training the demo model (init before its scores shipped)", *train, ""),
    ]
    print(f"driftline init: CPU of the process tree, best of {args.repeat} (training: one run)")
    print(f"load average at the start: {load:.2f}")
    print(table(rows, ("command", "CPU s", "wall s", f"≤ {BUDGET_CPU_S:g} CPU s")))


if __name__ == "__main__":
    main()
