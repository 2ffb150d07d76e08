"""The file source: a CSV or Parquet file, a `{batch}` template of them, or a glob or folder of Parquet
partitions a batch, on the local disk or in object storage (`s3://`, `gs://`, `az://`, `memory://`);
batches are found by listing, their ids taken from the names."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from driftline.tasks.sources import storage
from driftline.tasks.sources.base import (
    BATCH_ID,
    BATCH_ID_RULE,
    BATCH_PLACEHOLDER,
    Batch,
    SourceError,
    batch_time_from_id,
    natural_key,
    valid_batch_id,
)
from driftline.tasks.sources.identity import file_identity, object_identity
from driftline.tasks.sources.read_limits import DEFAULT_LIMITS, ReadLimits
from driftline.tasks.sources.storage import Location
from driftline.tasks.sources.tables import PARQUET_SUFFIXES, read_table

log = logging.getLogger(__name__)


def list_batch_ids(template: str) -> list[str]:
    """Batch ids matching a path template with a `{batch}` placeholder, sorted (oldest first)."""
    if is_partitioned(template):
        return _partitioned_batch_ids(template)
    if BATCH_PLACEHOLDER not in template:
        return [_fixed_batch_id(storage.name_path(template).stem)] if storage.exists(template) else []
    prefix, suffix = template.split(BATCH_PLACEHOLDER, 1)
    pattern = re.compile(re.escape(prefix) + "(.+?)" + re.escape(suffix) + "$")
    found = {m.group(1): p for p in _listed(prefix + "*" + suffix) if (m := pattern.match(p))}
    return _listed_ids(found)


def _listed(pattern: str) -> list[str]:
    """What a glob pattern matches, each spelt as the pattern spells its scheme (`memory://x`, not
    `memory:///x`), so that a template's prefix matches it."""
    found = storage.glob(pattern)
    if not storage.is_remote(pattern):
        return found
    scheme, rest = pattern.split("://", 1)
    head = scheme + "://" + "/" * (len(rest) - len(rest.lstrip("/")))
    return [head + p.split("://", 1)[1].lstrip("/") for p in found]


def _listed_ids(found: dict[str, str]) -> list[str]:
    """The valid batch ids of `found` (id: the file or folder it came from), sorted; the others are
    stray files, skipped with one warning naming the first of them (an explicit `--batch` still
    refuses an id that is not valid)."""
    stray = sorted(path for batch_id, path in found.items() if not BATCH_ID.fullmatch(batch_id))
    if stray:
        log.warning(
            "skipped %d file(s) whose name is not a batch id, such as %r: %s",
            len(stray),
            storage.masked(stray[0]),
            BATCH_ID_RULE,
        )
    return sorted((batch_id for batch_id in found if BATCH_ID.fullmatch(batch_id)), key=natural_key)


def _fixed_batch_id(name: str) -> str:
    """The id of the one batch a template without `{batch}` names: its file or folder name when that is
    a valid batch id (`data/parts/*.parquet` is not), else "batch"."""
    return name if BATCH_ID.fullmatch(name) else "batch"


# --- partitioned batches: a directory or a glob of Parquet files per batch -----------------------------

GLOB_CHARACTERS = frozenset("*?[")


def is_partitioned(template: str) -> bool:
    """Whether a batch path template names a set of Parquet partitions rather than one file: it has
    glob characters (`data/{batch}/*.parquet`) or ends with a slash (`data/{batch}/`)."""
    path = template.split("?", 1)[0] if storage.is_remote(template) else template
    return bool(GLOB_CHARACTERS & set(path)) or template.endswith(("/", "\\"))


def is_parquet_file(template: str) -> bool:
    """Whether a batch path template names one Parquet file a batch (`data/{batch}.parquet`), which a
    partitioned run reads by row groups."""
    return not is_partitioned(template) and storage.suffix(template) in PARQUET_SUFFIXES


def _partitioned_batch_ids(template: str) -> list[str]:
    """Batch ids of a partitioned template: the values of `{batch}` for which a partition exists."""
    if BATCH_PLACEHOLDER not in template:
        name = storage.name_path(template.rstrip("/")).name
        return [_fixed_batch_id(name)] if partition_paths(template) else []
    prefix, suffix = template.split(BATCH_PLACEHOLDER, 1)
    head = suffix.partition("/")[0]
    if "/" not in suffix or GLOB_CHARACTERS & set(head):
        raise SourceError(
            f"{storage.masked(template)!r}: in a partitioned batch path, {BATCH_PLACEHOLDER} names a folder"
        )
    pattern = re.compile(re.escape(prefix) + "([^/]+?)" + re.escape(head) + "$")
    found = {
        m.group(1): p
        for p in _listed(prefix + "*" + head)
        if (m := pattern.match(p)) and partition_paths(template.replace(BATCH_PLACEHOLDER, m.group(1)))
    }
    return _listed_ids(found)


def partition_paths(pattern: str) -> list[str]:
    """The Parquet files of one batch (a glob, or every Parquet file under a directory), in natural
    order of their paths."""
    if pattern.endswith(("/", "\\")) or (not is_partitioned(pattern) and storage.is_dir(pattern)):
        found = [p for p in storage.files_under(pattern) if storage.suffix(p) in PARQUET_SUFFIXES]
    else:
        found = storage.glob(pattern, files_only=True)
    return sorted(found, key=natural_key)


def named_or_newest(template: str, batch_id: str | None, nothing: str) -> str:
    """`batch_id` (validated), or when None the newest batch `template` lists; none is a `SourceError`
    that says `nothing` (such as "no batch file matches") of the template."""
    if batch_id is not None:
        return valid_batch_id(batch_id)
    ids = list_batch_ids(template)
    if not ids:
        raise SourceError(f"{nothing} {storage.masked(template)!r}")
    return ids[-1]


def batch_partitions(template: str, batch_id: str | None) -> tuple[str, list[str]]:
    """The batch id (the newest when None) and its partition files; none found is a `SourceError`."""
    batch_id = named_or_newest(template, batch_id, "no batch partitions match")
    paths = partition_paths(template.replace(BATCH_PLACEHOLDER, batch_id))
    if not paths:
        raise SourceError(f"batch {batch_id!r}: no Parquet partition matches {storage.masked(template)!r}")
    unsupported = [p for p in paths if storage.suffix(p) not in PARQUET_SUFFIXES]
    if unsupported:
        raise SourceError(f"{storage.masked(unsupported[0])}: partitions must be Parquet files (.parquet)")
    return batch_id, paths


def partitions_time(batch_id: str, paths: list[str]) -> datetime:
    """The time a partitioned batch stands for: its id's date, else its newest partition's mtime."""
    return batch_time_from_id(batch_id) or max(storage.modified(p) for p in paths)


def load_partitioned_batch(template: str, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
    """Every partition of one batch read (each within `limits`) and concatenated in order (the
    single-process path)."""
    batch_id, paths = batch_partitions(template, batch_id)
    frames = [read_table(p, limits) for p in paths]
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return Batch(batch_id, frame, partitions_time(batch_id, paths))


def load_file_batch(template: str, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
    """The batch `batch_id` (the newest when None) from a path template, read within `limits`."""
    if is_partitioned(template):
        return load_partitioned_batch(template, batch_id, limits)
    batch_id, path = batch_file(template, batch_id)
    frame = read_table(path, limits)
    return Batch(batch_id, frame, batch_time_from_id(batch_id) or storage.modified(path))


def batch_file(template: str, batch_id: str | None) -> tuple[str, str]:
    """The batch id (the newest when None) and the file a single-file template names for it."""
    batch_id = named_or_newest(template, batch_id, "no batch file matches")
    return batch_id, template.replace(BATCH_PLACEHOLDER, batch_id)


@dataclass(frozen=True)
class FileSource:
    """A spec's `path:` source: `location` is a local path (resolved against the spec's folder) or a URL,
    naming one file (the reference), a `{batch}` template, or Parquet partitions (a glob or a folder)."""

    location: str

    def describe(self) -> str:
        """The file or URL, credentials masked."""
        return storage.masked(self.location)

    def require(self) -> None:
        """A reference file that is not there is a one-line `SourceError` naming it."""
        if not storage.exists(self.location):
            missing = "no such object" if storage.is_remote(self.location) else "no such file"
            raise SourceError(f"{self.describe()}: {missing}")

    def identity(self) -> str | None:
        """The file's identity for the reference cache: path, size, time and content signature of a
        local file; URL, size, ETag or version and time of an object. None when it cannot be read."""
        if storage.is_remote(self.location):
            return object_identity(self.location)
        return file_identity(storage.local_path(self.location))

    def list_batches(self) -> list[str]:
        """The batch ids the template lists, oldest first."""
        return list_batch_ids(self.location)

    def read(self, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
        """The one file this source names, within `limits`."""
        return read_table(self.location, limits)

    def read_batch(self, batch_id: str | None, limits: ReadLimits = DEFAULT_LIMITS) -> Batch:
        """One batch (the newest when `batch_id` is None), within `limits`."""
        return load_file_batch(self.location, batch_id, limits)

    def read_labels(self, batch_id: str, limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame | None:
        """The labels file of one batch, None when it has not landed (no file yet, or no row)."""
        path: Location = self.location.replace(BATCH_PLACEHOLDER, batch_id)
        if not storage.exists(path):
            return None
        frame = read_table(path, limits)
        return frame if len(frame) else None
