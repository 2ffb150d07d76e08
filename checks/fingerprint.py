"""Content hashes of frames and check configurations, the keys of the reference-profile cache."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd


def frame_fingerprint(frame: pd.DataFrame) -> str:
    """SHA-256 of a frame's column names, dtypes and values (row order matters, the index does not)."""
    digest = hashlib.sha256()
    digest.update(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def config_fingerprint(*parts: Any) -> str:
    """SHA-256 of JSON-serialisable configuration (check name, parameters, column roles)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
