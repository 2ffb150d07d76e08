"""driftline: continuous monitoring of deployed ML models.

The public API is imported lazily, so `import driftline` stays cheap and never imports an
orchestrator: `create`, `run_check`, `infer_columns` (the check catalog), `evaluate` (checks on two
tables, isolated and limited as in a run), `load_spec` and `run_monitor` (the orchestrator-free
monitor core).
"""

from __future__ import annotations

from typing import Any

from driftline.lazy import exports

_PUBLIC = {
    "create": "driftline.checks.registry",
    "run_check": "driftline.checks.runner",
    "infer_columns": "driftline.checks.columns",
    "evaluate": "driftline.tasks.run.evaluate",
    "load_spec": "driftline.tasks.config.spec",
    "run_monitor": "driftline.tasks.run.pipeline",
}

__all__ = ["__version__", *_PUBLIC]
_public, __dir__ = exports(__name__, _PUBLIC)


def _version() -> str:
    """The installed distribution's version (read on first use: importlib.metadata is slow to load)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("driftline")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """The version, or a public name, read on first use."""
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    return _public(name)
