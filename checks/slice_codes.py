"""Subset codes of one batch, computed once and read by every subset check of a run.

Each subset check cuts the batch's features with the subset definitions of its profile; with default
parameters every such check has the same definitions, so without sharing each one recomputes the same
codes. A run precomputes them once in the parent process (`sharing_codes`), where the checks' forked
workers inherit them copy-on-write; `batch_codes` serves a check from that store when it evaluates the
same batch object and otherwise computes the codes itself.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.errors import CheckInputError
from driftline.checks.slicing import apply_slices

_stores: dict[int, SliceCodes] = {}
_lock = threading.Lock()


def definition_key(feature: str, slices: Mapping[str, Any]) -> str:
    """A stable key of one feature's subset definition (kind, edges or categories)."""
    return json.dumps([feature, slices], sort_keys=True, default=repr)


class SliceCodes:
    """The subset codes of one batch frame, keyed by feature and subset definition, in the narrowest
    integer type (a byte per row for up to 255 subsets)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self._codes: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._codes)

    def add(self, feature: str, slices: Mapping[str, Any]) -> None:
        """Compute and keep the codes of `feature` under `slices`; a feature the batch lacks or whose
        dtype does not fit is left to the check, which reports it."""
        key = definition_key(feature, slices)
        if key in self._codes or "error" in slices or feature not in self.frame:
            return
        try:
            codes = apply_slices(self.frame[feature], dict(slices))
        except CheckInputError:
            return
        self._codes[key] = codes.astype(np.min_scalar_type(len(slices["labels"])), copy=False)

    def get(self, feature: str, slices: Mapping[str, Any]) -> np.ndarray | None:
        """The kept codes, or None."""
        return self._codes.get(definition_key(feature, slices))


@contextmanager
def sharing_codes(frame: pd.DataFrame) -> Iterator[SliceCodes]:
    """Make a store of `frame`'s subset codes visible to `batch_codes` for the duration of the block."""
    store = SliceCodes(frame)
    with _lock:
        _stores[id(frame)] = store
    try:
        yield store
    finally:
        with _lock:
            if _stores.get(id(frame)) is store:
                del _stores[id(frame)]


def batch_codes(frame: pd.DataFrame, feature: str, slices: Mapping[str, Any]) -> np.ndarray:
    """Subset code of every row of `frame[feature]` (any integer type): from the run's store when it
    holds this frame, else computed now."""
    store = _stores.get(id(frame))
    if store is not None and store.frame is frame:
        codes = store.get(feature, slices)
        if codes is not None:
            return codes
    return apply_slices(frame[feature], dict(slices))
