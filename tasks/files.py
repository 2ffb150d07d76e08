"""Cache files written whole or not at all: a reader never sees half a file, whatever the writer
went through."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def write_cache_file(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, then move it into place; a failure is logged,
    never raised (a cache is an optimisation: a read-only disk must not fail a run)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except Exception as exc:
        log.warning("could not write cache file %s: %s", path, exc)
