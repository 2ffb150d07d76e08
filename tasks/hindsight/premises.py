"""What labels say about a run's own premises, once they exist: the estimates' assumption
(`tasks.hindsight.estimates`) and whether the reference looks in-sample (`tasks.hindsight.in_sample`).

One call after grading. When the run has an estimate or a realised-performance check, the run's own
results and the monitor's stored ones of its newest `LOOKBACK_RUNS` runs (realised performance, joined
late or not, and the estimates' bands) are read once; a run without either reads nothing. Estimate
results are annotated in place and the in-sample warning, if any, is returned as a result to add. A
store that cannot be read is logged, and the run's own results are read alone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from driftline.checks.catalog_index import REALISED_PERFORMANCE
from driftline.checks.registry import declaration
from driftline.checks.result import CheckResult
from driftline.tasks.hindsight.estimates import assess_estimates
from driftline.tasks.hindsight.in_sample import FIRST, REFERENCE_CHECK, in_sample_warning

if TYPE_CHECKING:
    from sqlalchemy import Engine

log = logging.getLogger(__name__)
LOOKBACK_RUNS = 100  # stored runs read, newest first
VALUES = ("estimated", "lower", "upper", "sampling_error", "realised_error", "current", "reference")

Values = dict[str, dict[str, dict[str, float]]]


def checks_read(results: Sequence[CheckResult]) -> set[str]:
    """The checks whose values are read: the run's estimates (checks declaring what they `estimates`),
    the realised checks they estimate, and the realised performance the in-sample test reads."""
    estimates = {r.check: declaration(r.check).estimates for r in results}
    return {check for check, realised in estimates.items() if realised} | {
        *(realised for realised in estimates.values() if realised),
        REALISED_PERFORMANCE,
    }


def batch_values(results: Sequence[CheckResult]) -> Values:
    """check -> target -> the values read (plus `rows`, and `high`: the graded metric's high
    threshold) of a run's own `ok` results."""
    values: Values = {}
    checks = checks_read(results)
    for r in results:
        if r.status != "ok" or r.check not in checks:
            continue
        numbers = {k: float(v) for k, v in r.metrics.items() if k in VALUES and v is not None}
        thresholds = r.thresholds.get("degradation")
        extra = {"high": float(thresholds[-1])} if thresholds else {}
        values.setdefault(r.check, {})[str(r.target)] = {**numbers, **extra, "rows": float(r.rows or 0)}
    return values


def labelled(values: Values) -> bool:
    """Whether a batch's values hold a realised performance (the `current` of a check that is no
    estimate: one that estimates estimate, or the catalog's)."""
    return any(
        "current" in v
        for check, targets in values.items()
        if declaration(check).estimates is None
        for v in targets.values()
    )


def stored_runs(engine: Engine, monitor: str, before: datetime, exclude: str) -> list[dict[str, Any]]:
    """The monitor's newest `LOOKBACK_RUNS` completed runs up to `before`, newest first."""
    from sqlalchemy import select

    from driftline.tasks.history.db import as_utc
    from driftline.tasks.history.store import RUNS

    query = (
        select(RUNS.c.batch_id, RUNS.c.details)
        .where(
            RUNS.c.monitor == monitor,
            RUNS.c.batch_id != exclude,
            RUNS.c.batch_time <= as_utc(before),
            RUNS.c.status.in_(("passed", "failed")),
        )
        .order_by(RUNS.c.batch_time.desc(), RUNS.c.id.desc())
        .limit(LOOKBACK_RUNS)
    )
    with engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(query)]


def stored_values(
    engine: Engine, monitor: str, batch_ids: Sequence[str], checks: Iterable[str]
) -> dict[str, Values]:
    """batch id -> the values `batch_values` gives, from the stored rows of `checks` in those batches."""
    from sqlalchemy import select

    from driftline.tasks.history.store import RESULTS

    query = select(
        RESULTS.c.batch_id,
        RESULTS.c.check,
        RESULTS.c.target,
        RESULTS.c.metric,
        RESULTS.c.value,
        RESULTS.c.rows,
        RESULTS.c.thresholds,
    ).where(
        RESULTS.c.monitor == monitor,
        RESULTS.c.batch_id.in_(list(batch_ids)),
        RESULTS.c.check.in_(sorted(checks)),
        RESULTS.c.metric.in_((*VALUES, "degradation")),
        RESULTS.c.status == "ok",
    )
    found: dict[str, Values] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            values = found.setdefault(row.batch_id, {}).setdefault(row.check, {}).setdefault(row.target, {})
            values["rows"] = float(row.rows or 0)
            if row.metric == "degradation":
                if row.thresholds:
                    values["high"] = float(row.thresholds[-1])
            elif row.value is not None:
                values[row.metric] = float(row.value)
    return found


def hindsight(
    url: str,
    monitor: str,
    run: tuple[str, datetime, str],
    results: list[CheckResult],
) -> list[CheckResult]:
    """Annotate the run's estimate results with their assumption's verdict and return the in-sample
    warning to add (or nothing). `run` is the batch id, its time and the reference's content hash."""
    from driftline.tasks.history.db import connected_store

    read = checks_read(results)
    if not any(r.check in read for r in results):
        return []  # no estimate and no realised performance: nothing for labels to say, nothing read
    batch_id, batch_time, reference_hash = run
    own = batch_values(results)
    try:
        with connected_store(url) as engine:
            runs = stored_runs(engine, monitor, batch_time, batch_id)
            stored = stored_values(engine, monitor, [r["batch_id"] for r in runs], read)
    except Exception as exc:
        log.warning("labelled history not read: %s: %s", type(exc).__name__, exc)
        runs, stored = [], {}
    newest = [(batch_id, own), *((r["batch_id"], stored.get(r["batch_id"], {})) for r in runs)]
    assess_estimates(results, [(b, v) for b, v in newest if labelled(v)])
    same = []
    for position, (batch, values) in enumerate(newest):
        details = runs[position - 1]["details"] if position else {"reference_hash": reference_hash}
        if (details or {}).get("reference_hash") != reference_hash:
            break
        same.append((batch, values))
    first = [(b, v) for b, v in reversed(same) if labelled(v)][:FIRST]
    warning = in_sample_warning(first)
    return [warning] if warning is not None else []


def warning_lines(results: Iterable[Mapping[str, Any]]) -> list[str]:
    """The one-line warnings results carry (`details["warning"]`), in the stored result form: the
    reference's as it is, an estimate's after its check and target."""
    lines = []
    for r in results:
        warning = (r.get("details") or {}).get("warning")
        if warning:
            lines.append(
                warning if r["check"] == REFERENCE_CHECK else f"{r['check']} · {r['target']}: {warning}"
            )
    return lines
