"""The demo model ships as its scores: a Parquet file of row ids and probabilities, never a pickle,
equal to what the gradient-boosting model trained on half of 2015 scores today."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from driftline.data.demo import DATA_FILE, SCORES_FILE, shipped_scores, with_shipped_score


def test_the_scores_file_is_parquet_of_two_numeric_columns() -> None:
    """Plain data: Parquet magic at both ends, an int64 id and a float64 score, no Python objects."""
    raw = SCORES_FILE.read_bytes()
    assert raw[:4] == raw[-4:] == b"PAR1"
    assert b"pickle" not in raw.lower()
    with resources.as_file(SCORES_FILE) as path:
        schema = pq.read_schema(path)
    assert [(f.name, str(f.type)) for f in schema] == [("id", "int64"), ("score", "double")]


def test_the_shipped_scores_are_the_models_trained_here() -> None:
    """Trained again in the test on the same half of 2015 (shuffled with seed 0), the model scores every
    other row as the file says, and none of its training rows is in the file."""
    with resources.as_file(DATA_FILE) as path:
        data = pd.read_parquet(path)
    base = data[data["year"] == 2015].sample(frac=1.0, random_state=0)
    train = base.iloc[: len(base) // 2]
    features = [c for c in data.columns if c not in ("id", "employed", "year")]
    model = HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=150, random_state=0)
    model.fit(train[features], train["employed"])
    rest = data.drop(index=train.index)

    scores = shipped_scores()
    assert len(scores) == len(rest) == 70_000 and scores.index.is_unique
    assert not scores.index.isin(train["id"]).any()
    expected = model.predict_proba(rest[features])[:, 1]
    np.testing.assert_allclose(scores.reindex(rest["id"]).to_numpy(), expected, rtol=0, atol=1e-9)


def test_a_row_without_a_shipped_score_is_named() -> None:
    """A frame whose ids are not all in the file is refused, naming the file and the rows without one."""
    frame = pd.DataFrame({"id": [-1, -2], "AGEP": [30, 40]})
    with pytest.raises(ValueError, match=r"model_scores.parquet: no score for 2 demo row\(s\)"):
        with_shipped_score(frame, shipped_scores())
