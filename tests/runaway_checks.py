"""Test-only checks that never finish: one sleeps, one allocates memory until it is stopped.

They are not registered on import (the contract battery would run them); `registered()` adds them to
the catalog for the duration of a test, and `register()` for a whole child process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.result import CheckResult


@dataclass(kw_only=True)
class _Runaway(Check):
    family: ClassVar[str] = "testing"

    def fit(self, reference: pd.DataFrame, columns: Columns) -> None:
        return None


@dataclass(kw_only=True)
class SleepsForever(_Runaway):
    """Never returns."""

    name: ClassVar[str] = "testing.sleeps_forever"

    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        while True:
            time.sleep(1)


@dataclass(kw_only=True)
class AllocatesForever(_Runaway):
    """Allocates 50 MB after 50 MB until it is stopped."""

    name: ClassVar[str] = "testing.allocates_forever"

    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        hoard = []
        while True:
            hoard.append(bytearray(50 * 2**20))


RUNAWAYS = (SleepsForever, AllocatesForever)


def register() -> None:
    """Add the runaway checks to this process's catalog."""
    for cls in RUNAWAYS:
        registry.register(cls)


@contextmanager
def registered() -> Iterator[None]:
    """The runaway checks in the catalog inside the block, out of it after."""
    register()
    try:
        yield
    finally:
        for cls in RUNAWAYS:
            registry._REGISTRY.pop(cls.name, None)
