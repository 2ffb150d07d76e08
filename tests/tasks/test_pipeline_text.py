"""The text monitor end to end: the spec's model reaches the checks that call it, in worker processes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from driftline import load_spec, run_monitor
from driftline.data.text.sentiment_model import train_model, write_demo_data


@pytest.fixture(scope="module")
def text_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The text demo's data, with a spec of a few checks (model-calling ones included)."""
    folder = tmp_path_factory.mktemp("text")
    path = write_demo_data(folder)
    spec = yaml.safe_load(path.read_text())
    spec["checks"] = [
        "drift.unigrams",
        {"check": "attack.char_swap", "params": {"sample_size": 200, "seed": 3}},
        "transform.lower",
    ]
    spec["store_url"] = f"sqlite:///{folder / 'h.db'}"
    spec["alerts"] = {"min_severity": "high"}
    path.write_text(yaml.safe_dump(spec))
    return path


def test_model_calling_checks_run_in_the_monitor(text_spec: Path) -> None:
    summary = run_monitor(load_spec(text_spec), "2024-05-02")
    by_check = {r["check"]: r for r in summary.to_dict()["results"]}
    assert {c: r["status"] for c, r in by_check.items()} == {
        "schema.columns": "ok",
        "data.summary": "ok",
        "drift.unigrams": "ok",
        "attack.char_swap": "ok",
        "transform.lower": "ok",
        "run.drifted_features": "ok",
    }
    assert by_check["run.drifted_features"]["metrics"]["features"] == 1  # the one text column
    # The vectoriser lower-cases: lower-casing the text cannot change a single prediction.
    assert by_check["transform.lower"]["metrics"]["flip_rate"] == 0.0
    swap = by_check["attack.char_swap"]
    assert 0 < swap["metrics"]["flip_rate"] < 1


def test_reported_flips_are_the_models_own(text_spec: Path) -> None:
    """The predictions the attack reports for its examples are what the model predicts on those texts."""
    summary = run_monitor(load_spec(text_spec), "2024-05-03")
    (swap,) = [r for r in summary.to_dict()["results"] if r["check"] == "attack.char_swap"]
    examples = swap["details"]["examples"]
    assert examples and any(e["prediction"] != e["perturbed_prediction"] for e in examples)
    model = train_model()
    before = model.predict([e["original"] for e in examples])
    after = model.predict([e["perturbed"] for e in examples])
    assert np.array_equal(before, [e["prediction"] for e in examples])
    assert np.array_equal(after, [e["perturbed_prediction"] for e in examples])
