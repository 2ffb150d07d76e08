"""The two interfaces of the audit rubrics: a Rubric scores every item, a Metric summarises scores."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import pandas as pd
import pyarrow as pa


class Rubric(ABC):
    """Turns task data and a model's predictions (Arrow datasets) into per-item scores, batch by batch."""

    @abstractmethod
    def apply(self, task_data: Any, predictions: Any) -> Iterable[pa.RecordBatch]:
        """Yield record batches of scored items with the layout of `schema`."""

    @property
    @abstractmethod
    def name(self) -> str:
        """Semi-qualified type name, e.g. `text.TextSpanMatches`."""

    @property
    @abstractmethod
    def schema(self) -> pa.Schema:
        """The Arrow schema of every batch `apply` yields."""


class Metric(ABC):
    """Summarises the per-item scores of a Rubric into a small table."""

    @abstractmethod
    def __call__(self, scores: pd.DataFrame) -> pd.DataFrame:
        """Compute the summary table."""

    @property
    @abstractmethod
    def name(self) -> str:
        """Semi-qualified type name, e.g. `text.ExtendedPrecisionRecall`."""

    @property
    @abstractmethod
    def schema(self) -> pa.Schema:
        """The Arrow schema of the summary table."""
