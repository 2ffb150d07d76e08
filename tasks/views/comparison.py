"""The numbers a person needs to judge one result, in one line: the reference's value, the batch's, the
change that was graded, its confidence bound and the threshold the bound crossed.

Read from a stored result dict alone (its metrics, details and evidence, see `checks.evidence`), so
alerts, the report and the command line say the same thing about a result. The graded change is the
evidence's estimate and its bound `metrics["<metric>_bound"]`; a change measured as a drop (reference
minus batch) is shown as batch minus reference, its bound and threshold with it, so the sign says which
way the value moved: "roc_auc: estimate 0.71 vs reference 0.83, change −0.12 (bound −0.09; ...)".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from driftline.checks.registry import declaration
from driftline.checks.result import SEVERITIES, format_number, severity_for, severity_rank

Value = float | tuple[float, float]
Result = Mapping[str, Any]

# Roles whose target is the metric measured (`auc`), which then names the levels.
MEASURED_TARGET_ROLES = frozenset({"performance", "estimate"})
# A numeric label's graded locations (`<name>_change`), as a line names them.
LOCATIONS = {"mean": "mean", "median": "median", "p90": "90th percentile"}


@dataclass(frozen=True)
class Comparison:
    """One result's reference and batch values and the graded change with its bound; `threshold` is
    the severity the bound reached and that severity's threshold, in the change's orientation."""

    subject: str
    reference: Value | None
    batch: Value | None
    change_name: str
    change: float
    bound: float | None
    threshold: tuple[str, float] | None = None
    batch_label: str = "batch"
    reference_label: str = "reference"
    share: bool = False  # reference and batch are shares of rows (shown as percentages)
    signed: bool = True  # the change can go either way (shown with its sign)
    note: str = ""

    def levels(self) -> str:
        """`batch 0.64 vs reference 0.70` (either side alone when the other is unknown)."""
        sides = [
            f"{label} {_level(value, self.share)}"
            for label, value in ((self.batch_label, self.batch), (self.reference_label, self.reference))
            if value is not None
        ]
        return " vs ".join(sides)

    def graded(self) -> str:
        """`change −0.12 (bound −0.09; high threshold −0.05)`."""
        number = _signed if self.signed else _plain
        text = f"{self.change_name} {number(self.change)}"
        if self.bound is None:
            return text
        crossed = f"; {self.threshold[0]} threshold {number(self.threshold[1])}" if self.threshold else ""
        return f"{text} (bound {number(self.bound)}{crossed})"

    def line(self) -> str:
        """The whole comparison in one line."""
        levels = self.levels()
        head = (
            f"{self.subject}: {levels}"
            if levels
            else ("" if self.subject == self.change_name else self.subject)
        )
        if self.note:
            head = f"{head}; {self.note}" if head else self.note
        return f"{head}, {self.graded()}" if head else self.graded()


def _plain(value: float) -> str:
    """A number to 4 significant digits, negative ones with a true minus sign."""
    return format_number(float(value)).replace("-", "−")


def _signed(value: float) -> str:
    """A change with its sign, `+0.12` or `−0.12`."""
    return f"{value:+.4g}".replace("-", "−")


def _percent(value: float) -> str:
    return f"{100 * value:.3g}%".replace("-", "−")


def _level(value: Value, share: bool) -> str:
    if isinstance(value, tuple):
        return f"[{_plain(value[0])}, {_plain(value[1])}]"
    return _percent(value) if share else _plain(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        low, high = _number(value[0]), _number(value[1])
        if low is not None and high is not None:
            return low, high
    return None


def _crossed(severity: str, thresholds: Sequence[float]) -> tuple[str, float] | None:
    """The threshold of `severity` (thresholds are aligned with the top: low, medium, high)."""
    if severity == "none":
        return None
    return severity, float(thresholds[SEVERITIES.index(severity) - (len(SEVERITIES) - len(thresholds))])


def deciding_metric(result: Result) -> str | None:
    """The graded metric that decided the severity: among those with evidence and thresholds, the one
    whose bound reaches the worst severity (the first on a tie); None for a result without evidence."""
    evidence: Mapping[str, Any] = result.get("evidence") or {}
    thresholds: Mapping[str, Sequence[float]] = result.get("thresholds") or {}
    graded = [m for m in evidence if thresholds.get(m)] or list(evidence)
    if not graded:
        return None
    return max(graded, key=lambda m: severity_rank(_severity(result, m)))


def _severity(result: Result, metric: str) -> str:
    evidence = result["evidence"][metric]
    thresholds = (result.get("thresholds") or {}).get(metric) or []
    metrics = result.get("metrics") or {}
    value = _number(metrics.get(f"{metric}_bound"))
    value = _number(evidence.get("estimate")) if value is None else value
    return severity_for(value, thresholds, lower_is_worse=not evidence.get("higher_is_worse", True))


def _graded(result: Result) -> Comparison | None:
    """The deciding metric's change, bound and crossed threshold, with nothing else known yet."""
    metric = deciding_metric(result)
    if metric is None:
        return None
    change = _number(result["evidence"][metric].get("estimate"))
    if change is None:
        return None
    thresholds = (result.get("thresholds") or {}).get(metric) or []
    return Comparison(
        subject=metric,
        reference=None,
        batch=None,
        change_name=metric,
        change=change,
        bound=_number((result.get("metrics") or {}).get(f"{metric}_bound")),
        threshold=_crossed(_severity(result, metric), thresholds) if thresholds else None,
        signed=not _divergence(str(result["check"]), metric),
    )


def _divergence(check: str, metric: str) -> bool:
    """Whether `check` declares `metric` a divergence between two distributions (`Metric.divergence`)."""
    declared = declaration(check).declared_metrics.get(metric)
    return declared is not None and declared.divergence


def oriented(comparison: Comparison) -> Comparison:
    """The comparison with its change (bound and threshold too) shown as batch minus reference when it
    was measured the other way (a drop, an absolute difference that fell)."""
    batch, reference = comparison.batch, comparison.reference
    if not isinstance(batch, float) or not isinstance(reference, float):
        return comparison
    moved = batch - reference
    if abs(comparison.change + moved) >= abs(comparison.change - moved):
        return comparison
    threshold = comparison.threshold
    return replace(
        comparison,
        change=-comparison.change,
        bound=None if comparison.bound is None else -comparison.bound,
        threshold=None if threshold is None else (threshold[0], -threshold[1]),
    )


# --- per family ----------------------------------------------------------------------------------


def _levels(result: Result, base: Comparison) -> Comparison | None:
    """Checks that report their value on the batch and on the reference as metrics."""
    metrics = result.get("metrics") or {}
    declared = declaration(str(result["check"]))
    for batch_key, reference_key, label in declared.level_pairs:
        batch, reference = _number(metrics.get(batch_key)), _number(metrics.get(reference_key))
        if batch is not None and reference is not None:
            measured = str(result["target"]) if declared.role in MEASURED_TARGET_ROLES else batch_key
            subject = declared.subject or measured
            found = replace(base, subject=subject, batch=batch, reference=reference, batch_label=label)
            return oriented(replace(found, change_name="change", signed=True))
    return None


def _subset(result: Result, base: Comparison) -> Comparison | None:
    """A subset's metric in the batch against the same subset in the reference (or the whole batch)."""
    metrics, details = result.get("metrics") or {}, result.get("details") or {}
    batch = _number(metrics.get("subset_value"))
    against_batch = details.get("compare_to") == "batch"
    reference = _number(metrics.get("batch_value" if against_batch else "reference_value"))
    if batch is None or reference is None:
        return None
    where = "=" if details.get("kind") == "categorical" else "in"
    subject = f"{details.get('metric', 'metric')} for {result['target']} {where} {details.get('subset', '?')}"
    found = replace(
        base,
        subject=subject,
        batch=batch,
        reference=reference,
        reference_label="whole batch" if against_batch else "reference",
        change_name="change",
    )
    return oriented(found)


def _groups(record: Mapping[str, Any]) -> str:
    """`g=a vs rest, statistical_parity 0.7533 vs 0.4894`: a fairness comparison and its two rates."""

    def named(side: Any) -> str:
        return ", ".join(f"{k}={v}" for k, v in side.items()) if isinstance(side, Mapping) else str(side)

    text = f"{named(record.get('subgroup'))} vs {named(record.get('other'))}"
    rates = [k for k in record if f"other_{k}" in record and k != "rows"]
    if rates:
        a, b = _number(record[rates[0]]), _number(record[f"other_{rates[0]}"])
        if a is not None and b is not None:
            text += f", {rates[0]} {_plain(a)} vs {_plain(b)}"
    return text


def _fairness(result: Result, base: Comparison) -> Comparison | None:
    """The fairness index in the batch against the reference's, and the groups that differ most."""
    metrics, details = result.get("metrics") or {}, result.get("details") or {}
    records = details.get("records") or []
    worst = records[0] if records and isinstance(records[0], Mapping) and "other" in records[0] else None
    audit = not base.change_name.endswith("_change")
    return replace(
        base,
        subject=base.change_name.removesuffix("_change"),
        batch=None if audit else _number(metrics.get("value")),
        reference=_number(metrics.get("reference_value")),
        change_name=base.change_name if audit else "change",
        note=f"largest gap: {_groups(worst)}" if worst else "",
    )


def _out_of_range(result: Result, base: Comparison) -> Comparison | None:
    """The batch's range against the reference's, and the share of rows outside."""
    metrics, details = result.get("metrics") or {}, result.get("details") or {}
    reference = _pair(details.get("reference_range")) or _pair([details.get("lower"), details.get("upper")])
    share = _number(metrics.get("failing_share"))
    return replace(
        base,
        subject="range",
        batch=_pair(details.get("batch_range")),
        reference=reference,
        change_name="change",
        note=f"{_percent(share)} of rows outside" if share is not None else "",
    )


def _rates(result: Result, base: Comparison) -> Comparison | None:
    """A rate of bad values (nulls, infinities, unseen or abnormal values) against the reference's."""
    metrics, details = result.get("metrics") or {}, result.get("details") or {}
    rows = _number(result.get("rows"))
    kind = base.change_name.removesuffix("_rate_increase")
    if kind in ("null", "inf"):
        counted = _number(details.get(f"{kind}_rows"))
        batch = counted / rows if counted is not None and rows else None
        reference = _number(metrics.get(f"reference_{kind}_rate"))
        subject = f"{kind} rate"
    else:
        batch, reference, subject = (
            _number(metrics.get("failing_share")),
            _number(details.get("clean_rate")),
            "failing rows",
        )
    return replace(base, subject=subject, batch=batch, reference=reference, share=True, change_name="change")


def _interval(edges: Sequence[float], i: int) -> str:
    """The right-closed bin `i` of `edges` (see `checks.binning.bin_counts`) in words."""
    if i == 0:
        return f"≤ {_plain(edges[0])}"
    if i == len(edges):
        return f"> {_plain(edges[-1])}"
    return f"in ({_plain(edges[i - 1])}, {_plain(edges[i])}]"


def _shares(result: Result, base: Comparison) -> Comparison | None:
    """A divergence, with the bin or category whose share moved most, in the batch and the reference."""
    details, target = result.get("details") or {}, result["target"]
    reference, current, edges = (
        details.get("reference_shares"),
        details.get("current_shares"),
        details.get("edges"),
    )
    if (
        isinstance(reference, list)
        and isinstance(current, list)
        and isinstance(edges, list)
        and reference
        and len(reference) == len(current) == len(edges) + 1
    ):
        i = max(range(len(reference)), key=lambda k: abs(current[k] - reference[k]))
        subject = f"share of rows with {target} {_interval(edges, i)}"
        return replace(
            base, subject=subject, batch=float(current[i]), reference=float(reference[i]), share=True
        )
    changes = details.get("largest_changes")
    if isinstance(changes, Mapping) and changes:
        category, shares = next(iter(changes.items()))
        if isinstance(shares, Mapping):
            batch, ref = _number(shares.get("current")), _number(shares.get("reference"))
            subject = f"share of {target} = {category}"
            return replace(base, subject=subject, batch=batch, reference=ref, share=True)
    return None


def _label_share(result: Result, base: Comparison) -> Comparison | None:
    """The label class whose share changed most, in the batch and the reference."""
    details = result.get("details") or {}
    batch, reference = _number(details.get("current_share")), _number(details.get("reference_share"))
    if base.change_name != "share_change" or batch is None or reference is None:
        return _shares(result, base)
    subject = f"share of class {details.get('changed_class')}"
    found = replace(base, subject=subject, batch=batch, reference=reference, share=True, change_name="change")
    return oriented(found)


def _label_location(result: Result, base: Comparison) -> Comparison | None:
    """A numeric label's mean or quantile, in the batch and the reference; the change is in reference
    standard deviations, signed by the way the label moved."""
    details = result.get("details") or {}
    name = base.change_name.removesuffix("_change")
    if name == "mean":
        batch, reference = _number(details.get("mean")), _number(details.get("reference_mean"))
    else:
        batch = _number((details.get("quantiles") or {}).get(name))
        reference = _number((details.get("reference_quantiles") or {}).get(name))
    if batch is None or reference is None:
        return None
    subject = f"{LOCATIONS[name]} of {result['target']}"
    note = f"in reference standard deviations ({_plain(details.get('reference_std', float('nan')))})"
    return oriented(replace(base, subject=subject, batch=batch, reference=reference, note=note))


def _label(result: Result, base: Comparison) -> Comparison | None:
    """A label's class share, or a numeric label's location."""
    if base.change_name.removesuffix("_change") in LOCATIONS:
        return _label_location(result, base)
    return _label_share(result, base)


Extractor = Callable[[Result, Comparison], "Comparison | None"]


def _extractor(check: str, metric: str) -> Extractor:
    """Which reading fits the result, from what its check declares (`Check.role`, `Check.signature`,
    `Metric.divergence`); `_levels`, the most common, when no other does."""
    declared = declaration(check)
    if declared.role == "fairness":
        return _fairness
    if declared.role == "subset":
        return _subset
    if declared.signature == "range":
        return _out_of_range
    if metric.endswith("_rate_increase"):
        return _rates
    if declared.role == "label_drift":
        return _label
    if _divergence(check, metric):
        return _shares
    return _levels


def comparison(result: Result) -> Comparison | None:
    """The comparison behind a result's grade; None for a result that carries no evidence (it was not
    graded against the reference)."""
    if result.get("status", "ok") != "ok":
        return None
    base = _graded(result)
    if base is None:
        return None
    return _extractor(str(result["check"]), base.change_name)(result, base) or base


def comparison_line(result: Result) -> str | None:
    """`comparison(result)` in one line, None without one."""
    found = comparison(result)
    return found.line() if found is not None else None
