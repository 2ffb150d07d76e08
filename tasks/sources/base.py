"""What every source shares: the batch a source loads, the errors it raises, and the rule a batch id
follows before it names a file, a folder or a run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd

BATCH_PLACEHOLDER = "{batch}"
# A batch id names a file (through `{batch}`), a report folder and the runs of the history, so it is one
# plain path component: a letter, digit or `_` first, then letters, digits and `_ . - : = + @ , ~ ( )`
# or spaces, at most 200 characters, never `..`. Path separators and control characters are refused.
BATCH_ID = re.compile(r"(?!.*\.\.)\w[\w.:=+@,~() -]{0,199}")
BATCH_ID_RULE = (
    "use letters, digits, spaces and _.-:=+@,~() (a letter, digit or _ first; no '..'; at most 200)"
)


class SourceError(ValueError):
    """A source that cannot be read: the message names the file, query or batch."""


class BatchIdError(SourceError):
    """A batch id (given, listed from file names or stored) that could escape its folder or the terminal."""


def valid_batch_id(batch_id: str, origin: str = "") -> str:
    """`batch_id` when it matches `BATCH_ID`, else a `BatchIdError` naming it (and `origin`, the file
    it came from) so that it never reaches a path template, a report folder or the history."""
    if BATCH_ID.fullmatch(batch_id):
        return batch_id
    where = f"{origin}: " if origin else ""
    raise BatchIdError(f"{where}batch id {batch_id!r} is not allowed: {BATCH_ID_RULE}")


@dataclass(frozen=True)
class Batch:
    """One production batch: its id, its frame and the time it stands for."""

    batch_id: str
    frame: pd.DataFrame
    batch_time: datetime


def batch_time_from_id(batch_id: str) -> datetime | None:
    """The date a batch id names (`2024-05-01`, `2024-05`, `20240501`), or None."""
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d", "%Y-%m", "%Y%m%d"):
        try:
            return datetime.strptime(batch_id, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def natural_key(text: str) -> list[object]:
    """`text` split into its runs of decimal digits (as numbers) and the text between, so that `b2`
    sorts before `b10`; digit-like characters that are not decimal digits (`²`, `①`) stay text."""
    return [int(part) if part.isdecimal() else part for part in re.split(r"(\d+)", text)]
