"""Evidence over time through the real run path: daily batches of census rows (ACS 2015, the reference's
own population) run one after another into a SQLite store. Clean batches raise nothing, a persistent
shift too small for any one batch is claimed within ten, and a new reference starts a new history."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from sqlalchemy import select

from driftline.checks.result import severity_rank
from driftline.data import demo
from driftline.tasks.config.spec import load_spec
from driftline.tasks.history.db import open_store
from driftline.tasks.history.models import ResultRow
from driftline.tasks.run import pipeline
from driftline.tasks.run.pipeline import RunSummary, run_monitor

CATEGORICAL = ["SCHL", "MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "SEX", "RAC1P"]
CHECKS = ["drift.numeric", "drift.categorical", "drift.label", "abnormal.unseen_categorical"]
BATCH_ROWS = 1000
Shift = Callable[[pd.DataFrame, np.random.Generator], pd.DataFrame]


@pytest.fixture(scope="module")
def census() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(reference, pool): 6,000 and 14,000 shuffled rows of the 2015 survey."""
    data = pd.read_parquet(demo.DATA_FILE)
    rows = data[data["year"] == 2015].drop(columns="year").sample(frac=1.0, random_state=0)
    return rows.iloc[:6000].reset_index(drop=True), rows.iloc[6000:].reset_index(drop=True)


@pytest.fixture(autouse=True)
def no_html_report(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The report is not under test here; leaving it out keeps forty runs quick."""
    monkeypatch.setattr(pipeline, "publish_report", lambda *args: [])
    yield


class Monitor:
    """A monitor spec over the census in a folder, and its daily batches run in order."""

    def __init__(
        self, folder: Path, reference: pd.DataFrame, late_labels: bool = False, **alerts: Any
    ) -> None:
        self.folder, self.day, self.late_labels = folder, 0, late_labels
        (folder / "batches").mkdir(parents=True)
        self.set_reference(reference)
        spec = {
            "name": "census-daily",
            "reference": {"path": str(folder / "reference.parquet")},
            "batches": {"path": str(folder / "batches" / "{batch}.parquet")},
            "columns": {"id": "id", "label": demo.LABEL, "categorical": CATEGORICAL, "numeric": ["AGEP"]},
            "checks": CHECKS,
            "execution": {"isolation": "thread"},
            "store_url": f"sqlite:///{folder / 'history.db'}",
            "alerts": {"console": False, **alerts},
        }
        if late_labels:
            spec["labels"] = {"path": str(folder / "labels" / "{batch}.parquet")}
            (folder / "labels").mkdir()
        (folder / "monitor.yaml").write_text(yaml.safe_dump(spec))
        self.spec = load_spec(folder / "monitor.yaml")

    def set_reference(self, reference: pd.DataFrame) -> None:
        reference.to_parquet(self.folder / "reference.parquet")

    def run(self, batch: pd.DataFrame) -> RunSummary:
        """Run the next day's batch; with late labels, its labels land just after the run."""
        batch_id = (date(2024, 1, 1) + timedelta(days=self.day)).isoformat()
        self.day += 1
        unlabelled = batch.drop(columns=demo.LABEL) if self.late_labels else batch
        unlabelled.to_parquet(self.folder / "batches" / f"{batch_id}.parquet")
        summary = run_monitor(self.spec, batch_id, alerts=False, retrain=False)
        if self.late_labels:
            batch[["id", demo.LABEL]].to_parquet(self.folder / "labels" / f"{batch_id}.parquet")
        return summary


def clean(pool: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    return pool.iloc[np.sort(rng.choice(len(pool), BATCH_ROWS, replace=False))].reset_index(drop=True)


def new_relationship(share: float) -> Shift:
    """A category the reference never had (RELP "99") on `share` of the rows."""

    def make(pool: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        batch = clean(pool, rng)
        values = batch["RELP"].cat.add_categories(["99"])
        values[rng.random(len(batch)) < share] = "99"
        return batch.assign(RELP=values)

    return make


def label_prior(delta: float) -> Shift:
    """Rows drawn by class so that the employed share is `delta` above the pool's."""

    def make(pool: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        positive = pool[demo.LABEL].to_numpy() == 1
        take = round((positive.mean() + delta) * BATCH_ROWS)
        picked = np.concatenate(
            [
                rng.choice(np.flatnonzero(positive), take, replace=False),
                rng.choice(np.flatnonzero(~positive), BATCH_ROWS - take, replace=False),
            ]
        )
        return pool.iloc[np.sort(picked)].reset_index(drop=True)

    return make


def sustained(summary: RunSummary) -> list[Any]:
    return [r for r in summary.results if "sustained" in r.details]


def test_forty_clean_batches_raise_nothing_by_accumulated_evidence(
    census: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    reference, pool = census
    monitor, rng = Monitor(tmp_path, reference), np.random.default_rng(1)
    claims = [r for _ in range(40) for r in sustained(monitor.run(clean(pool, rng)))]
    assert claims == []


@pytest.mark.parametrize(
    ("shift", "check", "said"),
    [
        (new_relationship(0.02), "abnormal.unseen_categorical", "of RELP stayed above its reference level"),
        (label_prior(0.05), "drift.label", f"the share of {demo.LABEL} = "),
    ],
    ids=["2% new category", "label prior +5 points"],
)
def test_a_persistent_shift_no_batch_pages_is_claimed_within_ten_batches(
    census: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path, shift: Shift, check: str, said: str
) -> None:
    """The new category is claimed on its rate's p-values, the label's rise on its rarer class's
    signed share scores (`checks.shares`, a category and a direction); each says so in its reason."""
    reference, pool = census
    monitor, rng = Monitor(tmp_path, reference), np.random.default_rng(2)
    for _ in range(4):
        assert sustained(monitor.run(clean(pool, rng))) == []
    shifted: list[RunSummary] = []
    claimed: list[Any] = []
    while not claimed and len(shifted) < 10:
        shifted.append(monitor.run(shift(pool, rng)))
        claimed = [r for r in sustained(shifted[-1]) if r.check == check]
    paged = [
        r for s in shifted[:-1] for r in s.results if r.check == check and severity_rank(r.severity) >= 2
    ]
    assert paged == [], "one batch alone pages: the shift is not subtle"
    assert claimed, "no sustained claim within ten shifted batches"
    result = claimed[0]
    claim = result.details["sustained"]
    assert result.severity == "medium" and len(shifted) >= 2
    assert claim["z"] >= claim["level"] and claim["mean_excess"] > 0
    summary = shifted[-1]
    assert claim["batches"][-1] == summary.batch_id and len(claim["batches"]) == claim["window"]
    assert result.metrics[f"{claim['metric']}_sustained_z"] == pytest.approx(claim["z"])
    assert f"over the last {claim['window']} batches, " in result.reason and said in result.reason
    engine = open_store(monitor.spec.database_url())
    with engine.connect() as conn:
        stored = conn.execute(
            select(ResultRow.reason, ResultRow.severity).where(
                ResultRow.batch_id == summary.batch_id,
                ResultRow.check == check,
                ResultRow.target == result.target,
                ResultRow.metric == f"{claim['metric']}_sustained_z",
            )
        ).one()
    engine.dispose()
    assert stored == (result.reason, "medium")


def test_a_new_reference_starts_a_new_history(
    census: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """The batches that built up evidence against the old reference do not count against the new one;
    switched off, the layer claims nothing at all."""
    reference, pool = census
    shift, rng = label_prior(0.05), np.random.default_rng(3)
    monitor = Monitor(tmp_path, reference)
    runs = [monitor.run(shift(pool, rng)) for _ in range(6)]
    assert any(r.check == "drift.label" for r in sustained(runs[-1]))
    monitor.set_reference(reference.sample(frac=1.0, random_state=1).iloc[:5900])
    assert sustained(monitor.run(shift(pool, rng))) == []
    assert sustained(monitor.run(shift(pool, rng))) == []
    off = Monitor(tmp_path / "off", reference, sustained={"enabled": False})
    assert [r for _ in range(6) for r in sustained(off.run(shift(pool, rng)))] == []


def test_the_command_line_prints_the_sustained_sentence(
    census: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """`driftline run` of a claimed batch shows the claim in the reason column, whole."""
    from typer.testing import CliRunner

    from driftline.flows.cli import app

    reference, pool = census
    monitor, rng = Monitor(tmp_path, reference), np.random.default_rng(4)
    shift = label_prior(0.05)
    claimed = next(s for s in (monitor.run(shift(pool, rng)) for _ in range(8)) if sustained(s))
    sentence = sustained(claimed)[0].details["sustained"]["sentence"]
    shown = CliRunner().invoke(
        app,
        ["run", str(monitor.folder / "monitor.yaml"), "--batch", claimed.batch_id],
        env={"COLUMNS": "250"},
    )
    text = " ".join(word for line in shown.output.splitlines() for word in line.replace("│", " ").split())
    assert " ".join(sentence.split()) in text


def test_labels_that_land_late_accumulate_evidence_too(
    census: tuple[pd.DataFrame, pd.DataFrame], tmp_path: Path
) -> None:
    """The label checks of a batch whose labels landed late are graded over the earlier batches whose
    labels landed: the label prior shift is claimed on a late-labelled batch."""
    from driftline.tasks.history.query import latest_results

    reference, pool = census
    monitor, rng = Monitor(tmp_path, reference, late_labels=True), np.random.default_rng(5)
    shift = label_prior(0.05)
    for _ in range(8):
        monitor.run(shift(pool, rng))
    engine = open_store(monitor.spec.database_url())
    batches = [(date(2024, 1, 1) + timedelta(days=day)).isoformat() for day in range(7)]
    labelled = [
        r
        for b in batches
        for r in latest_results(engine, monitor.spec.name, b)
        if r["check"] == "drift.label"
    ]
    engine.dispose()
    assert all(r["status"] == "ok" for r in labelled) and len(labelled) == 7
    claims = [r for r in labelled if "sustained" in r["details"]]
    assert claims and all(r["severity"] == "medium" for r in claims)
