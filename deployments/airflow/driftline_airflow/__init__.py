"""driftline for Apache Airflow 3: operators that run the driftline monitor core inside a task.

The operators import only the orchestrator-free core (`driftline.tasks`, `driftline.checks`), never
Prefect, so a monitor run under Airflow stores the same rows and raises the same alerts as
`driftline run`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("driftline-airflow")
except PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
