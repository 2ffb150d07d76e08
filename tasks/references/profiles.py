"""Reference profiles cached by content hash: a check is fitted once per reference snapshot.

On disk a profile is data only, never code (`checks.profile_format`: a NumPy `.npz` archive read
without pickle). A file that is corrupt, of another format or version, or stored under another key is
refitted with a warning.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import NotApplicable
from driftline.checks.fingerprint import code_fingerprint, config_fingerprint
from driftline.checks.profile_format import ProfileFormatError, class_version, dump_profile, load_profile
from driftline.tasks.references.reference import LazyReference, materialised
from driftline.tasks.tools.files import write_cache_file

log = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = Path(".driftline") / "profiles"
SUFFIX = ".npz"


@dataclass(frozen=True)
class Unfittable:
    """Stands in the cache for a check that does not apply to the reference, with the reason."""

    reason: str


# What the cache gives for a profile it does not hold (a profile may itself be None).
NOT_CACHED = object()


class ProfileCache:
    """Profiles in memory and, when `directory` is set, as data-only files on disk keyed by a SHA-256
    of (reference content, check name, check parameters, column roles, the driftline version, the
    check's code and its `__profile_version__`). Safe to share between threads."""

    def __init__(self, directory: Path | None = DEFAULT_CACHE_DIR) -> None:
        self.directory = directory
        self._memory: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def key(self, check: Check, columns: Columns, reference_hash: str) -> str:
        """Cache key of one check's profile on one reference: the check's configuration, the roles,
        the reference content, the driftline version, the check's code and its profile version."""
        import driftline

        code = code_fingerprint(type(check))
        versions = (driftline.__version__, class_version(type(check)))
        return config_fingerprint(
            check.name, check.params(), columns.to_dict(), reference_hash, code, versions
        )

    def has(self, check: Check, columns: Columns, reference_hash: str) -> bool:
        """Whether the profile is cached (in memory or on disk), so fitting it needs no reference rows."""
        key = self.key(check, columns, reference_hash)
        with self._lock:
            if key in self._memory:
                return True
        path = self._path(key)
        return path is not None and path.exists()

    def lookup(self, check: Check, columns: Columns, reference_hash: str) -> Any:
        """The cached profile (None is a profile too), or `NOT_CACHED` when it is not cached (or
        unreadable); never fits."""
        return self._cached(self.key(check, columns, reference_hash), check)

    def _cached(self, key: str, check: Check) -> Any:
        """The profile stored under `key` (None is a profile too), or NOT_CACHED."""
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        profile = self._read(key, check)
        if profile is not NOT_CACHED:
            with self._lock:
                self._memory[key] = profile
        return profile

    def get_or_fit(
        self, check: Check, reference: pd.DataFrame | LazyReference, columns: Columns, reference_hash: str
    ) -> Any:
        """The cached profile, or fit it now (reading a lazy reference) and remember it."""
        key = self.key(check, columns, reference_hash)
        profile = self._cached(key, check)
        if profile is NOT_CACHED:
            try:
                profile = check.fit(materialised(reference), columns)
            except NotApplicable as exc:  # as lasting as a profile: the same reference gives the same answer
                profile = Unfittable(str(exc))
            self._write(key, check, profile)
            with self._lock:
                self.misses += 1
                self._memory[key] = profile
        else:
            with self._lock:
                self.hits += 1
        if isinstance(profile, Unfittable):
            raise NotApplicable(profile.reason)
        return profile

    def _path(self, key: str) -> Path | None:
        return self.directory / f"{key}{SUFFIX}" if self.directory else None

    def _read(self, key: str, check: Check) -> Any:
        path = self._path(key)
        if path is None or not path.exists():
            return NOT_CACHED
        try:
            return load_profile(path, key, (type(check).__module__,))
        except Exception as exc:  # corrupt, foreign or tampered: refitted, never fatal (and never code)
            log.warning(
                "ignoring unreadable cached profile %s (refitting): %s: %s", path, type(exc).__name__, exc
            )
            return NOT_CACHED

    def _write(self, key: str, check: Check, profile: Any) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            data = dump_profile(profile, key, (type(check).__module__,))
        except ProfileFormatError as exc:
            log.warning("profile of %s kept in memory only: %s", check.name, exc)
            return
        write_cache_file(path, data)
