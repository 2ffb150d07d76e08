"""File names the site makes from data: a page per monitor, and the run reports it copies in.

A monitor name comes from the store, which any writer may have filled, so it never becomes a path as
it is: a name that is one plain path component (letters, digits, `_ . -`, not starting with a dot)
keeps its spelling, any other is reduced to those characters and given a hash of its own, as are
names that would only differ by case on a case-insensitive disk.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import quote

from driftline.tasks.report.render import REPORT_FILE
from driftline.tasks.sources import BATCH_ID

SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")
UNSAFE_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]+")
HASH_LENGTH = 10


def _hashed(name: str) -> str:
    """`name` reduced to safe characters (at most 60), then `-` and a hash of the whole name."""
    readable = UNSAFE_CHARACTERS.sub("_", name).lstrip(".")[:60] or "monitor"
    return f"{readable}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:HASH_LENGTH]}"


def page_stems(monitors: Iterable[str]) -> dict[str, str]:
    """A distinct file stem for each monitor name (see the module's docstring)."""
    names = list(dict.fromkeys(monitors))
    plain = {name: name if SAFE_NAME.fullmatch(name) else _hashed(name) for name in names}
    folded = Counter(stem.lower() for stem in plain.values())
    return {name: stem if folded[stem.lower()] == 1 else _hashed(name) for name, stem in plain.items()}


def href(*parts: str) -> str:
    """A relative URL of path components, each percent-encoded (a batch id may hold spaces or `:`)."""
    return "/".join(quote(part, safe="") for part in parts)


def stored_report(roots: Sequence[Path], monitor: str, batch_id: str) -> Path | None:
    """The run report `<root>/<monitor>/<batch>/report.html` of the first root holding it, where a
    run writes it (`tasks.run.pipeline.report_dir` under `.driftline/reports`); None when there is none,
    or when the monitor or batch is not a plain path component or the file resolves outside its root."""
    if not SAFE_NAME.fullmatch(monitor) or not BATCH_ID.fullmatch(batch_id):
        return None
    for root in roots:
        path = root / monitor / batch_id / REPORT_FILE
        if path.is_file() and path.resolve().is_relative_to(root.resolve()):
            return path
    return None
