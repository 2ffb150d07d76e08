"""Which batch a DAG run monitors, decided when the task runs (no template, so a run without a
logical date works): the run's conf `batch_id`, else the operator's `batch_id`, else the batch the
triggering asset event names, else the batch named after the run's date, else the newest batch (as
`driftline run` does)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from driftline_airflow.assets import event_batches

CONF_KEY = "batch_id"
# Runs whose data interval is the timetable's own; a manual run's interval is inferred from when it
# was triggered, so its logical date names its batch instead.
PLANNED_RUN_TYPES = frozenset({"scheduled", "backfill"})


def run_type(context: Any) -> str:
    """The DAG run's type (`scheduled`, `manual`, `backfill`, ...), '' when unknown."""
    dag_run = context.get("dag_run")
    value = getattr(dag_run, "run_type", None)
    return str(getattr(value, "value", value) or "")


def conf_batch(context: Any) -> str | None:
    """The `batch_id` of the run's conf, None when absent or null; anything but text is refused."""
    conf = getattr(context.get("dag_run"), "conf", None) or {}
    value = conf.get(CONF_KEY) if isinstance(conf, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"the run's conf gives {CONF_KEY} {value!r}: give the batch id as text")
    return value.strip()


def run_date(context: Any) -> datetime | None:
    """The date that names the run's batch: a scheduled or backfill run's data interval start, a
    manual run's logical date; None for a run without a logical date (the UI's Trigger button).

    A backfill that reprocesses a manual run (`--reprocess-behavior completed`) makes it a backfill run
    but keeps the interval Airflow inferred for it from the time it was triggered: an interval that does
    not hold the run's logical date is not the run's own, and the logical date names the batch.
    """
    logical = context.get("logical_date")
    if logical is None:
        return None
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    own = start is not None and start <= logical and (end is None or logical <= end)
    return start if own and run_type(context) in PLANNED_RUN_TYPES else logical


def chosen_batch(context: Any, batch_id: str | None, batch_format: str) -> tuple[str | None, str]:
    """The batch to monitor (None: the newest) and a few words on why."""
    given = conf_batch(context)
    if given is not None:
        return given, f"the run's conf {CONF_KEY}"
    if batch_id is not None:
        return (batch_id or None), "the operator's batch_id"
    announced = event_batches(context)
    if announced:
        return announced[-1], "the triggering asset event's batch_id"
    date = run_date(context)
    if date is None:
        return None, "the newest batch (the run has no logical date)"
    return date.strftime(batch_format), f"the run's date {date.isoformat()}"


def stray_run_note(context: Any) -> str | None:
    """What to tell the user of a manual run with a logical date: it takes that date, so a later
    backfill over it skips the date unless told to run it again; the exact commands."""
    if run_type(context) != "manual" or context.get("logical_date") is None:
        return None
    dag_id = getattr(context.get("dag_run"), "dag_id", None) or "DAG_ID"
    day = context["logical_date"].isoformat()
    return (
        f"this manual run holds logical date {day}: `airflow backfill create` over that date skips it "
        "(a run exists) unless it reprocesses completed runs: `airflow backfill create --dag-id "
        f"{dag_id} --from-date {day} --to-date {day} --max-active-runs 1 --reprocess-behavior completed` "
        "(the history keeps one copy per batch). To monitor a batch by hand without taking a date: "
        f'`airflow dags trigger {dag_id} --conf \'{{"{CONF_KEY}": "..."}}\'`'
    )


def unmonitored_note(context: Any) -> str | None:
    """What to tell the user when the run's triggering events named more than one batch: the run
    monitors the newest, and each other one needs a run of its own (the exact command)."""
    announced = event_batches(context)
    if len(announced) < 2 or conf_batch(context) is not None:
        return None
    dag_id = getattr(context.get("dag_run"), "dag_id", None) or "DAG_ID"
    commands = "; ".join(
        f'`airflow dags trigger {dag_id} --conf \'{{"{CONF_KEY}": "{batch}"}}\'`' for batch in announced[:-1]
    )
    return (
        f"the triggering asset events named {len(announced)} batches; this run monitors "
        f"{announced[-1]}; monitor the others with {commands}"
    )
