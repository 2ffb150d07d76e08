"""Where a data file lives, a local path or an object-storage URL, and the few operations the file
source needs on either: test, list by glob, open, time and size, each naming the file in its errors.

Local paths go through the standard library as before. URLs (`s3://`, `gs://`, `az://`, `memory://`)
go through fsspec, whose filesystem packages come with the extras (`driftline[s3]`, `[gcs]`,
`[azure]`); credentials come from the environment (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, ...),
never from the spec, and every URL shown in a message has its user info and query values masked.

Object storage fails for a moment now and then (a connection reset, a 5xx, throttling): every remote
operation here, and every whole read of a table or a partition, is `retrying`: tried again a few times
with backoff, then failed with one line naming the URL and the attempts. A missing object or a denied
access fails at once.
"""

from __future__ import annotations

import functools
import glob as local_glob
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any, ParamSpec, TypeVar

from driftline.tasks.sources.base import SourceError
from driftline.tasks.tools import retry
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
P = ParamSpec("P")
T = TypeVar("T")
log = logging.getLogger(__name__)

# Seconds before the 2nd, 3rd and 4th attempt of an operation that failed transiently.
RETRY_DELAYS: tuple[float, ...] = (0.5, 2.0, 5.0)
# Error codes of object stores (S3 and its kin) that say "try again": throttling and server faults.
TRANSIENT_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "TooManyRequests",
        "RequestLimitExceeded",
        "RequestTimeout",
        "InternalError",
        "ServiceUnavailable",
    }
)
# Exception classes of the storage clients (botocore, aiohttp, fsspec) that are network failures,
# matched by name so that no client is imported to classify its errors.
NETWORK_ERROR_NAMES = frozenset(
    {
        "HTTPClientError",  # botocore: connection closed or reset, read timeout, streaming failure
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ClientConnectionError",  # aiohttp: reset, disconnected, payload cut off
        "ClientPayloadError",
        "ServerTimeoutError",
        "FSTimeoutError",
    }
)
# Whether a retried operation is running in this context: the operations it calls are tried once.
_retrying: ContextVar[bool] = ContextVar("driftline_storage_retrying", default=False)


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


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and the exceptions it was raised from or while handling, nearest first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _answer(error: BaseException) -> tuple[int | None, str | None] | None:
    """The HTTP status and error code the store answered, when `error` is such an answer (botocore's
    `ClientError` and its kin carry it as `response`)."""
    response = getattr(error, "response", None)
    if not (isinstance(response, dict) and isinstance(response.get("Error"), dict)):
        return None
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    code = response["Error"].get("Code")
    return (status if isinstance(status, int) else None), (str(code) if code else None)


def is_transient(exc: BaseException) -> bool:
    """Whether a failure may pass if the operation is tried again: a connection refused, reset or timed
    out, a 5xx or 429 answer, or a throttling code; never a missing object or a denied access."""
    for error in _chain(exc):
        if isinstance(error, FileNotFoundError | PermissionError):
            return False
        if (answer := _answer(error)) is not None:
            status, code = answer
            return code in TRANSIENT_CODES or (status is not None and (status >= 500 or status == 429))
        if isinstance(error, ConnectionError | TimeoutError):
            return True
        if any(cls.__name__ in NETWORK_ERROR_NAMES for cls in type(error).__mro__):
            return True
    return False


def retrying(operation: Callable[P, T]) -> Callable[P, T]:
    """`operation`, tried again after each of `RETRY_DELAYS` while it fails transiently; then a
    `StorageError` with the last failure's first line (which names the URL) and the attempts. Inside a
    retrying operation the others are tried once, so attempts never multiply."""

    @functools.wraps(operation)
    def retried(*args: P.args, **kwargs: P.kwargs) -> T:
        if _retrying.get():
            return operation(*args, **kwargs)
        token = _retrying.set(True)
        try:
            return _attempts(functools.partial(operation, *args, **kwargs))
        finally:
            _retrying.reset(token)

    return retried


def _attempts(call: Callable[[], T]) -> T:
    """`call()`, tried up to `len(RETRY_DELAYS) + 1` times while it fails transiently (see `retrying`)."""
    attempts = len(RETRY_DELAYS) + 1

    def told(exc: BaseException, delay: float, attempt: int) -> None:
        reason = first_line(str(exc))
        log.warning("%s; trying again in %g s (attempt %d of %d)", reason, delay, attempt, attempts)

    try:
        return retry.retried(call, RETRY_DELAYS, is_transient, told)
    except Exception as exc:
        if not is_transient(exc):
            raise
        raise StorageError(f"{first_line(str(exc))}; gave up after {attempts} attempts") from exc


def _failed(url: str, exc: Exception) -> StorageError:
    """One line on why an operation on `url` failed, with the URL masked wherever it appears."""
    if isinstance(exc, FileNotFoundError):
        return StorageError(f"{masked(url)}: no such object")
    if isinstance(exc, PermissionError):
        return StorageError(f"{masked(url)}: access denied")
    answers = [answer for error in _chain(exc) if (answer := _answer(error)) is not None]
    if answers:
        status, code = answers[0]
        said = f"HTTP {status}" if status else ""
        if code and code != str(status):  # a HEAD answer has no body: its code is the status again
            said = f"{said} {code}".strip()
        return StorageError(f"{masked(url)}: the store answered {masked(first_line(said))}")
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


@retrying
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


@retrying
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


@retrying
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


@retrying
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
