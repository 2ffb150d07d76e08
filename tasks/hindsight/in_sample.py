"""Whether the reference looks in-sample: the model far better on it than on its first labelled batches.

A reference scored by the model on its own training rows shows the model's fit, not its
performance: every batch after it then looks degraded. When, on each of the first `FIRST` labelled
batches since the reference changed, the realised AUC, accuracy or F1 (`performance.overall`) falls
below the reference's by more than the metric's high threshold, the run carries one informational
result, `run.reference`, whose reason is the warning every surface prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from driftline.checks.catalog_index import REALISED_PERFORMANCE
from driftline.checks.result import CheckResult, format_number
from driftline.tasks.hindsight.estimates import Batch

REFERENCE_CHECK = "run.reference"
METRICS = ("auc", "accuracy", "f1")  # in the order a warning names the first that shows it
FIRST = 3
NAMES = {"auc": "AUC", "accuracy": "accuracy", "f1": "F1"}
ADVICE = "take the reference from a held-out period after training"


def far_below(values: Mapping[str, float]) -> bool:
    """Whether the realised metric is below the reference's by more than its high threshold."""
    needed = ("reference", "current", "high")
    return all(k in values for k in needed) and values["reference"] - values["current"] > values["high"]


def in_sample_warning(first: Sequence[tuple[str, Batch]]) -> CheckResult | None:
    """The warning result when each of the first `FIRST` labelled batches since the reference changed
    (oldest first) has a metric far below the reference's; None otherwise."""
    if len(first) < FIRST:
        return None
    for metric in METRICS:
        values = [batch.get(REALISED_PERFORMANCE, {}).get(metric, {}) for _, batch in first[:FIRST]]
        if not all(far_below(v) for v in values):
            continue
        current = [v["current"] for v in values]
        reference = values[-1]["reference"]
        line = (
            f"the reference looks in-sample: reference {NAMES[metric]} {format_number(reference)} "
            f"against {format_number(min(current))}–{format_number(max(current))} on the first "
            f"{FIRST} labelled batches; {ADVICE}"
        )
        return CheckResult(
            check=REFERENCE_CHECK,
            target="*",
            metrics={"reference": reference, "lowest": min(current), "highest": max(current)},
            details={
                "warning": line,
                "metric": metric,
                "batches": [batch_id for batch_id, _ in first[:FIRST]],
            },
            reason=line,
        )
    return None
