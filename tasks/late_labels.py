"""Labels that land after their batch: joined onto the earlier batches, whose label checks are recomputed.

A monitor with a `labels:` source (a file template with `{batch}`, or SQL over the batch's window,
holding the id column and the label) looks, on every run, at its completed runs that have no labels
yet. For each batch whose labels have landed, the batch is loaded again, the labels are joined on the
id (only labelled rows are kept), the spec's checks that need a label are evaluated, and their results
replace the ones stored for that batch (which were errors or skips for want of a label). Label-free
estimates of the same batch (`performance.estimated`) stay, marked as superseded, so the history
shows estimate and truth side by side. A batch whose labels have not landed is tried again next run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.tasks.profiles import ProfileCache
from driftline.tasks.sources import BATCH_PLACEHOLDER, SourceError, read_table
from driftline.tasks.spec import MonitorSpec, Source
from driftline.tasks.steps import evaluate_check, load_batch, source_args

log = logging.getLogger(__name__)
# Runs looked at per monitor run, newest first: labels older than this many batches are not waited for.
LOOKBACK_RUNS = 50

Prepare = Callable[[pd.DataFrame], tuple[pd.DataFrame, Columns]]


@dataclass
class LabelJoin:
    """What joining one batch's labels did."""

    batch_id: str
    rows: int
    labelled_rows: int
    status: str
    worst_severity: str
    checks: list[str]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def label_checks(spec: MonitorSpec) -> list[tuple[str, dict[str, Any]]]:
    """The spec's checks that need a label: (name, parameters), in spec order."""
    return [(e.check, e.check_params()) for e in spec.checks if "label" in registry.get(e.check).needs]


def load_labels(spec: MonitorSpec, source: Source, batch_id: str) -> pd.DataFrame | None:
    """The labels of one batch, or None when they have not landed (no file yet, or no row)."""
    if source.path is not None:
        path = spec.resolve(source.path.replace(BATCH_PLACEHOLDER, batch_id))
        if not path.exists():
            return None
        frame = read_table(path)
    else:
        frame = load_batch(*source_args(spec, source, "labels"), batch_id).frame
    return frame if len(frame) else None


def with_labels(batch: pd.DataFrame, labels: pd.DataFrame, id_column: str, label: str) -> pd.DataFrame:
    """The batch rows that have a label, the label taken from `labels` (joined on `id_column`)."""
    for name, frame in (("batch", batch), ("labels", labels)):
        if id_column not in frame.columns:
            raise SourceError(f"the {name} has no id column {id_column!r} to join labels on")
    if label not in labels.columns:
        raise SourceError(f"the labels have no column {label!r}")
    duplicated = labels[id_column].duplicated()
    if duplicated.any():
        first = labels.loc[duplicated, id_column].iloc[0]
        raise SourceError(
            f"the labels give id {first!r} more than one label ({int(duplicated.sum())} repeats)"
        )
    keyed = labels[[id_column, label]].dropna(subset=[label])
    return batch.drop(columns=[label], errors="ignore").merge(
        keyed, on=id_column, how="inner", validate="1:1"
    )


def pending_batches(url: str, monitor: str, exclude: str) -> list[str]:
    """Completed batches of `monitor` whose labels have not been joined, newest first."""
    from driftline.tasks.history.db import connected_store
    from driftline.tasks.history.store import runs_without_labels

    with connected_store(url) as engine:
        return runs_without_labels(engine, monitor, exclude=exclude, limit=LOOKBACK_RUNS)


def join_late_labels(
    spec: MonitorSpec,
    *,
    current_batch: str,
    columns: Columns,
    reference: pd.DataFrame,
    ref_hash: str,
    cache: ProfileCache,
    prepare: Prepare,
) -> list[LabelJoin]:
    """Join the labels that have landed onto earlier batches and store their label checks' results.

    `prepare` scores a re-loaded batch as the run scores its own (model, columns). A batch whose labels
    cannot be read or joined is logged and tried again on the next run; it never fails this run.
    """
    from driftline.tasks.history.db import connected_store
    from driftline.tasks.history.store import record_late_results

    if spec.labels is None or columns.label is None or columns.id is None:
        return []
    checks = label_checks(spec)
    url = spec.database_url()
    joins: list[LabelJoin] = []
    for batch_id in pending_batches(url, spec.name, exclude=current_batch):
        try:
            labels = load_labels(spec, spec.labels, batch_id)
            if labels is None:
                continue
            batch = load_batch(*source_args(spec, spec.batches, "batches"), batch_id)
            frame = with_labels(batch.frame, labels, columns.id, columns.label)
            frame, scored_columns = prepare(frame)
        except SourceError as exc:
            log.warning("labels of batch %s not joined: %s", batch_id, exc)
            continue
        results = [
            result
            for name, params in checks
            for result in evaluate_check(
                registry.create(name, params), frame, scored_columns, reference, ref_hash, cache
            )
        ]
        note = {"rows": len(batch.frame), "labelled_rows": len(frame)}
        with connected_store(url) as engine:
            status, worst = record_late_results(
                engine,
                monitor=spec.name,
                batch_id=batch_id,
                results=results,
                fail_on=spec.fail_on,
                labels=note,
            )
        joins.append(LabelJoin(batch_id, len(batch.frame), len(frame), status, worst, [n for n, _ in checks]))
        log.info(
            "labels joined onto batch %s: %d of %d rows labelled", batch_id, len(frame), len(batch.frame)
        )
    return joins
