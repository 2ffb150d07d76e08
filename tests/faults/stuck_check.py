"""A test-only check that never finishes, registered when this module is imported."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.registry import register
from driftline.checks.result import CheckResult


@register
@dataclass(kw_only=True)
class NeverFinishes(Check):
    """Sleeps until it is stopped."""

    name: ClassVar[str] = "testing.never_finishes"
    family: ClassVar[str] = "testing"

    def fit(self, reference: pd.DataFrame, columns: Columns) -> None:
        return None

    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        while True:
            time.sleep(1)
