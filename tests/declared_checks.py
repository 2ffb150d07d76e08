"""Checks that only declare (a name, a role, what an estimate estimates), registered for one test as a
spec registers a custom check: for tests of what the views read from the declarations."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from driftline.checks import Check, CheckResult, Columns, registry
from driftline.checks.base import Metric


def declared(name: str, role: str = "other", estimates: str | None = None) -> type[Check]:
    """A check class named `name` declaring `role` (and `estimates`), with one graded metric; it fits
    and evaluates to nothing (the tests hand-write its results)."""

    @dataclass(kw_only=True)
    class Declared(Check):
        """A check that only declares."""

        declared_metrics: ClassVar[dict[str, Metric]] = {"degradation": Metric((0.02, 0.05, 0.1))}

        def fit(self, reference: pd.DataFrame, columns: Columns) -> Any:
            return None

        def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
            return []

    return type(
        name.replace(".", "_"),
        (Declared,),
        {"name": name, "family": name.split(".", 1)[0], "role": role, "estimates": estimates},
    )


@contextmanager
def registered(*classes: type[Check]) -> Iterator[None]:
    """`classes` registered while the block runs, and taken out again."""
    for cls in classes:
        registry.register(cls)
    try:
        yield
    finally:
        for cls in classes:
            registry._REGISTRY.pop(cls.name, None)
