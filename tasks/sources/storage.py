"""Where a data file lives, a local path or an object-storage URL, and the few operations the file
source needs on either: test, list by glob, open, time and size, each naming the file in its errors.

Local paths go through the standard library as before. URLs (`s3://`, `gs://`, `az://`, `memory://`)
go through fsspec, whose filesystem packages come with the extras (`driftline[s3]`, `[gcs]`,
`[azure]`); credentials come from the environment (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, ...),
never from the spec, and every URL shown in a message has its user info and query values masked.
"""

from __future__ import annotations

import glob as local_glob
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from driftline.tasks.sources.base import SourceError
from driftline.tasks.tools.safe_text import first_line

# URL schemes a spec's `path:` may use, and the extra that installs each one's filesystem.
REMOTE_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "memory": None,
}
LOCAL_SCHEMES = frozenset({"file", "local"})
URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
Location = str | Path


class StorageError(SourceError):
    """An object that cannot be found, listed or read; the message names its (masked) URL."""


def scheme(location: Location) -> str | None:
    """The URL scheme of `location` (lower case), None for a plain path."""
    found = URL.match(str(location))
    return found.group(1).lower() if found else None


def is_remote(location: Location) -> bool:
    """Whether `location` is a URL read through fsspec rather than a local path."""
    found = scheme(location)
    return found is not None and found not in LOCAL_SCHEMES


def url_problem(location: str) -> str | None:
    """Why a spec may not name `location`: a scheme driftline does not read, or credentials in the URL
    (they belong in the environment); None when it may."""
    found = scheme(location)
    if found is None or found in LOCAL_SCHEMES:
        return None
    if found not in REMOTE_SCHEMES:
        allowed = ", ".join(f"{s}://" for s in sorted(REMOTE_SCHEMES))
        return f"{masked(location)}: URL scheme {found}:// is not read (use a local path or {allowed})"
    if "@" in location[len(found) + 3 :].split("/", 1)[0]:
        return f"{masked(location)}: credentials do not belong in the spec; set them in the environment"
    return None


def masked(location: Location) -> str:
    """`location` as it may be shown: user info (`key:secret@`) and query values replaced by `***`."""
    text = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]+://)[^/@]*@", r"\1***@", str(location))
    return re.sub(r"([?&][^=&#]+)=[^&#]*", r"\1=***", text)


def local_path(location: Location) -> Path:
    """A local location as a path (a `file://` URL without its scheme)."""
    text = str(location)
    return Path(text.split("://", 1)[1]) if scheme(text) in LOCAL_SCHEMES else Path(text)


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of `url` and the object's path on it; a filesystem that is not installed is
    a `StorageError` naming the extra to install."""
    import fsspec

    name = scheme(url) or ""
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        extra = REMOTE_SCHEMES.get(name)
        hint = f'pip install "driftline[{extra}]"' if extra else "install its fsspec filesystem"
        raise StorageError(f"{masked(url)}: reading {name}:// needs its filesystem ({hint})") from None
    except ValueError as exc:
        raise StorageError(f"{masked(url)}: not a usable URL ({first_line(str(exc))})") from None


def _failed(url: str, exc: Exception) -> StorageError:
    """One line on why an operation on `url` failed, with the URL masked wherever it appears."""
    if isinstance(exc, FileNotFoundError):
        return StorageError(f"{masked(url)}: no such object")
    if isinstance(exc, PermissionError):
        return StorageError(f"{masked(url)}: access denied")
    reason = first_line(str(exc)).replace(url, masked(url))
    return StorageError(f"{masked(url)}: cannot reach the object ({type(exc).__name__}: {masked(reason)})")


@contextmanager
def remote_errors(url: str) -> Iterator[None]:
    """Any failure of the block (a missing object, no access, an unreachable endpoint) as a
    `StorageError` naming `url`."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:
        raise _failed(url, exc) from exc


def info(url: str) -> dict[str, Any]:
    """The object's metadata as its filesystem gives it (size, ETag, version, modification time), read
    afresh rather than from a listing cached earlier."""
    fs, path = filesystem(url)
    with remote_errors(url):
        fs.invalidate_cache(path)
        return dict(fs.info(path))


def exists(location: Location) -> bool:
    """Whether a file (or an object) is at `location`."""
    return _test(location, Path.exists, "exists", fresh=True)


def is_dir(location: Location) -> bool:
    """Whether `location` is a folder (an object-storage prefix)."""
    return _test(location, Path.is_dir, "isdir")


def _test(location: Location, local: Callable[[Path], bool], remote: str, fresh: bool = False) -> bool:
    """`local` of a local path, else the filesystem's `remote` method (after dropping the cached
    listing of the object when `fresh`)."""
    if not is_remote(location):
        return local(local_path(location))
    fs, path = filesystem(str(location))
    with remote_errors(str(location)):
        if fresh:
            fs.invalidate_cache(path)
        return bool(getattr(fs, remote)(path))


def glob(pattern: str, *, files_only: bool = False) -> list[str]:
    """The locations matching a glob pattern (`**` included), as URLs for a URL pattern; with
    `files_only`, folders are left out."""
    if not is_remote(pattern):
        found = local_glob.glob(str(local_path(pattern)), recursive=True)
        return [p for p in found if Path(p).is_file()] if files_only else found
    fs, path = filesystem(pattern)
    with remote_errors(pattern):
        fs.invalidate_cache()
        listed = fs.glob(path, detail=True)
    return [fs.unstrip_protocol(p) for p, d in listed.items() if not files_only or d.get("type") == "file"]


def files_under(location: Location) -> list[str]:
    """Every file below a folder (an object-storage prefix), recursively."""
    if not is_remote(location):
        return [str(p) for p in local_path(location).rglob("*") if p.is_file()]
    fs, path = filesystem(str(location))
    with remote_errors(str(location)):
        fs.invalidate_cache()
        return [fs.unstrip_protocol(p) for p in fs.find(path)]


@contextmanager
def opened(location: Location) -> Iterator[IO[bytes]]:
    """The file open for binary reading; a missing or unreachable object is a `StorageError`."""
    if not is_remote(location):
        with local_path(location).open("rb") as file:
            yield file
        return
    fs, path = filesystem(str(location))
    with remote_errors(str(location)), fs.open(path, "rb") as file:
        yield file


def modified(location: Location) -> datetime:
    """When the file was last written (UTC)."""
    if not is_remote(location):
        return datetime.fromtimestamp(local_path(location).stat().st_mtime, UTC)
    details = info(str(location))
    value = details.get("LastModified") or details.get("mtime") or details.get("created")
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return datetime.now(UTC)


def size(location: Location) -> int:
    """The file's size in bytes."""
    if not is_remote(location):
        return local_path(location).stat().st_size
    return int(info(str(location)).get("size") or 0)


def name_path(location: Location) -> PurePosixPath | Path:
    """The path part of `location`, for its name, stem and suffix."""
    if not is_remote(location):
        return local_path(location)
    return PurePosixPath(str(location).split("://", 1)[1].split("?", 1)[0])


def suffix(location: Location) -> str:
    """The file's suffix in lower case (`.parquet`)."""
    return name_path(location).suffix.lower()
