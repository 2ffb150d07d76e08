"""A file's identity for the reference cache: what changes when the file is replaced, touched or
resized, found without reading it whole.

A local file is known by its path, size, modification time in nanoseconds and a content signature:
the Parquet footer (row-group statistics, column-chunk offsets and sizes) and SAMPLE_BLOCKS blocks
spread evenly over the file, which cover a file of up to SAMPLE_BLOCKS * BLOCK_BYTES (4 MiB) whole.
The signature catches a replacement that keeps size and modification time (`cp -p`, `rsync -t`, tar).
An object in object storage is known by its URL, size, ETag, version id (generation on GCS) and
modification time, which the store changes with every write; a store that gives none of ETag,
version or generation (`memory://`) gets the same content signature as a local file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO

from driftline.tasks.sources import storage

SAMPLE_BLOCKS = 64
BLOCK_BYTES = 64 << 10
MAX_FOOTER_BYTES = 64 << 20  # a longer Parquet footer is hashed up to this many bytes from the end
PARQUET_MAGIC = b"PAR1"
# The keys of an object's metadata (as fsspec filesystems name them) that change when it is rewritten.
VERSION_KEYS = ("ETag", "etag", "VersionId", "version_id", "generation")
TIME_KEYS = ("LastModified", "mtime", "last_modified", "created")


def footer_bytes(fh: IO[bytes], size: int) -> int:
    """How many bytes at the end of the file hold a Parquet footer (its metadata, length and magic);
    0 for a file that is not Parquet."""
    if size < 12:
        return 0
    fh.seek(size - 8)
    trailer = fh.read(8)
    if trailer[4:] != PARQUET_MAGIC:
        return 0
    return min(int.from_bytes(trailer[:4], "little") + 8, size, MAX_FOOTER_BYTES)


def content_signature(fh: IO[bytes], size: int) -> str:
    """SHA-256 of an open file's Parquet footer and of SAMPLE_BLOCKS blocks spread evenly over it."""
    digest = hashlib.sha256()
    footer = footer_bytes(fh, size)
    fh.seek(size - footer)
    digest.update(fh.read(footer))
    last = max(size - BLOCK_BYTES, 0)
    for block in range(SAMPLE_BLOCKS):
        fh.seek(block * last // (SAMPLE_BLOCKS - 1))
        digest.update(fh.read(BLOCK_BYTES))
    return digest.hexdigest()


def file_identity(path: Path) -> str | None:
    """`path`, its size, its modification time in nanoseconds and its content signature; None when it
    cannot be read."""
    try:
        resolved = path.resolve()
        stat = resolved.stat()
        with resolved.open("rb") as fh:
            signature = content_signature(fh, stat.st_size)
    except OSError:
        return None
    return f"{resolved}:{stat.st_size}:{stat.st_mtime_ns}:{signature}"


def object_identity(url: str) -> str | None:
    """The object's URL (masked), size, ETag, version and modification time, with a content signature
    where the store keeps no ETag or version; None when it cannot be reached."""
    try:
        details = storage.info(url)
        size = int(details.get("size") or 0)
        facts = [str(details.get(key) or "") for key in (*VERSION_KEYS, *TIME_KEYS)]
        if not any(details.get(key) for key in VERSION_KEYS):
            with storage.opened(url) as fh:
                facts.append(content_signature(fh, size))
    except (storage.StorageError, OSError):
        return None
    return ":".join([storage.masked(url), str(size), *facts])
