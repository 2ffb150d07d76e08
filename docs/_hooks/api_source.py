"""mkdocs hook: lay out the `driftline` package as it installs, so mkdocstrings reads its source statically.

The repository keeps `checks/`, `tasks/` and `flows/` beside `driftline/` (a setuptools `package-dir`
mapping) and griffe looks for `driftline/checks` on disk. This hook links them into
`build/api-source/driftline/` (git ignores `build/`) beside a copy of `driftline/`'s own modules, the
path the Python handler reads, so no module is imported to document it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "build" / "api-source" / "driftline"
SUBPACKAGES = ("checks", "tasks", "flows", "data")


@event_priority(100)  # before mkdocstrings sets its search paths, which drop a folder not yet on disk
def on_config(config: Any) -> Any:
    """Link the package tree before any page asks for its API."""
    if TARGET.exists():
        shutil.rmtree(TARGET)
    TARGET.mkdir(parents=True)
    for module in (ROOT / "driftline").glob("*.py"):  # copied: griffe would follow a link back to driftline/
        shutil.copy2(module, TARGET / module.name)
    for name in SUBPACKAGES:
        (TARGET / name).symlink_to(os.path.relpath(ROOT / name, TARGET))
    return config
