"""Reference profiles cached by content hash: a check is fitted once per reference snapshot."""

from __future__ import annotations

import logging
import pickle
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import NotApplicable
from driftline.checks.fingerprint import code_fingerprint, config_fingerprint
from driftline.tasks.files import write_cache_file
from driftline.tasks.reference import LazyReference, materialised

log = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = Path(".driftline") / "profiles"


@dataclass(frozen=True)
class Unfittable:
    """Stands in the cache for a check that does not apply to the reference, with the reason."""

    reason: str


class ProfileCache:
    """Profiles in memory and, when `directory` is set, as pickles on disk keyed by a SHA-256 of
    (reference content, check name, check parameters, column roles, the check's code). Safe to share
    between threads."""

    def __init__(self, directory: Path | None = DEFAULT_CACHE_DIR) -> None:
        self.directory = directory
        self._memory: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def key(self, check: Check, columns: Columns, reference_hash: str) -> str:
        """Cache key of one check's profile on one reference."""
        code = code_fingerprint(type(check))
        return config_fingerprint(check.name, check.params(), columns.to_dict(), reference_hash, code)

    def has(self, check: Check, columns: Columns, reference_hash: str) -> bool:
        """Whether the profile is cached (in memory or on disk), so fitting it needs no reference rows."""
        key = self.key(check, columns, reference_hash)
        with self._lock:
            if key in self._memory:
                return True
        path = self._path(key)
        return path is not None and path.exists()

    def lookup(self, check: Check, columns: Columns, reference_hash: str) -> Any:
        """The cached profile, or None when it is not cached (or unreadable); never fits."""
        key = self.key(check, columns, reference_hash)
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        profile = self._read(key)
        if profile is not None:
            with self._lock:
                self._memory[key] = profile
        return profile

    def get_or_fit(
        self, check: Check, reference: pd.DataFrame | LazyReference, columns: Columns, reference_hash: str
    ) -> Any:
        """The cached profile, or fit it now (reading a lazy reference) and remember it."""
        profile = self.lookup(check, columns, reference_hash)
        if profile is None:
            key = self.key(check, columns, reference_hash)
            try:
                profile = check.fit(materialised(reference), columns)
            except NotApplicable as exc:  # as lasting as a profile: the same reference gives the same answer
                profile = Unfittable(str(exc))
            self._write(key, profile)
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
        return self.directory / f"{key}.pkl" if self.directory else None

    def _read(self, key: str) -> Any:
        path = self._path(key)
        if path is None or not path.exists():
            return None
        try:
            with path.open("rb") as fh:
                return pickle.load(fh)
        except Exception as exc:  # a corrupt or stale cache entry is refitted, never fatal
            log.warning("ignoring unreadable cached profile %s: %s", path, exc)
            return None

    def _write(self, key: str, profile: Any) -> None:
        path = self._path(key)
        if path is not None:
            write_cache_file(path, pickle.dumps(profile, protocol=pickle.HIGHEST_PROTOCOL))
