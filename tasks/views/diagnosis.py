"""The likely cause of a target's failure, in one line, from the evidence its abnormal checks carry.

Three production faults have a signature of their own, unlike a shift of the population: a column
gone null (`abnormal.nulls`), a change of unit or sign (`abnormal.out_of_range`: the batch outside the
reference range, its median a power of ten, or minus one, times the reference's) and a new category
or encoding (`abnormal.unseen_categorical`: a few new values hold most of the unseen rows). Each
fires only on a result whose severity claims a change (at least medium), and only when its signature
fits; a target with no fitting signature gets no diagnosis. A check says which signature its evidence
carries by declaring it (`Check.signature`), so a custom check can feed a diagnosis. `diagnose` reads
the stored result form (`CheckResult.to_dict()`, as `tasks.history.query.latest_results` returns it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from driftline.checks.registry import declaration
from driftline.checks.result import severity_rank
from driftline.tasks.tools.safe_text import printable

# Cause codes.
COLUMN_NULL = "column_null"
UNIT_CHANGE = "unit_change"
SIGN_FLIP = "sign_flip"
NEW_CATEGORY = "new_category"

# A severity from this one up is a claim that something changed.
CLAIMED = severity_rank("medium")

# Column gone null: at least this share of the batch is null, while the reference had the column
# filled in most rows (at most this share null).
NULL_SHARE = 0.95
REFERENCE_NULL_SHARE = 0.5

# Unit change or sign flip: at least this share of the batch's values lies outside the reference
# range ("nearly every value", so that part of the batch moving is no unit change)...
OUTSIDE_SHARE = 0.9
# ...and the median ratio is within this many decades of ±10^k (a factor of 1.26). On clean
# resamples of the ACS census and Adult columns, a batch's median strays from the reference's by at
# most 0.08 decades (99th percentile) from 300 rows on (0.15 for ages at 100 rows, where a unit change
# may go undiagnosed), while the factor of 3.16 halfway between two powers of ten is 0.5 decades off.
# A factor of 12 (years to months) is within it: the line shows both medians.
RATIO_DECADES = 0.1
# The powers of ten a unit change multiplies by (milli, centi, deci, ... kilo).
UNIT_POWERS = (-3, -2, -1, 1, 2, 3)

# New category: the values named (the most frequent unseen ones) hold at least this share of the
# unseen rows; when many rare new values share them it is no new category.
NAMED_VALUES = 3
NAMED_SHARE = 0.5
# Characters of a value shown in a line.
VALUE_CHARACTERS = 40


@dataclass(frozen=True)
class Diagnosis:
    """The likely cause of one target's failure: a cause code, one line saying it, and the checks
    whose results of that target it rests on."""

    target: str
    cause: str
    summary: str
    rests_on: tuple[str, ...]

    @property
    def line(self) -> str:
        """One plain-text line, its data (target, values) escaped for a terminal: `target: summary`."""
        return f"{one_line(self.target)}: {self.summary}"


def diagnose(results: Iterable[Mapping[str, Any]]) -> list[Diagnosis]:
    """At most one diagnosis per target of a run's stored results, in the order targets first appear:
    a column gone null, else a unit change or sign flip, else a new category."""
    by_signature: dict[tuple[str, str], Mapping[str, Any]] = {}
    targets: dict[str, None] = {}
    for result in results:
        signature = declaration(str(result["check"])).signature
        if signature is not None:
            by_signature[(signature, result["target"])] = result
        targets.setdefault(result["target"], None)
    found = []
    for target in targets:
        for signature, read in DIAGNOSERS:
            candidate = by_signature.get((signature, target))
            if candidate is not None and claims_change(candidate) and (diagnosis := read(candidate)):
                found.append(diagnosis)
                break
    return found


def claims_change(result: Mapping[str, Any]) -> bool:
    """Whether the result was computed and its severity claims a change (medium or high)."""
    return result.get("status") == "ok" and severity_rank(result.get("severity") or "none") >= CLAIMED


def column_gone_null(result: Mapping[str, Any]) -> Diagnosis | None:
    """Nearly every batch value is null where the reference had the column mostly filled."""
    share = _number(result.get("details"), "null_rate")
    reference = _number(result.get("metrics"), "reference_null_rate")
    if share is None or reference is None or share < NULL_SHARE or reference > REFERENCE_NULL_SHARE:
        return None
    amount = "every value is" if share >= 1 else f"{percent(share)} of values are"
    summary = f"{amount} null (reference {percent(reference)}) — the column is no longer filled"
    return Diagnosis(result["target"], COLUMN_NULL, summary, (str(result["check"]),))


def changed_scale(result: Mapping[str, Any]) -> Diagnosis | None:
    """Nearly every batch value lies outside the reference range and the median ratio is a power of
    ten whose inverse brings the batch's range back onto the reference's (a unit change), or minus
    one for a reference of one sign (a sign flip)."""
    details = result.get("details") or {}
    outside = _number(result.get("metrics"), "failing_share")
    batch, reference = _number(details, "batch_median"), _number(details, "reference_median")
    batch_range, reference_range = details.get("batch_range"), details.get("reference_range")
    if outside is None or outside < OUTSIDE_SHARE or not batch or not reference:
        return None
    if not (_is_range(batch_range) and _is_range(reference_range)):
        return None
    ratio = batch / reference
    decades = math.log10(abs(ratio))
    power = round(decades)
    if abs(decades - power) > RATIO_DECADES:
        return None
    medians = f"median {number(batch)} against {number(reference)}"
    amount = "all values" if outside >= 1 else f"{percent(outside)} of values"
    if (
        ratio > 0
        and power in UNIT_POWERS
        and _overlaps([v / 10.0**power for v in batch_range], reference_range)
    ):
        factor = f"~{10 ** abs(power)}× {'smaller' if power < 0 else 'larger'}"
        summary = f"{amount} {factor} than the reference ({medians}) — looks like a unit change"
        return Diagnosis(result["target"], UNIT_CHANGE, summary, (str(result["check"]),))
    if ratio < 0 and power == 0 and (reference_range[0] >= 0 or reference_range[1] <= 0):
        summary = f"{amount} of the opposite sign to the reference's ({medians}) — looks like a sign flip"
        return Diagnosis(result["target"], SIGN_FLIP, summary, (str(result["check"]),))
    return None


def new_category(result: Mapping[str, Any]) -> Diagnosis | None:
    """A few values the reference never had hold most of the batch's unseen rows."""
    top = (result.get("details") or {}).get("top_failing_values") or []
    rows, failing = result.get("rows"), result.get("failing_rows")
    named = [(value, count) for value, count in top[:NAMED_VALUES] if count]
    if not named or not rows or not failing or sum(c for _, c in named) < NAMED_SHARE * failing:
        return None
    shares = [f"{quoted(value)} in {percent(count / rows)}" for value, count in named]
    head = f"new value {shares[0]} of rows" if len(named) == 1 else f"new values {', '.join(shares)} of rows"
    if sum(c for _, c in named) < failing:
        head += f" ({percent(failing / rows)} of rows unseen in all)"
    summary = f"{head}, never seen in the reference — a new category or an encoding change"
    return Diagnosis(result["target"], NEW_CATEGORY, summary, (str(result["check"]),))


# The fault signatures read for a target (`Check.signature`), in order of priority, and how the result
# of a check declaring each one is read.
DIAGNOSERS: tuple[tuple[str, Callable[[Mapping[str, Any]], Diagnosis | None]], ...] = (
    ("nulls", column_gone_null),
    ("range", changed_scale),
    ("unseen", new_category),
)


def _finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number; None otherwise (absent, null, text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _number(mapping: Mapping[str, Any] | None, key: str) -> float | None:
    """The finite number stored under `key`, or None."""
    return _finite((mapping or {}).get(key))


def _is_range(value: Any) -> TypeGuard[list[float]]:
    """Whether `value` is a stored [min, max] of finite numbers."""
    return isinstance(value, list) and len(value) == 2 and all(_finite(v) is not None for v in value)


def _overlaps(first: list[float], second: list[float]) -> bool:
    """Whether two [min, max] intervals share a point."""
    return first[0] <= second[1] and second[0] <= first[1]


def one_line(text: str) -> str:
    """`text` as one terminal-safe line: control and invisible characters, newlines and tabs escaped."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def quoted(value: Any) -> str:
    """A value from the data, quoted, cut to `VALUE_CHARACTERS` (marked with an ellipsis) and escaped."""
    text = str(value)
    cut = text if len(text) <= VALUE_CHARACTERS else text[: VALUE_CHARACTERS - 1] + "…"
    return one_line(repr(cut))


def percent(share: float) -> str:
    """A share in [0, 1] as a percentage for people: whole percents from 10% (one decimal from 99%),
    two significant digits below; never 100% or 0% unless it is exactly that."""
    value = 100 * share
    if value >= 99 and share < 1:
        return f"{min(value, 99.9):.1f}%"
    if value >= 10:
        return f"{value:.0f}%"
    return f"{max(value, 0.01):.2g}%" if share > 0 else "0%"


def number(value: float) -> str:
    """A number for people: whole numbers with thousands separators from 1000, else 4 significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
