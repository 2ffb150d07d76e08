"""The demo's data for the example DAGs: built once into a folder, from the data the core ships."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEMO_DIR_ENV = "DRIFTLINE_DEMO_DIR"
SPEC_ENV = "DRIFTLINE_SPEC_PATH"
LOCK_NAME = ".build.lock"


def demo_dir() -> Path:
    """Where the demo data go: $DRIFTLINE_DEMO_DIR, else `driftline-demo` under $AIRFLOW_HOME (or ~)."""
    if os.environ.get(DEMO_DIR_ENV):
        return Path(os.environ[DEMO_DIR_ENV]).expanduser()
    home = os.environ.get("AIRFLOW_HOME") or "~/airflow"
    return Path(home).expanduser() / "driftline-demo"


@contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on `folder` (a file lock, so across processes): tasks of runs that start
    together wait for the first to build the data instead of writing the same files at once."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_demo_spec(folder: Path | None = None) -> Path:
    """The demo monitor spec, writing the reference, the six batches and the spec first if missing.

    $DRIFTLINE_SPEC_PATH, when set, names the user's own spec and nothing is built. The spec is
    written last, so under the lock its presence means the data are complete.
    """
    if os.environ.get(SPEC_ENV):
        return Path(os.environ[SPEC_ENV]).expanduser().resolve()
    folder = folder or demo_dir()
    spec = folder / "monitor.yaml"
    with build_lock(folder):
        if not spec.exists():
            from driftline.data.demo import build_demo_data

            build_demo_data(folder)
    return spec.resolve()
