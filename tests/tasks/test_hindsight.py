"""What labels say about a monitor's premises, through real runs with a SQLite history: label-free
estimates whose realised values fall outside their bands say their assumption failed, and a reference
on which the model is far better than on its first labelled batches is called in-sample."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import accuracy_score, roc_auc_score

from driftline import load_spec, run_monitor
from driftline.flows.render import make_console, print_summary
from driftline.tasks.hindsight.estimates import Comparison, compared, verdict
from driftline.tasks.history.db import open_store
from driftline.tasks.history.query import read_history
from tests.demo import write_spec

LABEL = "employed"
ORDER = ("2016-06", "2016-12", "2017-06", "2017-12", "2018-06")


def printed(summary) -> str:
    console = make_console()
    console.file = io.StringIO()
    print_summary(console, summary.to_dict(), show_ok=False)
    return console.file.getvalue()


# --- the rule, on its own ---------------------------------------------------------------------------------


def test_two_of_three_outside_or_one_far_outside_fail_the_assumption():
    """Band [0.70, 0.78] around 0.74 (half-width 0.04): 0.69 is outside, 0.61 is more than two
    half-widths from the estimate (far), 0.75 inside."""
    inside, outside, far = (
        Comparison(b, v, 0.74, 0.70, 0.78) for b, v in (("c", 0.75), ("b", 0.69), ("a", 0.61))
    )
    assert not verdict("recall", [inside, outside])["failed"]
    assert not verdict("recall", [inside, inside, inside])["failed"]
    two = verdict("recall", [outside, inside, outside])
    assert two["failed"] and two["outside"] == 2
    assert two["line"] == (
        "assumption failed: realised recall 0.69 outside the estimate's band [0.7, 0.78] on 2 of the "
        "last 3 labelled batches; the estimate is not to be trusted under this shift"
    )
    one = verdict("recall", [inside, far])
    assert one["failed"] and "far outside on batch a" in one["line"]
    assert verdict("recall", []) is None


def test_the_band_widens_for_the_realised_spread_and_for_partial_labels():
    """Band 0.74 ± 0.03 (three sampling errors of 0.01); a realised spread of 0.02 makes it ± 0.06,
    and labels on a quarter of the 2,000 rows double that again (√4)."""
    estimate = {"estimated": 0.74, "lower": 0.71, "upper": 0.77, "sampling_error": 0.01, "rows": 2000.0}
    realised = {"current": 0.66, "rows": 2000.0}
    plain = compared("a", estimate, realised)
    assert (plain.lower, plain.upper) == pytest.approx((0.71, 0.77)) and plain.outside
    wider = compared("a", {**estimate, "realised_error": 0.02}, realised)
    assert (wider.lower, wider.upper) == pytest.approx((0.68, 0.80)) and wider.outside
    partial = compared("a", {**estimate, "realised_error": 0.02}, {**realised, "rows": 500.0})
    assert (partial.lower, partial.upper) == pytest.approx((0.62, 0.86)) and not partial.outside
    assert compared("a", {**estimate, "estimated": float("nan")}, realised) is None


# --- through runs ----------------------------------------------------------------------------------------


def flipped(frame: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    """The batch with `share` of its labels flipped: concept shift, which scores cannot show."""
    flip = np.random.default_rng(seed).random(len(frame)) < share
    return frame.assign(**{LABEL: np.where(flip, 1 - frame[LABEL], frame[LABEL])})


@pytest.fixture
def late_labels(demo_data: Path, tmp_path: Path):
    """A monitor estimating performance over batches without labels; `land(batch, share)` lands a
    batch's labels with `share` of them flipped."""
    source = demo_data.parent / "data" / "batches"
    (tmp_path / "batches").mkdir()
    (tmp_path / "labels").mkdir()
    for batch_id in ORDER:
        pd.read_parquet(source / f"{batch_id}.parquet").drop(columns=LABEL).to_parquet(
            tmp_path / "batches" / f"{batch_id}.parquet"
        )
    path = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
    spec = yaml.safe_load(path.read_text())
    spec["batches"] = {"path": str(tmp_path / "batches" / "{batch}.parquet")}
    spec["labels"] = {"path": "labels/{batch}.parquet"}
    spec["columns"] = {**spec.get("columns", {}), "id": "id", "label": LABEL}
    spec["checks"] = ["performance.overall", "performance.estimated"]
    spec["alerts"] = {"min_severity": "high"}
    path.write_text(yaml.safe_dump(spec))

    def land(batch_id: str, share: float) -> None:
        frame = flipped(pd.read_parquet(source / f"{batch_id}.parquet"), share, seed=len(batch_id))
        frame[["id", LABEL]].to_parquet(tmp_path / "labels" / f"{batch_id}.parquet")

    return load_spec(path), land


def estimates(summary) -> dict[str, dict]:
    return {r["target"]: r for r in summary.to_dict()["results"] if r["check"] == "performance.estimated"}


def test_realised_accuracy_outside_the_band_on_two_labelled_batches_fails_the_assumption(late_labels):
    """A quarter of the labels flipped (accuracy about 0.66 where the scores promise 0.82): once the
    labels of two batches have been joined, the next run's accuracy estimate says that its
    assumption failed, in its reason, its details, the CLI and the report."""
    spec, land = late_labels
    for batch_id in ORDER[:2]:
        run_monitor(spec, batch_id)
        land(batch_id, 0.25)
    run_monitor(spec, ORDER[2])  # joins the labels of the first two, after its own checks
    summary = run_monitor(spec, ORDER[3])
    accuracy = estimates(summary)["accuracy"]
    assumption = accuracy["details"]["assumption"]
    assert assumption["failed"] and assumption["outside"] == 2 and assumption["labelled"] == 2
    engine = open_store(spec.database_url())
    try:
        history = read_history(engine, "acs-employment")
    finally:
        engine.dispose()
    realised = history[
        (history["check"] == "performance.overall")
        & (history["target"] == "accuracy")
        & (history["metric"] == "current")
        & (history["batch_id"] == ORDER[1])
    ]["value"].item()
    assert accuracy["reason"].startswith(
        f"assumption failed: realised accuracy {realised:.4g} outside the estimate's band ["
    )
    assert "on 2 of the last 2 labelled batches" in accuracy["reason"]
    assert "warning: performance.estimated · accuracy: assumption failed" in printed(summary)
    assert "assumption failed: realised accuracy" in Path(summary.report).read_text()


def test_faithful_labels_keep_the_estimates_quiet(late_labels, demo_data: Path):
    spec, land = late_labels
    for batch_id in ORDER[:2]:
        run_monitor(spec, batch_id)
        land(batch_id, 0.0)
    run_monitor(spec, ORDER[2])
    summary = run_monitor(spec, ORDER[3])
    results = estimates(summary)
    for target in ("accuracy", "f1", "auc"):
        assumption = results[target]["details"]["assumption"]
        assert not assumption["failed"] and assumption["labelled"] == 2, (target, assumption)
        assert not results[target]["reason"].startswith("assumption failed")
    # performance.overall realises no precision or recall to compare with
    assert "assumption" not in results["precision"]["details"]
    source = pd.read_parquet(demo_data.parent / "data" / "batches" / f"{ORDER[0]}.parquet")
    realised = accuracy_score(source[LABEL], source["prediction"])
    compared = estimates(summary)["accuracy"]["details"]["assumption"]["batches"]
    assert [c["batch_id"] for c in compared] == [ORDER[1], ORDER[0]]
    assert compared[1]["realised"] == pytest.approx(realised)
    assert "warning:" not in printed(summary)


# --- an in-sample reference ------------------------------------------------------------------------------


@pytest.fixture
def labelled_monitor(demo_data: Path, tmp_path: Path):
    """`make(reference)`: a monitor of the demo's labelled batches against `reference`."""

    def make(reference: pd.DataFrame):
        reference.to_parquet(tmp_path / "reference.parquet")
        path = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
        spec = yaml.safe_load(path.read_text())
        spec["reference"] = {"path": str(tmp_path / "reference.parquet")}
        spec["checks"] = ["performance.overall"]
        spec["alerts"] = {"min_severity": "high"}
        path.write_text(yaml.safe_dump(spec))
        return load_spec(path)

    return make


def warnings_of(summary) -> list[dict]:
    return [r for r in summary.to_dict()["results"] if r["check"] == "run.reference"]


def test_a_reference_the_model_fits_far_better_than_its_batches_is_called_in_sample(
    labelled_monitor, demo_data: Path
):
    """The reference's labels replaced by the model's own predictions on 95% of its rows, as a model
    scored on its training rows looks: on each of the first three batches the realised accuracy is
    more than the high threshold (5 points) below the reference's, and the third run says so."""
    reference = pd.read_parquet(demo_data.parent / "data" / "reference.parquet")
    fitted = np.random.default_rng(0).random(len(reference)) < 0.95
    reference[LABEL] = np.where(fitted, reference["prediction"], reference[LABEL])
    spec = labelled_monitor(reference)
    assert warnings_of(run_monitor(spec, ORDER[0])) == []
    assert warnings_of(run_monitor(spec, ORDER[1])) == []
    summary = run_monitor(spec, ORDER[2])
    [warning] = warnings_of(summary)
    metric = warning["details"]["metric"]
    measure, name = {"auc": (roc_auc_score, "AUC"), "accuracy": (accuracy_score, "accuracy")}[metric]
    column = "score" if metric == "auc" else "prediction"
    batches = demo_data.parent / "data" / "batches"
    realised = [
        measure(f[LABEL], f[column]) for f in (pd.read_parquet(batches / f"{b}.parquet") for b in ORDER[:3])
    ]
    assert warning["reason"] == (
        f"the reference looks in-sample: reference {name} {measure(reference[LABEL], reference[column]):.4g} "
        f"against {min(realised):.4g}–{max(realised):.4g} on the first 3 labelled batches; take the "
        "reference from a held-out period after training"
    )
    assert warning["details"]["batches"] == list(ORDER[:3])
    assert warning["severity"] == "none"
    assert f"warning: {warning['reason']}" in printed(summary).replace("\n", "")
    assert "the reference looks in-sample" in Path(summary.report).read_text()
    # a later run keeps saying it: the first three batches since the reference changed do not change
    assert warnings_of(run_monitor(spec, ORDER[3]))[0]["reason"] == warning["reason"]


def test_a_held_out_reference_is_not_called_in_sample(labelled_monitor, demo_data: Path):
    spec = labelled_monitor(pd.read_parquet(demo_data.parent / "data" / "reference.parquet"))
    for batch_id in ORDER[:4]:
        assert warnings_of(run_monitor(spec, batch_id)) == []


def test_a_new_reference_starts_the_count_again(labelled_monitor, demo_data: Path):
    """Batches stored under another reference do not count towards the first three."""
    reference = pd.read_parquet(demo_data.parent / "data" / "reference.parquet")
    spec = labelled_monitor(reference)
    run_monitor(spec, ORDER[0])
    run_monitor(spec, ORDER[1])
    fitted = np.random.default_rng(0).random(len(reference)) < 0.95
    spec = labelled_monitor(
        reference.assign(**{LABEL: np.where(fitted, reference["prediction"], reference[LABEL])})
    )
    assert warnings_of(run_monitor(spec, ORDER[2])) == []  # one labelled batch since the change


def test_a_run_without_estimates_or_realised_performance_reads_no_history(tmp_path: Path, caplog):
    """Nothing for labels to say: the store is never opened (a URL no store can be opened at would
    log that the labelled history was not read)."""
    from datetime import UTC, datetime

    from driftline.checks.result import CheckResult
    from driftline.tasks.hindsight.premises import hindsight

    unreachable = f"sqlite:///{tmp_path / 'missing' / 'folder' / 'history.db'}"
    drift = [CheckResult(check="drift.numeric", target="AGEP", metrics={"psi": 0.4})]
    with caplog.at_level("WARNING", logger="driftline.tasks.hindsight.premises"):
        assert hindsight(unreachable, "m", ("b1", datetime(2024, 1, 1, tzinfo=UTC), "ref"), drift) == []
        labelled = [CheckResult(check="performance.overall", target="*", metrics={"auc": 0.8})]
        assert hindsight(unreachable, "m", ("b1", datetime(2024, 1, 1, tzinfo=UTC), "ref"), labelled) == []
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["labelled history not read"]
