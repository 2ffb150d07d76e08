"""The batches of the alert-quality benchmark: real data sets, clean batches and real shifts.

Three data sets, each split into a training part (for its model), a reference scored by the model and
a held-out clean pool that neither saw:

- census: ACS employment of Massachusetts, survey year 2015 only, the demo's classifier
  (`data/demo.py`), 6,000 rows to train, 6,000 for the reference, 8,000 in the pool;
- adult: UCI Adult, a gradient-boosting model trained on 12,000 rows of the `train` split, the
  reference (10,000 rows) and the pool (the other 26,842) drawn from the rows left over;
- text: the VADER movie-review sentences of the text demo (`data/text/sentiment_model.py`): the
  reference is the training rows scored out of fold, the pool the held-out movie reviews.

A clean batch is a seeded random draw from the pool, so its population is the reference's. A shifted
batch is one real change applied at a given strength (see `Shift`), re-scored by the model whenever
the model's inputs change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from driftline.data import demo
from driftline.data.text import sentiment_model

Scorer = Callable[[pd.DataFrame], pd.DataFrame]
Maker = Callable[[pd.DataFrame, float, int, np.random.Generator], pd.DataFrame]

TABULAR_CHECKS = (
    "drift.numeric",
    "drift.categorical",
    "drift.label",
    "drift.prediction",
    "abnormal.out_of_range",
    "abnormal.unseen_categorical",
    "abnormal.nulls",
    "performance.overall",
    "performance.calibration",
    "performance.estimated",
    "subset.auc",
    "subset.accuracy",
    "attribution.auc",
    "fairness.statistical_parity",
    "fairness.equalized_odds",
)
TEXT_CHECKS = (
    "drift.unigrams",
    "drift.bigrams",
    "text.unseen_unigram",
    "text.empty_string",
    "drift.label",
    "drift.prediction",
    "performance.overall",
    "performance.calibration",
    "performance.estimated",
)
MAX_BATCH_ROWS = 50_000
MIN_BATCH_ROWS = 100


@dataclass(frozen=True)
class Shift:
    """A real change at several strengths: `make(pool, strength, rows, rng)` returns a scored batch."""

    name: str
    kind: str
    strengths: tuple[float, ...]
    make: Maker
    unit: str = ""


@dataclass
class DataSet:
    """One data set of the benchmark: reference, clean pool, column roles, checks and shifts."""

    name: str
    reference: pd.DataFrame
    pool: pd.DataFrame
    roles: dict[str, Any]
    checks: tuple[str, ...]
    shifts: list[Shift] = field(default_factory=list)
    scorer: Scorer | None = None  # re-scores a batch whose model inputs changed


# --- batches -------------------------------------------------------------------------------------


def clean_sizes(pool_rows: int, batches: int) -> list[int]:
    """`batches` sizes, log-spaced from 100 rows to 50,000 (capped by the pool, which a batch never
    exhausts), on a grid of 8 to 20 sizes (about four batches a size) so that a peer that must be
    fitted per batch size is fitted a few times only."""
    top = min(MAX_BATCH_ROWS, int(0.9 * pool_rows))
    grid = np.unique(np.geomspace(MIN_BATCH_ROWS, top, min(20, max(8, batches // 4))).round().astype(int))
    return sorted(int(grid[i % len(grid)]) for i in range(batches))


def draw(pool: pd.DataFrame, rows: int, rng: np.random.Generator) -> pd.DataFrame:
    """`rows` rows of the pool drawn at random without replacement."""
    picked = rng.choice(len(pool), size=min(rows, len(pool)), replace=False)
    return pool.iloc[np.sort(picked)].reset_index(drop=True)


def clean_batches(data: DataSet, batches: int, seed: int) -> list[pd.DataFrame]:
    """Seeded clean batches of log-spaced sizes drawn from the data set's pool."""
    rng = np.random.default_rng(seed)
    return [draw(data.pool, rows, rng) for rows in clean_sizes(len(data.pool), batches)]


# --- shifts --------------------------------------------------------------------------------------


def older(column: str) -> Shift:
    """Covariate shift to an older sub-population: rows drawn with weight exp(s · (age − 45) / 15), the
    tilt of the demo's `aged_sample`, at strengths s."""

    def make(pool: pd.DataFrame, strength: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        weights = np.exp(strength * (pool[column].to_numpy(dtype=float) - 45.0) / 15.0)
        picked = rng.choice(len(pool), size=rows, replace=False, p=weights / weights.sum())
        return pool.iloc[np.sort(picked)].reset_index(drop=True)

    return Shift("older", "covariate", (0.5, 1.0, 1.5), make, "tilt")


def in_months(column: str, scorer: Scorer) -> Shift:
    """A unit change: `column` reported in months instead of years for a share of the rows."""

    def make(pool: pd.DataFrame, share: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        batch = draw(pool, rows, rng)
        hit = rng.random(len(batch)) < share
        batch[column] = np.where(hit, batch[column] * 12, batch[column]).astype(batch[column].dtype)
        return scorer(batch)

    return Shift(f"{column} in months", "unit change", (0.1, 0.5, 1.0), make, "share")


def gone_null(column: str, scorer: Scorer) -> Shift:
    """A column going null: `column` missing on a share of the rows (all of them at 1.0)."""

    def make(pool: pd.DataFrame, share: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        batch = draw(pool, rows, rng)
        batch.loc[rng.random(len(batch)) < share, column] = None
        return scorer(batch)

    return Shift(f"{column} null", "missing values", (0.05, 0.25, 1.0), make, "share")


def new_category(column: str, value: str, scorer: Scorer) -> Shift:
    """A category the reference never had: `value` replaces `column` on a share of the rows."""

    def make(pool: pd.DataFrame, share: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        batch = draw(pool, rows, rng)
        values = batch[column].astype("category").cat.add_categories([value])
        values[rng.random(len(batch)) < share] = value
        batch[column] = values
        return scorer(batch)

    return Shift(f"new {column}", "new category", (0.02, 0.1, 0.3), make, "share")


def label_prior(label: str) -> Shift:
    """Label prior shift: rows resampled by class so that the positive rate moves up by `delta`."""

    def make(pool: pd.DataFrame, delta: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        positive = pool[label].to_numpy() == 1
        target = min(positive.mean() + delta, 0.95)
        take = round(target * rows)
        pos = rng.choice(np.flatnonzero(positive), size=take, replace=take > positive.sum())
        neg = rng.choice(np.flatnonzero(~positive), size=rows - take, replace=False)
        return pool.iloc[np.sort(np.concatenate([pos, neg]))].reset_index(drop=True)

    return Shift("label prior", "label prior shift", (0.05, 0.15, 0.3), make, "+rate")


def label_noise(label: str) -> Shift:
    """Concept shift: a share of the labels flipped while the model's scores stay as they were."""

    def make(pool: pd.DataFrame, share: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        batch = draw(pool, rows, rng)
        flip = rng.random(len(batch)) < share
        batch[label] = np.where(flip, 1 - batch[label], batch[label]).astype(batch[label].dtype)
        return batch

    return Shift("labels flipped", "concept shift", (0.05, 0.15, 0.3), make, "share")


def other_domain(domain: str, sentences: pd.DataFrame, scorer: Scorer) -> Shift:
    """Text domain shift: a share of the batch's sentences taken from another domain."""
    source = sentences[sentences["domain"] == domain].reset_index(drop=True)

    def make(pool: pd.DataFrame, share: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        foreign = round(share * rows)
        mixed = pd.concat([draw(pool, rows - foreign, rng), scorer(draw(source, foreign, rng))])
        return mixed.reset_index(drop=True)

    return Shift(domain.replace("_", " "), "domain shift", (0.25, 0.5, 1.0), make, "share")


# --- data sets -----------------------------------------------------------------------------------


def census(seed: int = 0) -> DataSet:
    """ACS 2015: the demo's classifier trained on 6,000 rows, reference 6,000, clean pool 8,000."""
    with resources.as_file(demo.DATA_FILE) as path:
        data = pd.read_parquet(path)
    base = data[data["year"] == 2015].drop(columns="year").sample(frac=1.0, random_state=seed)
    features = [c for c in base.columns if c not in ("id", demo.LABEL)]
    model = demo.train_model(base.iloc[:6000], features)

    def scorer(frame: pd.DataFrame) -> pd.DataFrame:
        return demo.scored(model, frame, features)

    roles = monitor_roles(demo.SPEC_TEMPLATE)
    shifts = [
        older("AGEP"),
        in_months("AGEP", scorer),
        gone_null("SCHL", scorer),
        new_category("RELP", "99", scorer),
        label_prior(demo.LABEL),
        label_noise(demo.LABEL),
    ]
    reference, pool = scorer(base.iloc[6000:12000]), scorer(base.iloc[12000:])
    return tabular("census", reference, pool, roles, shifts, scorer)


def adult(seed: int = 0) -> DataSet:
    """UCI Adult: gradient boosting trained on 12,000 `train` rows; reference 10,000 and the clean
    pool from the remaining rows of both splits."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    with resources.as_file(resources.files("driftline.data") / "adult" / "adult.parquet") as path:
        data = pd.read_parquet(path)
    data["income"] = (data["income"] == ">50K").astype("int64")
    shuffled = data.sample(frac=1.0, random_state=seed)
    in_train = shuffled["split"] == "train"
    train = shuffled[in_train].iloc[:12000]
    rest = shuffled.drop(index=train.index).drop(columns="split")
    features = [c for c in rest.columns if c != "income"]
    model = HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=150, random_state=0)
    model.fit(train[features], train["income"])

    def scorer(frame: pd.DataFrame) -> pd.DataFrame:
        score = model.predict_proba(frame[features])[:, 1]
        return frame.assign(score=score, prediction=(score >= 0.5).astype("int64"))

    roles = {"label": "income", "prediction": "prediction", "score": "score", "protected": ["sex", "race"]}
    shifts = [
        older("age"),
        in_months("age", scorer),
        gone_null("education", scorer),
        new_category("workclass", "Gig-economy", scorer),
        label_prior("income"),
        label_noise("income"),
    ]
    reference, pool = scorer(rest.iloc[:10000]), scorer(rest.iloc[10000:])
    return tabular("adult", reference, pool, roles, shifts, scorer)


def text(seed: int = sentiment_model.SEED) -> DataSet:
    """The text demo: reference = training sentences scored out of fold, pool = held-out movie reviews."""
    sentences = sentiment_model.load_sentences()
    parts = sentiment_model.split_training_domain(sentences, seed)
    model = sentiment_model.train_model()

    def scorer(frame: pd.DataFrame) -> pd.DataFrame:
        return sentiment_model.scored(model, frame)

    # the extract is ordered by label within a domain; shuffled, every stretch of rows is a fair sample
    scored_train = sentiment_model.cross_validated(parts["train"].reset_index(drop=True))
    reference = scored_train.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    roles = monitor_roles(resources.files("driftline.data") / "text" / "monitor.yaml")
    shifts = [other_domain(d, sentences, scorer) for d in ("tweets", "nyt_editorials", "product_reviews")]
    shifts += [label_prior("label"), label_noise("label")]
    pool = scorer(parts["held_out"].reset_index(drop=True))
    return DataSet("text", reference, pool, roles, TEXT_CHECKS, shifts, scorer)


def tabular(
    name: str,
    reference: pd.DataFrame,
    pool: pd.DataFrame,
    roles: dict[str, Any],
    shifts: list[Shift],
    scorer: Scorer,
) -> DataSet:
    """A tabular data set with the common checks, its frames indexed from zero."""
    return DataSet(
        name,
        reference.reset_index(drop=True),
        pool.reset_index(drop=True),
        roles,
        TABULAR_CHECKS,
        shifts,
        scorer,
    )


def monitor_roles(spec: Any) -> dict[str, Any]:
    """The `columns:` section of a shipped monitor spec (the roles a run of it uses)."""
    import yaml

    return dict(yaml.safe_load(spec.read_text())["columns"])


DATA_SETS: dict[str, Callable[[], DataSet]] = {"census": census, "adult": adult, "text": text}
