"""The merge protocol: checks whose batch state adds up across partitions of the batch.

A mergeable check computes a small state per partition (`partial`), adds states up in partition order
(`merge`) and turns the whole batch's state into its results (`finish`). Its `evaluate` is the same
three steps over one partition, so the math of a whole batch and of a partitioned one exists once.
A configuration that needs more than the state holds (every batch value, say) says why in
`merge_limit`; it still evaluates whole batches.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.result import CheckResult


@dataclass(kw_only=True)
class Mergeable(Check):
    """A check evaluated as `finish(merge([partial(p) for p in partitions]))`, a whole batch being one
    partition: partitioned runs give the results `evaluate` gives."""

    mergeable: ClassVar[bool] = True

    @abstractmethod
    def partial(self, current: pd.DataFrame, profile: Any, columns: Columns) -> Any:
        """The state of one partition of the batch: small, whatever the partition's size."""

    @abstractmethod
    def merge(self, states: list[Any]) -> Any:
        """The state of the union of partitions from their states, given in partition order."""

    @abstractmethod
    def finish(self, state: Any, profile: Any, columns: Columns) -> list[CheckResult]:
        """The results of the batch whose merged state is `state`."""

    def merge_limit(self) -> str | None:
        """Why this configuration cannot be merged across partitions, or None when it can."""
        return None

    def evaluate(self, current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        """The batch as one partition: the only way the check's results are computed."""
        return self.finish(self.merge([self.partial(current, profile, columns)]), profile, columns)


@runtime_checkable
class MergeMethods(Protocol):
    """The merge protocol as a type: what a check offers that subclasses `Mergeable` or, setting
    `mergeable = True` itself, defines the four methods."""

    def partial(self, current: pd.DataFrame, profile: Any, columns: Columns) -> Any: ...

    def merge(self, states: list[Any]) -> Any: ...

    def finish(self, state: Any, profile: Any, columns: Columns) -> list[CheckResult]: ...

    def merge_limit(self) -> str | None: ...


def merge_methods(check: Check) -> MergeMethods:
    """The check through its merge methods; a TypeError when it declares no mergeable evaluation."""
    if not (getattr(check, "mergeable", False) and isinstance(check, MergeMethods)):
        raise TypeError(f"{check.name} has no mergeable evaluation")
    return check


def merge_obstacle(check: Check) -> str | None:
    """None when the check, as configured, is evaluated partition by partition and merged; else why not."""
    if not getattr(check, "mergeable", False):
        return f"{check.name} has no mergeable evaluation"
    return merge_methods(check).merge_limit()
