"""Timing and memory measurement shared by the benchmarks."""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def measure(fn: Callable[[], T]) -> tuple[T, float, float]:
    """Result, wall seconds and traced peak memory (MB) of one call."""
    tracemalloc.start()
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return value, seconds, peak


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def repeat_arguments(doc: str | None, repeat_help: str, rows_help: str) -> argparse.Namespace:
    """The options of a benchmark on data of a fixed size: `--repeat N`, and `--rows`, which
    `benchmarks.run` passes to every benchmark and which such a benchmark ignores."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help=repeat_help)
    parser.add_argument("--rows", type=int, help=f"ignored ({rows_help})")
    return parser.parse_args()


def table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    """A fixed-width text table: first column left-aligned, numbers to 3 significant digits."""

    def cell(value: Any) -> str:
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    cells = [header, *[tuple(cell(v) for v in row) for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in cells
    )


def venv_python(
    venv: Path, requirements: Sequence[str], module: str, version: str
) -> tuple[Path | None, str]:
    """The interpreter of a peer library's own virtualenv, created first when it is missing or holds
    another version; None and why when it cannot be installed or does not import."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", f"import {module}, sys; sys.exit({module}.__version__ != {version!r})"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python, f"{module} {version} (cached virtualenv {venv})"
    started = time.perf_counter()
    print(f"creating a virtualenv at {venv} ({', '.join(requirements)}) ...", file=sys.stderr, flush=True)
    base = shutil.which("python3") or sys.executable
    subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True)
    install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements]
    done = subprocess.run(install, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, f"installing {' '.join(requirements)} failed: {done.stderr.strip()[-1500:]}"
    checked = subprocess.run(probe, capture_output=True, text=True, check=False)
    if checked.returncode != 0:
        return None, f"{module} {version} does not import: {checked.stderr.strip()[-1500:]}"
    return python, f"{module} {version} (virtualenv created in {time.perf_counter() - started:.0f} s)"
