"""The demo's data: a model trained on ACS 2015 and six production batches whose population ages.

The data are real (ACS Massachusetts, `acs_employment/` beside this module). A gradient-boosting
model is trained on half of survey year 2015; the other half is the reference snapshot. Production
batches are drawn from 2016–2018: the first two are plain samples (the checks pass), the later ones
over-sample older respondents more and more, the kind of population shift a change of acquisition
channel causes, so drift and performance checks cross their thresholds. Used by `make demo`,
`driftline init`, the tests and the Airflow example DAG alike.

The model's scores ship as data (`acs_employment/model_scores.parquet`: row id and score for every
row it was not trained on), so building the demo takes a second and loads no model; `python -m
driftline.data.demo` trains the model again and rewrites that file from a checkout.
"""

from __future__ import annotations

import io
import os
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from driftline.tasks.tools.files import write_private_file

DEMO_DATA = resources.files("driftline.data") / "acs_employment"
DATA_FILE = DEMO_DATA / "acs_employment_ma.parquet"
SPEC_TEMPLATE = DEMO_DATA / "monitor.yaml"
SCORES_FILE = DEMO_DATA / "model_scores.parquet"

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


def train_model(train: pd.DataFrame, features: list[str]) -> Any:
    """Gradient boosting on the census features (categories handled natively)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=150, random_state=0)
    return model.fit(train[features], train[LABEL])


def with_score(frame: pd.DataFrame, score: np.ndarray) -> pd.DataFrame:
    """The frame with `score` (probability of employment) and the `prediction` it makes at 0.5."""
    return frame.assign(score=score, prediction=(score >= 0.5).astype("int64"))


def scored(model: Any, frame: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    """The frame scored by `model`."""
    return with_score(frame, model.predict_proba(frame[features])[:, 1])


def feature_columns(data: pd.DataFrame) -> list[str]:
    """The model's inputs: every column but the id, the label and the survey year."""
    return [c for c in data.columns if c not in ("id", LABEL, "year")]


def split_2015(data: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Survey year 2015 shuffled (fixed seed) and halved: the model's training rows, the reference."""
    base = data[data["year"] == 2015].sample(frac=1.0, random_state=0)
    return base.iloc[: len(base) // 2], base.iloc[len(base) // 2 :]


def model_scores(data: pd.DataFrame) -> pd.DataFrame:
    """The demo model's score (id, score) of every row it was not trained on: what `SCORES_FILE` holds."""
    features = feature_columns(data)
    train, _ = split_2015(data)
    rest = data.drop(index=train.index)
    score = train_model(train, features).predict_proba(rest[features])[:, 1]
    return pd.DataFrame({"id": rest["id"].to_numpy(), "score": score})


def shipped_scores() -> pd.Series:
    """The shipped scores by row id (a Parquet file of two numeric columns: nothing in it can run)."""
    with resources.as_file(SCORES_FILE) as path:
        scores = pd.read_parquet(path)
    return pd.Series(scores["score"].to_numpy(), index=scores["id"].to_numpy())


def with_shipped_score(frame: pd.DataFrame, scores: pd.Series) -> pd.DataFrame:
    """The frame with the shipped score of each of its rows (by id)."""
    score = scores.reindex(frame["id"].to_numpy()).to_numpy()
    if np.isnan(score).any():
        raise ValueError(f"{SCORES_FILE.name}: no score for {int(np.isnan(score).sum())} demo row(s)")
    return with_score(frame, score)


def aged_sample(frame: pd.DataFrame, strength: float, rng: np.random.Generator) -> pd.DataFrame:
    """`BATCH_ROWS` rows drawn without replacement, tilted toward older respondents by `strength`."""
    weights = np.exp(strength * (frame["AGEP"].to_numpy() - 45.0) / 15.0)
    rows = rng.choice(len(frame), size=BATCH_ROWS, replace=False, p=weights / weights.sum())
    return frame.iloc[np.sort(rows)].reset_index(drop=True)


def read_census() -> pd.DataFrame:
    """The shipped census extract (80,000 rows, 2015–2018)."""
    with resources.as_file(DATA_FILE) as data_file:
        return pd.read_parquet(data_file)


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """`frame` as a Parquet file at `path`, owner-only, replacing (never writing through) a link."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    write_private_file(path, buffer.getvalue())


def demo_files(output: Path) -> list[Path]:
    """Every file `build_demo_data` writes under `output`: the spec, the reference and the batches."""
    batches = [output / "data" / "batches" / f"{batch_id}.parquet" for batch_id, _, _ in BATCHES]
    return [output / "monitor.yaml", output / "data" / "reference.parquet", *batches]


class DemoFolderError(ValueError):
    """A folder the demo does not write into: its data folder holds someone else's files."""


def check_demo_folder(output: Path) -> None:
    """Refuse `output` when its `data/` holds files the demo does not write (a user's batches, which
    `driftline backfill` would then run beside the demo's); links are listed, never followed."""
    own = set(demo_files(output))
    foreign = []
    for root, folders, files in os.walk(output / "data"):
        entries = [Path(root, name) for name in files]
        entries += [Path(root, name) for name in folders if Path(root, name).is_symlink()]
        foreign += [path for path in entries if path not in own]
    if foreign:
        names = ", ".join(str(path) for path in sorted(foreign)[:3]) + (", ..." if len(foreign) > 3 else "")
        raise DemoFolderError(
            f"{output / 'data'}: holds {len(foreign)} file(s) the demo does not write ({names}); its "
            "batches would land beside them, where `driftline backfill` runs every batch"
        )


def build_demo_data(output: Path) -> Path:
    """Write the reference, the batches and the monitor spec under `output` (files 0600, folders 0700,
    a link in the way replaced, not followed); returns the spec path. A `data/` folder holding other
    files is refused (`DemoFolderError`) before anything is written."""
    check_demo_folder(output)
    data = read_census()
    scores = shipped_scores()
    _, reference = split_2015(data)
    _write_parquet(
        with_shipped_score(reference.drop(columns="year"), scores), output / "data" / "reference.parquet"
    )
    rng = np.random.default_rng(7)
    batches = output / "data" / "batches"
    for batch_id, year, strength in BATCHES:
        sample = aged_sample(data[data["year"] == year].drop(columns="year"), strength, rng)
        _write_parquet(with_shipped_score(sample, scores), batches / f"{batch_id}.parquet")
    spec_path = demo_files(output)[0]
    write_private_file(spec_path, SPEC_TEMPLATE.read_bytes())
    return spec_path


def main() -> None:
    """Train the demo model again and rewrite the shipped scores (run from a checkout)."""
    target = Path(__file__).parent / "acs_employment" / SCORES_FILE.name
    scores = model_scores(read_census()).sort_values("id")
    scores.to_parquet(target, index=False, compression="zstd", compression_level=19)
    print(f"wrote {target}: {len(scores)} scores")


if __name__ == "__main__":
    main()
