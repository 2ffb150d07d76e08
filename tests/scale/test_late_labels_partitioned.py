"""Labels that land after a batch stored as Parquet partitions (or read from SQL in pages): the batch
is read one partition at a time and joined with the labels, and the label checks are recomputed on
the labelled rows (pinned against scikit-learn); more labelled rows than the gather limit, or a
partition that cannot be read, give a stored `skipped` result or a logged retry, never a crash."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import accuracy_score, roc_auc_score
from sqlalchemy import create_engine

from driftline.tasks.config.spec import MonitorSpec, load_spec
from driftline.tasks.history.db import connected_store
from driftline.tasks.history.query import latest_results
from driftline.tasks.references.reference import prepare_reference
from driftline.tasks.run import sql_pages
from driftline.tasks.run.context import RunContext, RunOptions
from driftline.tasks.run.late_labels import LabelJoin, join_late_labels
from driftline.tasks.run.partitioned import run_partitioned
from tests.scale.helpers import mixed_frame

BATCHES = ("2024-05-01", "2024-05-02")
SIZES = (400, 700, 500)
LABELLED = 0.7  # the share of each batch's rows whose label lands


@pytest.fixture
def monitor(tmp_path: Path) -> Path:
    """A partitioned monitor whose batches carry no label; each batch's labels (for 70% of its rows,
    in shuffled order) wait in `pending/` until they land in `labels/`."""
    mixed_frame(3000, seed=21).assign(id=np.arange(3000)).to_parquet(tmp_path / "reference.parquet")
    (tmp_path / "pending").mkdir()
    (tmp_path / "labels").mkdir()
    rng = np.random.default_rng(5)
    for b, batch_id in enumerate(BATCHES):
        frame = mixed_frame(sum(SIZES), seed=30 + b, shift=0.3)
        frame["id"] = np.arange(sum(SIZES)) + 100_000 * (b + 1)
        parts = tmp_path / "parts" / batch_id
        parts.mkdir(parents=True)
        for i, start in enumerate(np.cumsum([0, *SIZES[:-1]])):
            part = frame.iloc[start : start + SIZES[i]].drop(columns="label")
            part.to_parquet(parts / f"part-{i}.parquet", index=False)
        labelled = frame.sample(frac=LABELLED, random_state=rng.integers(1 << 30))
        labelled[["id", "label"]].to_parquet(tmp_path / "pending" / f"{batch_id}.parquet", index=False)
    spec = {
        "name": "late-parts",
        "reference": {"path": str(tmp_path / "reference.parquet")},
        "batches": {"path": str(tmp_path / "parts" / "{batch}" / "*.parquet")},
        "labels": {"path": "labels/{batch}.parquet"},
        "columns": {
            "id": "id",
            "label": "label",
            "score": "score",
            "prediction": "prediction",
            "numeric": ["x", "ties", "wide"],
            "categorical": ["cat"],
        },
        "checks": ["drift.numeric", "performance.overall"],
        "execution": {"isolation": "thread", "workers": 1},
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def land(spec_path: Path, batch_id: str) -> pd.DataFrame:
    """Move a batch's labels where the monitor looks for them; returns them."""
    target = spec_path.parent / "labels" / f"{batch_id}.parquet"
    (spec_path.parent / "pending" / f"{batch_id}.parquet").rename(target)
    return pd.read_parquet(target)


def truth(spec_path: Path, batch_id: str, labels: pd.DataFrame) -> pd.DataFrame:
    """The batch's labelled rows, read whole with pandas and joined independently of driftline."""
    parts = sorted((spec_path.parent / "parts" / batch_id).glob("*.parquet"))
    batch = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    return batch.merge(labels, on="id")


def performance(spec: MonitorSpec, batch_id: str) -> dict[str, dict]:
    """The stored `performance.overall` results of a batch, by target."""
    with connected_store(spec.database_url()) as engine:
        results = latest_results(engine, spec.name, batch_id)
    return {r["target"]: r for r in results if r["check"] == "performance.overall"}


def join(spec: MonitorSpec, current: str, **options: int) -> list[LabelJoin]:
    """`join_late_labels` as a partitioned run of `current` calls it."""
    context = RunContext.open(spec, options=RunOptions(**options))
    load = lambda: pd.read_parquet(spec.resolve(spec.reference.path))  # noqa: E731
    prepared = prepare_reference(spec, load, context.cache.directory)
    return join_late_labels(context, current_batch=current, prepared=prepared)


def assert_metrics_match(spec: MonitorSpec, batch_id: str, expected: pd.DataFrame) -> None:
    results = performance(spec, batch_id)
    assert "*" not in results  # the skip for want of labels was replaced
    assert {r["status"] for r in results.values()} == {"ok"}
    assert {r["rows"] for r in results.values()} == {len(expected)}
    accuracy = accuracy_score(expected["label"], expected["prediction"])
    assert results["accuracy"]["metrics"]["current"] == pytest.approx(accuracy)
    auc = roc_auc_score(expected["label"], expected["score"])
    assert results["auc"]["metrics"]["current"] == pytest.approx(auc)


def test_labels_joined_partition_by_partition_give_the_whole_batch_metrics(monitor: Path) -> None:
    spec = load_spec(monitor)
    first = run_partitioned(spec, BATCHES[0], alerts=False, retrain=False)
    waiting = next(r for r in first.to_dict()["results"] if r["check"] == "performance.overall")
    assert waiting["status"] == "skipped" and "no labels yet" in waiting["reason"]
    assert join(spec, BATCHES[1]) == []  # nothing has landed yet

    labels = land(monitor, BATCHES[0])
    joins = join(spec, BATCHES[1])
    expected = truth(monitor, BATCHES[0], labels)
    assert [(j.batch_id, j.rows, j.labelled_rows, j.reason) for j in joins] == [
        (BATCHES[0], sum(SIZES), len(expected), None)
    ]
    assert len(expected) == round(LABELLED * sum(SIZES))
    assert_metrics_match(spec, BATCHES[0], expected)
    assert join(spec, BATCHES[1]) == []  # joined once


def test_more_labelled_rows_than_the_gather_limit_are_a_stored_skip(monitor: Path) -> None:
    spec = load_spec(monitor)
    run_partitioned(spec, BATCHES[0], alerts=False, retrain=False)
    land(monitor, BATCHES[0])
    joins = join(spec, BATCHES[1], gather_rows=200)
    assert [(j.batch_id, j.rows, j.labelled_rows) for j in joins] == [(BATCHES[0], sum(SIZES), None)]
    assert "more than 200 labelled rows" in str(joins[0].reason)
    result = performance(spec, BATCHES[0])["*"]
    assert result["status"] == "skipped" and result["reason"] == joins[0].reason
    assert join(spec, BATCHES[1]) == []  # an outcome is stored: the batch is not read again


def test_partitions_that_cannot_be_joined_are_logged_and_retried(
    monitor: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = load_spec(monitor)
    run_partitioned(spec, BATCHES[0], alerts=False, retrain=False)
    labels = land(monitor, BATCHES[0])
    odd = monitor.parent / "parts" / BATCHES[0] / "part-9.parquet"
    pd.DataFrame({"other": [1.0]}).to_parquet(odd)
    with caplog.at_level(logging.WARNING, logger="driftline.tasks.run.late_labels"):
        assert join(spec, BATCHES[1]) == []
    assert "part-9.parquet" in caplog.text and "schema differs" in caplog.text
    odd.unlink()
    first = monitor.parent / "parts" / BATCHES[0] / "part-0.parquet"
    clean = pd.read_parquet(first)
    pd.concat([clean, clean.head(2)]).to_parquet(first, index=False)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="driftline.tasks.run.late_labels"):
        assert join(spec, BATCHES[1]) == []
    assert "gives an id in column 'id' to more than one row" in caplog.text
    clean.to_parquet(first, index=False)
    second = first.with_name("part-1.parquet")
    kept = pd.read_parquet(second)
    shared = clean[clean["id"].isin(labels["id"])].head(1)  # a labelled row of part 0, again in part 1
    pd.concat([kept, shared]).to_parquet(second, index=False)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="driftline.tasks.run.late_labels"):
        assert join(spec, BATCHES[1]) == []
    assert f"id {shared['id'].iloc[0]!r} (column 'id') to rows of more than one partition" in caplog.text
    kept.to_parquet(second, index=False)
    assert [j.batch_id for j in join(spec, BATCHES[1])] == [BATCHES[0]]
    assert_metrics_match(spec, BATCHES[0], truth(monitor, BATCHES[0], labels))


def test_labels_are_joined_page_by_page_onto_a_sql_batch(
    monitor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first batch as a SQL table read in pages of its id (500 rows a page)."""
    url = f"sqlite:///{monitor.parent / 'events.db'}"
    parts = sorted((monitor.parent / "parts" / BATCHES[0]).glob("*.parquet"))
    events = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    engine = create_engine(url)
    events.assign(ts=datetime(2024, 5, 1, 8, tzinfo=UTC)).sample(frac=1, random_state=2).to_sql(
        "events", engine, index=False
    )
    engine.dispose()
    raw = yaml.safe_load(monitor.read_text())
    query = "SELECT * FROM events WHERE ts >= :start AND ts < :end"
    raw["batches"] = {"sql": {"url": url, "query": query, "page_by": "id", "page_rows": 500}}
    monitor.write_text(yaml.safe_dump(raw))
    spec = load_spec(monitor)
    assert run_partitioned(spec, BATCHES[0], alerts=False, retrain=False).rows == sum(SIZES)
    labels = land(monitor, BATCHES[0])
    pages: list[int] = []
    read = sql_pages.SqlPage.read
    monkeypatch.setattr(sql_pages.SqlPage, "read", lambda page: pages.append(page.rows) or read(page))
    joins = join(spec, BATCHES[1])
    assert pages == [500, 500, 500, 100]  # read in pages, never whole
    expected = truth(monitor, BATCHES[0], labels)
    assert [(j.batch_id, j.rows, j.labelled_rows) for j in joins] == [(BATCHES[0], sum(SIZES), len(expected))]
    assert_metrics_match(spec, BATCHES[0], expected)


def test_a_partitioned_run_joins_the_labels_of_earlier_batches(monitor: Path) -> None:
    """Needs `run_partitioned` to join late labels after storing its run, as `run_monitor` does."""
    spec = load_spec(monitor)
    run_partitioned(spec, BATCHES[0], alerts=False, retrain=False)
    labels = land(monitor, BATCHES[0])
    second = run_partitioned(spec, BATCHES[1], alerts=False, retrain=False)
    expected = truth(monitor, BATCHES[0], labels)
    assert [(j["batch_id"], j["labelled_rows"]) for j in second.labels] == [(BATCHES[0], len(expected))]
    assert_metrics_match(spec, BATCHES[0], expected)
