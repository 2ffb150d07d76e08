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
from typing import Any, ClassVar

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


def merge_obstacle(check: Check) -> str | None:
    """None when the check, as configured, is evaluated partition by partition and merged; else why not."""
    if not getattr(check, "mergeable", False):
        return f"{check.name} has no mergeable evaluation"
    return check.merge_limit()
