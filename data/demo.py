"""The demo's data: a model trained on ACS 2015 and six production batches whose population ages.

The data are real (ACS Massachusetts, `acs_employment/` beside this module). A gradient-boosting
model is trained on half of survey year 2015; the other half is the reference snapshot. Production
batches are drawn from 2016–2018: the first two are plain samples (the checks pass), the later ones
over-sample older respondents more and more, the kind of population shift a change of acquisition
channel causes, so drift and performance checks cross their thresholds. Used by `make demo`, the
tests and the Airflow example DAG alike.
"""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from driftline.tasks.files import write_private_file

DEMO_DATA = resources.files("driftline.data") / "acs_employment"
DATA_FILE = DEMO_DATA / "acs_employment_ma.parquet"
SPEC_TEMPLATE = DEMO_DATA / "monitor.yaml"

LABEL = "employed"
# (batch id, survey year, age-shift strength): sampling weight ∝ exp(strength · (age − 45) / 15).
BATCHES = [
    ("2016-06", 2016, 0.0),
    ("2016-12", 2016, 0.0),
    ("2017-06", 2017, 0.25),
    ("2017-12", 2017, 0.5),
    ("2018-06", 2018, 1.0),
    ("2018-12", 2018, 1.5),
]
BATCH_ROWS = 6000


def train_model(train: pd.DataFrame, features: list[str]):
    """Gradient boosting on the census features (categories handled natively)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=150, random_state=0)
    return model.fit(train[features], train[LABEL])


def scored(model, frame: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    """The frame with the model's `score` (probability of employment) and `prediction`."""
    score = model.predict_proba(frame[features])[:, 1]
    return frame.assign(score=score, prediction=(score >= 0.5).astype("int64"))


def aged_sample(frame: pd.DataFrame, strength: float, rng: np.random.Generator) -> pd.DataFrame:
    """`BATCH_ROWS` rows drawn without replacement, tilted toward older respondents by `strength`."""
    weights = np.exp(strength * (frame["AGEP"].to_numpy() - 45.0) / 15.0)
    rows = rng.choice(len(frame), size=BATCH_ROWS, replace=False, p=weights / weights.sum())
    return frame.iloc[np.sort(rows)].reset_index(drop=True)


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """`frame` as a Parquet file at `path`, owner-only, replacing (never writing through) a link."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    write_private_file(path, buffer.getvalue())


def build_demo_data(output: Path) -> Path:
    """Write the reference, the batches and the monitor spec under `output` (files 0600, folders 0700,
    a link in the way replaced, not followed); returns the spec path."""
    with resources.as_file(DATA_FILE) as data_file:
        data = pd.read_parquet(data_file)
    features = [c for c in data.columns if c not in ("id", LABEL, "year")]
    base = data[data["year"] == 2015].sample(frac=1.0, random_state=0)
    train, reference = base.iloc[: len(base) // 2], base.iloc[len(base) // 2 :]
    model = train_model(train, features)

    _write_parquet(
        scored(model, reference.drop(columns="year"), features), output / "data" / "reference.parquet"
    )
    rng = np.random.default_rng(7)
    for batch_id, year, strength in BATCHES:
        sample = aged_sample(data[data["year"] == year].drop(columns="year"), strength, rng)
        _write_parquet(scored(model, sample, features), output / "data" / "batches" / f"{batch_id}.parquet")
    spec_path = output / "monitor.yaml"
    write_private_file(spec_path, SPEC_TEMPLATE.read_bytes())
    return spec_path
