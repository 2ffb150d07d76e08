"""The committed VADER extract, the model built from it, and the text monitor spec."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score

import driftline.checks.text  # noqa: F401  (registration)
from driftline.checks.columns import infer_columns
from driftline.data.text import sentiment_model as sm
from driftline.tasks.config.spec import load_spec


@pytest.fixture(scope="module")
def sentences():
    return sm.load_sentences()


def test_extract_holds_every_rated_sentence(sentences) -> None:
    counts = sentences["domain"].value_counts().to_dict()
    assert counts == {"movie_reviews": 10605, "nyt_editorials": 5190, "tweets": 4200, "product_reviews": 3708}
    assert sentences["id"].is_unique and sentences["text"].str.len().min() > 0
    assert sentences["rating"].between(-4, 4).all()
    assert (sentences["label"] == (sentences["rating"] > 0)).all()


def test_model_trained_on_movies_loses_accuracy_on_other_domains(sentences) -> None:
    model = sm.train_model()
    parts = sm.split_training_domain(sentences)
    held_out = accuracy_score(parts["held_out"]["label"], model.predict(parts["held_out"]["text"].tolist()))
    assert 0.72 < held_out < 0.85
    for domain in sm.OTHER_DOMAINS:
        rows = sentences[sentences["domain"] == domain]
        assert accuracy_score(rows["label"], model.predict(rows["text"].tolist())) < held_out - 0.08
    assert sm.train_model() is model  # built once per process


def test_split_is_disjoint_and_seeded(sentences) -> None:
    parts = sm.split_training_domain(sentences)
    ids = [set(p["id"]) for p in parts.values()]
    assert sum(len(i) for i in ids) == 10605 and len(set.union(*ids)) == 10605
    again = sm.split_training_domain(sentences)
    assert all(np.array_equal(parts[k]["id"], again[k]["id"]) for k in parts)


def test_monitor_spec_loads_with_the_demo_data(tmp_path: Path) -> None:
    spec_path = sm.write_demo_data(tmp_path)
    spec = load_spec(spec_path)
    assert spec.model == "driftline.data.text.sentiment_model:train_model"
    reference = pd.read_parquet(tmp_path / "data" / "reference.parquet")
    columns = infer_columns(reference, spec.columns)
    assert columns.text == ("text",) and columns.features == () and columns.label == "label"
    batches = sorted(p.stem for p in (tmp_path / "data" / "batches").glob("*.parquet"))
    assert batches == list(sm.BATCH_DOMAINS)
