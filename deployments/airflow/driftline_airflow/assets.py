"""A monitor's two assets: its batches and its verdicts.

A scoring DAG that writes a batch emits an event on the monitor's batch asset, carrying the batch id in
its extra (`{"batch_id": "2018-06"}`); a monitor DAG scheduled on that asset monitors that batch. The
monitor DAG emits an event on the verdict asset after every run, carrying the verdict, the failing
checks, the batch id, the report and the retraining request; a retraining DAG scheduled on it retrains
for the runs that asked for it and skips the others, saying why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from airflow.sdk import Asset

BATCH_KEY = "batch_id"
GROUP = "driftline"
# A monitor name becomes the host part of the assets' URIs.
_MONITOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def _checked(monitor: str) -> str:
    if not isinstance(monitor, str) or not _MONITOR_NAME.fullmatch(monitor):
        raise ValueError(
            f"monitor name {monitor!r} cannot name an asset: use letters, digits, '-', '_' and '.' "
            "(at most 100, starting with a letter or digit)"
        )
    return monitor


def batch_asset(monitor: str) -> Asset:
    """The asset of `monitor`'s batches: an event per batch written, its extra naming `batch_id`."""
    name = _checked(monitor)
    return Asset(name=f"driftline.{name}.batches", uri=f"driftline://{name}/batches", group=GROUP)


def verdict_asset(monitor: str) -> Asset:
    """The asset of `monitor`'s verdicts: an event per monitor run (see `verdict_extra`)."""
    name = _checked(monitor)
    return Asset(name=f"driftline.{name}.verdict", uri=f"driftline://{name}/verdict", group=GROUP)


def events_of(context: Mapping[str, Any]) -> list[Any]:
    """The asset events that triggered the run, oldest first, each once (an event through an alias is
    listed under the alias too); empty for any other run."""
    triggering = context.get("triggering_asset_events") or {}
    events = [event for key in triggering if isinstance(key, Asset) for event in triggering[key]]
    return sorted(events, key=lambda event: event.timestamp)


def verdicts(context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The extras of the verdict events that triggered the run, oldest first."""
    return [dict(event.extra or {}) for event in events_of(context) if (event.extra or {}).get("verdict")]


def event_batches(context: Mapping[str, Any]) -> list[str]:
    """The batch ids the run's triggering events name, oldest first, each once; an id that is not
    text is refused, naming the event's source."""
    batches: list[str] = []
    for event in events_of(context):
        value = (event.extra or {}).get(BATCH_KEY)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            source = f"{event.source_dag_id or '?'}/{event.source_run_id or '?'}"
            raise ValueError(f"the asset event from {source} gives {BATCH_KEY} {value!r}: give it as text")
        if value.strip() not in batches:
            batches.append(value.strip())
    return batches


def verdict_extra(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict event's extra from the monitor's XCom summary: the verdict, the worst severity, the
    failing checks, the batch, the report, and the retraining request (None when none was made)."""
    return {
        "monitor": summary["monitor"],
        BATCH_KEY: summary["batch_id"],
        "verdict": summary["status"],
        "worst_severity": summary["worst_severity"],
        "failing_checks": summary["failing_checks"],
        "report_path": summary["report_path"],
        "retrain": summary["retrain_conf"],
        "retraining": summary["retraining"],
    }


def retraining_due(extras: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The verdicts to retrain for (failed, with a retraining request), and why each other one is not."""
    due: list[Mapping[str, Any]] = []
    why_not: list[str] = []
    for extra in extras:
        batch = extra.get(BATCH_KEY, "?")
        if extra.get("verdict") != "failed":
            why_not.append(f"batch {batch} {extra.get('verdict', 'has no verdict')}: nothing to retrain")
        elif not extra.get("retrain"):
            why_not.append(f"batch {batch} failed, no retraining requested ({extra.get('retraining')})")
        else:
            due.append(extra)
    return due, why_not
