"""The over-time benchmark's harness counts what the store, Slack and the retraining command saw.

Five clean census batches, then three with the age reported in months: the harness's tally is
checked against plain SQL on the monitor's SQLite store, the stand-in's own message list and the
retraining file, and the first page falls on the first shifted batch. The sub-population ramp and
the id-like column are checked against their definitions.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from benchmarks import alert_data, sequence_data
from benchmarks.monitor_sequence import MonitoredSequence, batch_id
from driftline.tasks.references.profiles import ProfileCache
from tests.alerts.slack_server import SlackStandIn

CLEAN, SHIFTED, ROWS = 5, 3, 1000
PAGING = ("medium", "high")
# families whose failures retrain by default (the data-quality ones page their owners instead)
NOT_RETRAINED = ("schema.", "abnormal.", "expectations.", "text.")


@pytest.fixture(scope="module")
def census() -> alert_data.DataSet:
    return alert_data.census()


def one_value(db: Path, sql: str, *args: object) -> object:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchone()[0]


def test_tally_matches_an_independent_reading_of_the_store(
    census: alert_data.DataSet, tmp_path: Path
) -> None:
    reference = tmp_path / "reference.parquet"
    census.reference.to_parquet(reference, index=False)
    unit_change = sequence_data.shift_of(census, "unit change")
    batches = sequence_data.clean_sequence(census, CLEAN, seed=3)
    batches += sequence_data.changed_sequence(census, unit_change, [1.0] * SHIFTED, ROWS, seed=4)
    with SlackStandIn() as slack:
        monitor = MonitoredSequence(
            census, tmp_path / "monitor", slack, ProfileCache(tmp_path / "profiles"), reference
        )
        for batch in batches:
            monitor.run(batch)
        tally = monitor.tally()
        posted = list(slack.messages)
        edits = len(slack.updates)
    db = monitor.database

    assert tally.runs == one_value(db, "SELECT count(*) FROM runs") == CLEAN + SHIFTED
    assert tally.incidents == one_value(db, "SELECT count(*) FROM incidents")
    assert tally.pages == one_value(db, "SELECT count(*) FROM incidents WHERE severity IN (?, ?)", *PAGING)
    assert sum(tally.resolved.values()) == one_value(
        db, "SELECT count(*) FROM incidents WHERE status = 'resolved'"
    )
    # the first batch with a result at medium or worse is the first shifted one, and it paged
    first = one_value(
        db, "SELECT min(batch_id) FROM results WHERE status = 'ok' AND severity IN (?, ?)", *PAGING
    )
    assert first == batch_id(CLEAN + 1)
    assert tally.first_page == CLEAN + 1 and tally.paging_runs >= 1
    # every message the stand-in kept (and every edit) is one the harness counted, and each was
    # a delivered outbox entry
    assert (
        tally.posts
        == len(posted)
        == one_value(db, "SELECT count(*) FROM alert_outbox WHERE sent_at IS NOT NULL")
    )
    assert tally.edits == edits
    assert tally.posts >= 1
    # retraining ran only for batches with a result at high in a family that retrains
    retrained = set(monitor.retrain_log.read_text().split())
    with sqlite3.connect(db) as conn:
        failing = {
            row[0]
            for row in conn.execute(
                "SELECT batch_id, \"check\" FROM results WHERE status = 'ok' AND severity = 'high'"
            )
            if not row[1].startswith(NOT_RETRAINED)
        }
    assert tally.retrains == len(monitor.retrain_log.read_text().splitlines()) >= 1
    assert retrained <= failing
    assert not retrained & {batch_id(i) for i in range(1, CLEAN + 1)}


def test_oversampled_category_takes_its_pool_share_plus_the_ramp() -> None:
    pool = pd.DataFrame({"c": ["a"] * 200 + ["b"] * 800, "x": np.arange(1000)})
    make = sequence_data.oversampled("c", "a")
    for s in (0.0, 0.1, 0.35):
        batch = make(pool, s, 500, np.random.default_rng(1))
        assert (batch["c"] == "a").sum() == round((0.2 + s) * 500)
        assert len(batch) == 500


def test_zipf_ids_follow_one_over_k() -> None:
    """The id column's level frequencies against p_k ∝ 1/k (scipy's chi-square goodness of fit)."""
    levels, rows = 50, 200_000
    ids = sequence_data.zipf_ids(levels, rows, np.random.default_rng(2))
    observed = ids.value_counts().reindex([f"A{k}" for k in range(levels)], fill_value=0).to_numpy()
    weights = 1.0 / np.arange(1, levels + 1)
    assert stats.chisquare(observed, rows * weights / weights.sum()).pvalue > 0.001
