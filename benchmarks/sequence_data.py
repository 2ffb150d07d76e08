"""The batches of the over-time benchmark: clean sequences, gradual ramps, subtle persistent shifts,
an id-like column of many levels and the census years after the reference's.

A ramp is a change whose strength grows linearly with the batch number t, from zero at batch 1: a
numeric column's unit (values multiplied by 1 + rate·(t − 1)), a sub-population's share (one
category oversampled), the label rate (rows resampled by class) and the concept (labels flipped).
Every batch is drawn afresh from the data set's clean pool and re-scored when the model's inputs
changed, as in `benchmarks/alert_data.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from benchmarks.alert_data import DataSet, draw
from driftline.data import demo

# makes a batch of `rows` rows of the pool at strength s
Maker = Callable[[pd.DataFrame, float, int, np.random.Generator], pd.DataFrame]
CLEAN_SIZES = np.unique(np.geomspace(300, 3000, 10).round().astype(int))
ID_COLUMN = "account"


@dataclass(frozen=True)
class Ramp:
    """A change of strength `rate`·(t − 1) at batch t (`unit` says how to read the rate)."""

    name: str
    rate: float
    unit: str
    make: Maker


@dataclass(frozen=True)
class Persistent:
    """A change of constant `strength` in every batch of `rows` rows."""

    name: str
    strength: float
    rows: int
    make: Maker


def clean_sequence(data: DataSet, batches: int, seed: int) -> list[pd.DataFrame]:
    """`batches` clean batches, each a seeded draw of 300–3,000 rows (ten log-spaced sizes) from the pool."""
    rng = np.random.default_rng(seed)
    return [draw(data.pool, int(rng.choice(CLEAN_SIZES)), rng) for _ in range(batches)]


def changed_sequence(
    data: DataSet, make: Maker, strengths: list[float], rows: int, seed: int
) -> list[pd.DataFrame]:
    """One batch of `rows` rows per strength, in order."""
    rng = np.random.default_rng(seed)
    return [make(data.pool, s, rows, rng) for s in strengths]


# --- ramps ---------------------------------------------------------------------------------------


def rescaled(column: str, data: DataSet) -> Maker:
    """A unit drifting: `column` multiplied by 1 + s on every row (rounded to the column's integer
    type when it has one), then re-scored."""

    def make(pool: pd.DataFrame, s: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        batch = draw(pool, rows, rng)
        values = batch[column].to_numpy(dtype=float) * (1.0 + s)
        kind = batch[column].dtype
        batch[column] = values.round().astype(kind) if np.issubdtype(kind, np.integer) else values
        return rescore(data, batch)

    return make


def oversampled(column: str, value: str) -> Maker:
    """A sub-population growing: rows where `column` is `value` make up their pool share plus s."""

    def make(pool: pd.DataFrame, s: float, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        inside = (pool[column].astype(str) == value).to_numpy()
        take = round(min(inside.mean() + s, 1.0) * rows)
        hit = rng.choice(np.flatnonzero(inside), size=take, replace=take > inside.sum())
        rest = rng.choice(np.flatnonzero(~inside), size=rows - take, replace=False)
        return pool.iloc[np.sort(np.concatenate([hit, rest]))].reset_index(drop=True)

    return make


def shift_of(data: DataSet, kind: str) -> Maker:
    """The maker of the data set's shift of `kind` (`benchmarks/alert_data.py`)."""
    return next(s.make for s in data.shifts if s.kind == kind)


def ramps(data: DataSet) -> list[Ramp]:
    """The four ramps on a data set: unit, sub-population share, label rate and concept."""
    numeric, category, value = RAMP_COLUMNS[data.name]
    return [
        Ramp(f"{numeric} unit ×(1 + 0.02·t)", 0.02, "factor", rescaled(numeric, data)),
        Ramp(f"{category}={value} share +1 pt/batch", 0.01, "share", oversampled(category, value)),
        Ramp("label rate +0.5 pt/batch", 0.005, "share", shift_of(data, "label prior shift")),
        Ramp("labels flipped +0.5 pt/batch", 0.005, "share", shift_of(data, "concept shift")),
    ]


# (numeric column, categorical column, its oversampled value) per data set
RAMP_COLUMNS = {"census": ("AGEP", "SCHL", "21"), "adult": ("hours-per-week", "workclass", "Self-emp-inc")}


def persistent(data: DataSet) -> list[Persistent]:
    """The subtle persistent shifts: label prior +5 points, 5% of labels flipped, a new category in
    2% of rows (1,000-row batches) and a column null in 5% of rows (300-row batches)."""
    named = {s.kind: s.name for s in data.shifts}
    return [
        Persistent("label prior +5 pt", 0.05, 1000, shift_of(data, "label prior shift")),
        Persistent("5% labels flipped", 0.05, 1000, shift_of(data, "concept shift")),
        Persistent(f"{named['new category']} in 2% of rows", 0.02, 1000, shift_of(data, "new category")),
        Persistent(f"{named['missing values']} in 5% of rows", 0.05, 300, shift_of(data, "missing values")),
    ]


def rescore(data: DataSet, batch: pd.DataFrame) -> pd.DataFrame:
    """The batch scored again by the data set's model (unchanged when it has none)."""
    return data.scorer(batch) if data.scorer is not None else batch


# --- an id-like column ---------------------------------------------------------------------------


def zipf_ids(levels: int, rows: int, rng: np.random.Generator) -> pd.Series:
    """`rows` draws from `levels` ids with Zipf frequencies (p_k ∝ 1/k), as strings."""
    weights = 1.0 / np.arange(1, levels + 1)
    picked = rng.choice(levels, size=rows, p=weights / weights.sum())
    return pd.Series(np.char.add("A", picked.astype(str)), dtype="str")


def with_ids(frame: pd.DataFrame, levels: int, rng: np.random.Generator) -> pd.DataFrame:
    """The frame with an id-like column of `levels` Zipf-distributed levels drawn for each row."""
    return frame.assign(**{ID_COLUMN: zipf_ids(levels, len(frame), rng).to_numpy()})


def id_batch(data: DataSet, levels: int, rows: int, rng: np.random.Generator) -> pd.DataFrame:
    """A clean batch of `rows` rows with fresh ids: drawn from the pool without replacement, or with
    replacement when the pool is smaller than the batch."""
    if rows <= len(data.pool):
        frame = draw(data.pool, rows, rng)
    else:
        frame = data.pool.iloc[np.sort(rng.integers(0, len(data.pool), rows))].reset_index(drop=True)
    return with_ids(frame, levels, rng)


# --- later years ---------------------------------------------------------------------------------


def census_years(data: DataSet, rows: int, seed: int) -> list[tuple[int, pd.DataFrame]]:
    """The ACS years after the reference's (2016–2018), each shuffled and cut into chunks of about
    `rows` rows, scored by the census model, in year order."""
    with resources.as_file(demo.DATA_FILE) as path:
        frame = pd.read_parquet(path)
    chunks = []
    for year in sorted(y for y in frame["year"].unique() if y > 2015):
        rows_of_year = frame[frame["year"] == year].drop(columns="year").sample(frac=1.0, random_state=seed)
        for part in np.array_split(np.arange(len(rows_of_year)), max(1, round(len(rows_of_year) / rows))):
            chunks.append((int(year), rescore(data, rows_of_year.iloc[part].reset_index(drop=True))))
    return chunks
