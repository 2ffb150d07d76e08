"""Content hashes of frames and check configurations, the keys of the reference-profile cache."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks.columns import is_nested, nested_text


def frame_fingerprint(frame: pd.DataFrame) -> str:
    """SHA-256 of a frame's column names, dtypes and values (row order matters, the index does not);
    nested values (Parquet lists, maps, structs), which pandas cannot hash, are hashed as JSON text."""
    digest = hashlib.sha256()
    digest.update(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode())
    hashable = frame.copy(deep=False)
    for i in range(frame.shape[1]):
        if is_nested(frame.iloc[:, i]):
            hashable.isetitem(i, frame.iloc[:, i].map(nested_text))
    digest.update(pd.util.hash_pandas_object(hashable, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def config_fingerprint(*parts: Any) -> str:
    """SHA-256 of JSON-serialisable configuration (check name, parameters, column roles)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def _catalog_digest() -> str:
    """SHA-256 of every module of the check catalog, read once per process."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def code_fingerprint(cls: type) -> str:
    """SHA-256 of the code a check's profile depends on: the catalog's modules and, for a check defined
    outside it, the file that defines the class, so a profile cached by other code is refitted."""
    digest = hashlib.sha256(_catalog_digest().encode())
    try:
        source = Path(inspect.getsourcefile(cls) or "").resolve()
    except TypeError:
        return digest.hexdigest()
    catalog = Path(__file__).resolve().parent
    if source.is_file() and catalog not in source.parents:
        digest.update(source.read_bytes())
    return digest.hexdigest()
