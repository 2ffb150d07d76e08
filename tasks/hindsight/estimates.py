"""Whether a label-free estimate's assumption held, once labels measured what it estimated.

CBPE trusts the calibrated scores and DLE the loss model learnt on the reference; under concept shift
both are wrong, and only labels show it. On every run, the batches that have labels (in the same run,
or joined late) compare the realised metric (the `current` of the check an estimate declares it
`estimates`, `performance.overall` for the catalog's) with the estimate's band of the same batch. When
the realised value lies outside the band on `OUTSIDE` of the last `LOOKBACK` labelled batches, or far
outside it (more than `FAR` band half-widths from the estimate) on one of them, the current run's
estimate of that metric says so first in its `reason` and in `details["warning"]` (which the CLI, the
report and the Slack run message print as a line of their own), with the comparisons in
`details["assumption"]`.

The band compared is the estimate's band (`lower`, `upper`), widened where the realised metric's own
spread (`realised_error`, ± as many of them) is wider, and by √(rows / labelled rows) when labels
cover only part of the batch: realised values scatter that far around a faithful estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driftline.checks.registry import declaration
from driftline.checks.result import CheckResult, format_number

LOOKBACK = 3  # the labelled batches looked at, newest first
OUTSIDE = 2  # outside the band on this many of them: the assumption failed
FAR = 2.0  # or beyond this many band half-widths from the estimate on one of them
TRUST = "the estimate is not to be trusted under this shift"

# check -> target -> metric values of one batch (plus "rows": the result's rows, and "high": the graded
# metric's high threshold)
Batch = Mapping[str, Mapping[str, Mapping[str, float]]]


@dataclass(frozen=True)
class Comparison:
    """One labelled batch: the realised metric against the estimate's band."""

    batch_id: str
    realised: float
    estimated: float
    lower: float
    upper: float

    @property
    def outside(self) -> bool:
        return not self.lower <= self.realised <= self.upper

    @property
    def far(self) -> bool:
        half = max(self.upper - self.estimated, self.estimated - self.lower)
        return abs(self.realised - self.estimated) > FAR * half

    def band(self) -> str:
        return f"[{format_number(self.lower)}, {format_number(self.upper)}]"


def compared(
    batch_id: str, estimate: Mapping[str, float], realised: Mapping[str, float]
) -> Comparison | None:
    """The realised value against the estimate's band, widened for the realised metric's own spread
    and for labels covering part of the batch; None when a value is missing."""
    needed = (
        estimate.get("estimated"),
        estimate.get("lower"),
        estimate.get("upper"),
        realised.get("current"),
    )
    if any(v is None or not math.isfinite(v) for v in needed):
        return None
    value, lower, upper, current = (float(v) for v in needed)  # type: ignore[arg-type]
    half_below, half_above = value - lower, upper - value
    error, band_error = estimate.get("realised_error"), estimate.get("sampling_error")
    if error and band_error and math.isfinite(error) and band_error > 0:
        widen = max(1.0, error / band_error)
        half_below, half_above = half_below * widen, half_above * widen
    rows, labelled = estimate.get("rows"), realised.get("rows")
    if rows and labelled and 0 < labelled < rows:
        cover = math.sqrt(rows / labelled)
        half_below, half_above = half_below * cover, half_above * cover
    return Comparison(batch_id, current, value, value - half_below, value + half_above)


def comparisons(check: str, target: str, labelled: Sequence[tuple[str, Batch]]) -> list[Comparison]:
    """The comparisons of `check`'s estimate of `target` on the labelled batches (newest first)."""
    found = []
    for batch_id, batch in labelled:
        estimate = batch.get(check, {}).get(target)
        realised = batch.get(str(declaration(check).estimates), {}).get(target)
        if estimate is None or realised is None:
            continue
        one = compared(batch_id, estimate, realised)
        if one is not None:
            found.append(one)
        if len(found) == LOOKBACK:
            break
    return found


def verdict(target: str, found: Sequence[Comparison]) -> dict[str, Any] | None:
    """The assumption's verdict on a metric's comparisons (newest first); None when none exist."""
    if not found:
        return None
    outside = [c for c in found if c.outside]
    far = [c for c in found if c.far]
    failed = len(outside) >= OUTSIDE or bool(far)
    verdict = {
        "failed": failed,
        "outside": len(outside),
        "labelled": len(found),
        "batches": [
            {"batch_id": c.batch_id, "realised": c.realised, "lower": c.lower, "upper": c.upper}
            for c in found
        ],
    }
    if failed:
        shown = outside[0]
        where = (
            f"on {len(outside)} of the last {len(found)} labelled batches"
            if len(outside) >= OUTSIDE
            else f"far outside on batch {shown.batch_id}"
        )
        verdict["line"] = (
            f"assumption failed: realised {target} {format_number(shown.realised)} outside the "
            f"estimate's band {shown.band()} {where}; {TRUST}"
        )
    return verdict


def assess_estimates(results: Sequence[CheckResult], labelled: Sequence[tuple[str, Batch]]) -> None:
    """Add the assumption's verdict to the run's estimate results (in place): `details["assumption"]`,
    and the line first in the `reason` when it failed. `labelled` are the batches that have labels,
    newest first (the current one first when it has them)."""
    for result in results:
        if declaration(result.check).estimates is None or result.status != "ok":
            continue
        found = verdict(str(result.target), comparisons(result.check, str(result.target), labelled))
        if found is None:
            continue
        warning = {"warning": found["line"]} if found["failed"] else {}
        result.details = {**(result.details or {}), "assumption": found, **warning}
        if found["failed"]:
            result.reason = f"{found['line']} — {result.reason}" if result.reason else found["line"]
