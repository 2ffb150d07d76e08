"""Files driftline writes: whole or not at all, and readable by their owner only.

Everything driftline keeps (reports, the SQLite history, the spool, the profile cache) holds production
data such as category values and failing row ids, so every file is created with mode 0600 and every
folder with 0700, whatever the umask. A reader never sees half a file, and a failed write leaves no
partial file behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def private_folder(path: Path) -> Path:
    """Create `path` and its missing parents owner-only (`mkdir(parents=True)` would give the parents
    the umask's mode); returns it."""
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=FOLDER_MODE, exist_ok=True)
    return path


def write_private_file(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path` (mode 0600), then move it into place; on any
    failure the temporary file is removed and the error raised."""
    private_folder(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def create_private_file(path: Path) -> None:
    """Create an empty owner-only file at `path` unless one exists, in a folder that must exist (e.g. a
    SQLite database, so that the database library does not create it under the umask)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))


def write_cache_file(path: Path, data: bytes) -> None:
    """`write_private_file`, logging a failure instead of raising it (a cache is an optimisation: a
    read-only or full disk must not fail a run)."""
    try:
        write_private_file(path, data)
    except OSError as exc:
        log.warning("could not write cache file %s: %s", path, exc)
