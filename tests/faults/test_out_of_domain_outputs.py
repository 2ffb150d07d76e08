"""Labels, predictions and scores outside the reference's domain are named once, by the schema check,
and the checks that would score them are stopped with that problem instead of reporting numbers
computed on values they cannot read (accuracy 0.914 and F1 0, "one class only?")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from driftline import load_spec, run_monitor
from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.domains import stopping_problem
from driftline.checks.schema import SchemaCheck

CHECKS = ["performance.overall", "performance.calibration", "drift.label", "drift.prediction"]


def credit(n: int, seed: int) -> pd.DataFrame:
    """A binary credit model: 0/1 labels, 0/1 predictions and a probability score."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    score = 1 / (1 + np.exp(-(2 * x - 2.3)))
    label = (rng.random(n) < score).astype(np.int64)
    return pd.DataFrame(
        {"x": x, "score": score, "prediction": (score >= 0.5).astype(np.int64), "label": label}
    )


def run(tmp_path: Path, batch: pd.DataFrame) -> dict[tuple[str, str], list[dict]]:
    """One run of CHECKS over `batch` against a clean reference: results by (check, target)."""
    (tmp_path / "batches").mkdir()
    credit(3000, 0).to_parquet(tmp_path / "reference.parquet")
    batch.to_parquet(tmp_path / "batches" / "b1.parquet")
    spec = {
        "name": "credit",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": CHECKS,
        "execution": {"isolation": "thread"},
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(spec))
    summary = run_monitor(load_spec(tmp_path / "monitor.yaml"), "b1", alerts=False, retrain=False)
    found: dict[tuple[str, str], list[dict]] = {}
    for result in summary.to_dict()["results"]:
        found.setdefault((result["check"], result["target"]), []).append(result)
    return found


def relabel(values: tuple) -> Callable[[pd.DataFrame], pd.DataFrame]:
    return lambda f: f.assign(label=np.where(f["label"] == 1, values[1], values[0]))


CASES = {
    "labels -1/2": (
        relabel((-1, 2)),
        "label",
        "value(s) [-1, 2] are not among the reference's binary classes [0, 1]",
    ),
    "labels no/yes": (
        relabel(("no", "yes")),
        "label",
        "value(s) ['no', 'yes'] are not among the reference's binary classes [0, 1]",
    ),
    "predictions as text": (
        lambda f: f.assign(prediction=f["prediction"].astype(str)),
        "prediction",
        "value(s) ['0', '1'] are not among the reference's binary classes [0, 1]",
    ),
    "scores above 1": (
        lambda f: f.assign(score=f["score"] * 3),
        "score",
        "outside [0, 1]",
    ),
    "scores all infinite": (
        lambda f: f.assign(score=np.inf),
        "score",
        "no finite value: 2000 infinite, 0 missing",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_schema_names_the_problem_and_the_checks_that_read_the_column_stop(
    tmp_path: Path, case: str
) -> None:
    mutate, role, problem = CASES[case]
    found = run(tmp_path, mutate(credit(2000, 1)))
    [named] = [r for r in found[("schema.columns", role)] if "out_of_domain" in r["metrics"]]
    assert named["severity"] == "high" and named["details"]["role"] == role
    assert (
        named["details"]["problem"].startswith(f"{role} {role!r}: ")
        and problem in named["details"]["problem"]
    )
    assert found[("schema.columns", "*")][0]["metrics"]["out_of_domain"] == 1.0
    for check in ("performance.overall", "performance.calibration"):
        [stopped] = found[(check, "*")]
        assert stopped["status"] == "error" and stopped["reason"] == named["details"]["problem"]
    assert not any("one class only" in (r["reason"] or "") for rs in found.values() for r in rs)
    assert (("drift.label", "*") in found) == (role == "label")  # label drift reads the label only
    [prediction_drift] = found[("drift.prediction", "score")]
    assert prediction_drift["status"] == "ok"  # the outputs' distribution is itself graded


def test_a_clean_batch_has_no_domain_problem(tmp_path: Path) -> None:
    found = run(tmp_path, credit(2000, 1))
    assert found[("schema.columns", "*")][0]["metrics"]["out_of_domain"] == 0.0
    assert {r["status"] for (check, _), rs in found.items() if check in CHECKS for r in rs} == {"ok"}


COLUMNS = Columns(label="label", prediction="prediction", score="score", numeric=("x",), task="binary")


def domain_results(reference: pd.DataFrame, current: pd.DataFrame, columns: Columns = COLUMNS) -> dict:
    found = SchemaCheck().run(reference, current, columns)
    return {r.target: r.details["problem"] for r in found if "out_of_domain" in r.metrics and r.target != "*"}


def test_infinite_scores_among_finite_ones_and_margins_are_in_the_domain() -> None:
    reference = credit(500, 0)
    partly_infinite = credit(500, 1).assign(score=lambda f: f["score"].where(f.index >= 50, np.inf))
    assert domain_results(reference, partly_infinite) == {}
    margins = reference.assign(score=lambda f: 6 * f["score"] - 3)  # a decision function, not a probability
    assert domain_results(margins, credit(500, 1).assign(score=lambda f: 9 * f["score"])) == {}


def test_a_new_class_of_a_multiclass_label_is_drift_not_a_wrong_domain() -> None:
    rng = np.random.default_rng(0)
    reference = pd.DataFrame(
        {"label": rng.choice(["a", "b", "c"], 300), "prediction": rng.choice(["a", "b"], 300)}
    )
    columns = Columns(label="label", prediction="prediction", task="multiclass")
    with_new_class = reference.assign(label=lambda f: f["label"].where(f.index >= 30, "d"))
    assert domain_results(reference, with_new_class, columns) == {}
    renamed = reference.assign(label=lambda f: f["label"].str.upper())
    assert domain_results(reference, renamed, columns) == {
        "label": "label 'label': 300 of 300 value(s) ['A', 'B', 'C'] are not among the reference's "
        "multiclass classes ['a', 'b', 'c']"
    }


def test_a_regression_label_must_stay_numeric_and_its_score_is_no_probability() -> None:
    reference = pd.DataFrame({"label": np.linspace(0, 1, 50), "score": np.linspace(0.01, 0.99, 50)})
    columns = Columns(label="label", score="score", task="regression")
    as_text = reference.assign(label=lambda f: f["label"].astype(str))
    assert domain_results(reference, as_text, columns) == {
        "label": "label 'label': values are not numbers (dtype str) for regression"
    }
    assert domain_results(reference, reference.assign(score=lambda f: f["score"] + 0.5), columns) == {}


def test_output_problems_stop_the_checks_that_score_outputs_but_not_label_drift() -> None:
    problems = {"score": "score 'score': no finite value: 10 infinite, 0 missing"}
    assert stopping_problem(registry.create("performance.overall"), problems) == problems["score"]
    assert stopping_problem(registry.create("performance.estimated"), problems) == problems["score"]
    assert stopping_problem(registry.create("drift.label"), problems) is None
    assert stopping_problem(registry.create("drift.numeric"), problems) is None
    assert stopping_problem(registry.create("drift.label"), {"label": "bad"}) == "bad"
