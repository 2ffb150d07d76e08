"""Labels that land after their batch: joined on a later run, the label checks of the earlier batch
recomputed against scikit-learn, its estimates kept and marked superseded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sklearn.metrics import accuracy_score, roc_auc_score

from driftline import load_spec, run_monitor
from driftline.tasks.config.spec import SpecError
from driftline.tasks.history.db import open_store
from driftline.tasks.history.query import list_runs, read_history
from driftline.tasks.run.late_labels import joined, keyed_labels
from driftline.tasks.sources import SourceError
from tests.demo import write_spec

LABEL = "employed"


@pytest.fixture
def unlabelled(demo_data: Path, tmp_path: Path) -> Path:
    """The demo monitor over batches without their label; labels wait in `labels/` until they land."""
    source = demo_data.parent / "data" / "batches"
    batches, pending = tmp_path / "batches", tmp_path / "pending"
    batches.mkdir()
    pending.mkdir()
    (tmp_path / "labels").mkdir()
    for batch_id in ("2016-06", "2018-12", "2019-06"):
        frame = pd.read_parquet(source / f"{'2016-06' if batch_id == '2019-06' else batch_id}.parquet")
        frame.drop(columns=LABEL).to_parquet(batches / f"{batch_id}.parquet")
        frame[["id", LABEL]].to_parquet(pending / f"{batch_id}.parquet")
    path = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
    spec = yaml.safe_load(path.read_text())
    spec["batches"] = {"path": str(batches / "{batch}.parquet")}
    spec["labels"] = {"path": "labels/{batch}.parquet"}
    spec["columns"] = {**spec.get("columns", {}), "id": "id", "label": LABEL}
    spec["checks"] = ["drift.numeric", "performance.overall"]
    spec["alerts"] = {"min_severity": "high"}
    path.write_text(yaml.safe_dump(spec))
    return path


def land(spec_path: Path, batch_id: str) -> pd.DataFrame:
    """Move a batch's labels where the monitor looks for them; returns them."""
    target = spec_path.parent / "labels" / f"{batch_id}.parquet"
    shutil.move(spec_path.parent / "pending" / f"{batch_id}.parquet", target)
    return pd.read_parquet(target)


def stored(spec_path: Path, batch_id: str) -> dict[tuple[str, str, str], float]:
    engine = open_store(load_spec(spec_path).database_url())
    try:
        frame = read_history(engine, "acs-employment")
    finally:
        engine.dispose()
    rows = frame[frame["batch_id"] == batch_id]
    return {(r.check, r.target, r.metric): r.value for r in rows.itertuples()}


def test_labels_landing_later_are_joined_and_the_label_checks_recomputed(
    unlabelled: Path, demo_data: Path
) -> None:
    spec = load_spec(unlabelled)
    first = run_monitor(spec, "2016-06")
    by_check = {r["check"]: r for r in first.to_dict()["results"] if r["target"] in ("*", LABEL)}
    assert by_check["performance.overall"]["status"] == "skipped"
    assert "no labels yet" in by_check["performance.overall"]["reason"]
    # The label's absence is expected, not a schema problem; the run passes on its other checks.
    schema = [
        r for r in first.to_dict()["results"] if r["check"] == "schema.columns" and r["target"] == LABEL
    ]
    assert [(r["severity"], r["metrics"]) for r in schema] == [("none", {"arrives_later": 1.0})]
    assert first.status == "passed"
    assert run_monitor(spec, "2018-12").labels == []  # nothing has landed yet

    labels = land(unlabelled, "2016-06")
    third = run_monitor(spec, "2019-06")
    assert [(j["batch_id"], j["labelled_rows"]) for j in third.labels] == [("2016-06", len(labels))]

    batch = pd.read_parquet(demo_data.parent / "data" / "batches" / "2016-06.parquet")
    values = stored(unlabelled, "2016-06")
    assert values[("performance.overall", "accuracy", "current")] == pytest.approx(
        accuracy_score(batch[LABEL], batch["prediction"])
    )
    assert values[("performance.overall", "auc", "current")] == pytest.approx(
        roc_auc_score(batch[LABEL], batch["score"])
    )
    assert ("performance.overall", "*", "") not in values  # the skipped row was replaced

    engine = open_store(spec.database_url())
    try:
        runs = {r["batch_id"]: r for r in list_runs(engine, "acs-employment")}
    finally:
        engine.dispose()
    assert runs["2016-06"]["details"]["labels"]["labelled_rows"] == len(labels)
    assert "labels" not in runs["2018-12"]["details"]
    # Joined once: a later run leaves the batch alone.
    assert run_monitor(spec, "2019-06").labels == []


def test_labels_keyed_twice_are_named_and_the_batch_waits(unlabelled: Path) -> None:
    spec = load_spec(unlabelled)
    run_monitor(spec, "2016-06")
    labels = land(unlabelled, "2016-06")
    pd.concat([labels, labels.head(3)]).to_parquet(unlabelled.parent / "labels" / "2016-06.parquet")
    assert run_monitor(spec, "2018-12").labels == []
    labels.to_parquet(unlabelled.parent / "labels" / "2016-06.parquet")
    assert [j["batch_id"] for j in run_monitor(spec, "2019-06").labels] == ["2016-06"]


def test_the_join_keeps_labelled_rows_and_names_what_is_missing() -> None:
    batch = pd.DataFrame({"id": [1, 2, 3], "x": [0.1, 0.2, 0.3]})
    labels = pd.DataFrame({"id": [3, 1, 9], "y": [1, 0, 1]})
    both = joined(batch, keyed_labels(labels, "id", "y"), "id", "y")
    assert both.sort_values("id").to_dict("list") == {"id": [1, 3], "x": [0.1, 0.3], "y": [0, 1]}
    with pytest.raises(SourceError, match="no column 'y'"):
        keyed_labels(labels.rename(columns={"y": "z"}), "id", "y")
    with pytest.raises(SourceError, match="id column 'key'"):
        keyed_labels(labels, "key", "y")
    with pytest.raises(SourceError, match="batch has no id column 'key'"):
        joined(batch, keyed_labels(labels.rename(columns={"id": "key"}), "key", "y"), "key", "y")


def test_a_labels_file_without_batch_placeholder_is_a_spec_error(unlabelled: Path) -> None:
    spec = yaml.safe_load(unlabelled.read_text())
    spec["labels"] = {"path": "labels/all.parquet"}
    unlabelled.write_text(yaml.safe_dump(spec))
    with pytest.raises(SpecError, match=r"labels.*\{batch\}"):
        load_spec(unlabelled)
