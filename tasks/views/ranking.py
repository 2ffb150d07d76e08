"""What matters first: the one order in which alerts and the report list results.

Worst severity first; within a severity, what the model outputs and how well it does (prediction,
score and label drift, performance, fairness) before feature-level checks; then the features the model
relies on most (their stored importance, see `tasks.references.importance`); then the run's own order.
Results that did not run (skipped, error) come last.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, overload

from driftline.checks import registry
from driftline.checks.result import severity_rank
from driftline.checks.roles import MODEL_ROLES

T = TypeVar("T")
R = TypeVar("R", bound=Mapping[str, Any])  # an item that is itself a result

IMPORTANCE_KEY = "importance"  # the details key of a feature's importance (`tasks.references.importance`)


def model_level(check: str) -> bool:
    """Whether `check` judges the model's outputs or performance rather than one input feature: its
    declared role is one of `MODEL_ROLES`."""
    return registry.declaration(check).role in MODEL_ROLES


def stored_importance(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The importance a stored result carries (see `tasks.references.importance.attach_importance`);
    None when it has none, or a malformed one."""
    value = (result.get("details") or {}).get(IMPORTANCE_KEY)
    if not isinstance(value, Mapping):
        return None
    share, rank, of = value.get("share"), value.get("rank"), value.get("of")
    if not isinstance(share, (int, float)) or not math.isfinite(share):
        return None
    if not isinstance(rank, int) or not isinstance(of, int):
        return None
    return {"share": float(share), "rank": rank, "of": of}


def importance_text(result: Mapping[str, Any]) -> str:
    """`importance 31% (rank 1 of 21)`, or "" for a result without importance."""
    value = stored_importance(result)
    if value is None:
        return ""
    return f"importance {100 * value['share']:.3g}% (rank {value['rank']} of {value['of']})"


def rank_key(result: Mapping[str, Any]) -> tuple[int, int, float]:
    """Sort key of one result (smaller first): severity, model-level before feature-level, importance."""
    graded = result.get("status", "ok") == "ok"
    severity = severity_rank(result.get("severity") or "none") if graded else -1
    importance = stored_importance(result)
    share = importance["share"] if importance is not None else -1.0
    return -severity, 0 if model_level(str(result["check"])) else 1, -share


@overload
def ranked(items: Iterable[R], result_of: None = None) -> list[R]: ...


@overload
def ranked(items: Iterable[T], result_of: Callable[[T], Mapping[str, Any]]) -> list[T]: ...


def ranked(items: Iterable[Any], result_of: Callable[[Any], Mapping[str, Any]] | None = None) -> list[Any]:
    """`items` in rank order (stable: equal keys keep their order); `result_of` gives an item's result
    dict (the item itself by default)."""
    read = result_of or (lambda item: item)
    return sorted(items, key=lambda item: rank_key(read(item)))
