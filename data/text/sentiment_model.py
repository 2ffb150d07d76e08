"""The text demo's model and data: a TF-IDF + logistic-regression sentiment classifier trained on
movie-review sentences, monitored on batches from tweets, product reviews and newspaper editorials.

The model is built from the committed extract (`vader_sentences.parquet`, see SOURCE.md) each time
it is asked for (about a second), never unpickled from a file. `train_model` is the monitor spec's
`model:` (`driftline.data.text.sentiment_model:train_model`); it is called on raw text.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict
from sklearn.pipeline import Pipeline

DATA_FILE = "vader_sentences.parquet"
TRAIN_DOMAIN = "movie_reviews"
OTHER_DOMAINS = ("tweets", "product_reviews", "nyt_editorials")
BATCH_ROWS = 1000
SEED = 0
# Batch ids (dates, oldest first): the held-out training domain, then the three other domains.
BATCH_DOMAINS = {
    "2024-05-01": TRAIN_DOMAIN,
    "2024-05-02": "tweets",
    "2024-05-03": "product_reviews",
    "2024-05-04": "nyt_editorials",
}


def load_sentences() -> pd.DataFrame:
    """Every rated sentence: id, domain, rating (-4..4), text and label (1 when the rating is > 0)."""
    with resources.as_file(resources.files("driftline.data") / "text" / DATA_FILE) as path:
        return pd.read_parquet(path)


def split_training_domain(sentences: pd.DataFrame, seed: int = SEED) -> dict[str, pd.DataFrame]:
    """The training domain's rows in a seeded 70/15/15 split: train, reference, held out."""
    rows = sentences[sentences["domain"] == TRAIN_DOMAIN]
    order = np.random.default_rng(seed).permutation(len(rows))
    cut_train, cut_ref = int(0.7 * len(rows)), int(0.85 * len(rows))
    return {
        "train": rows.iloc[np.sort(order[:cut_train])],
        "reference": rows.iloc[np.sort(order[cut_train:cut_ref])],
        "held_out": rows.iloc[np.sort(order[cut_ref:])],
    }


def unfitted_model() -> Pipeline:
    """A lower-casing TF-IDF (unigrams and bigrams) + logistic regression, not yet fitted."""
    return Pipeline(
        [
            ("tfidf", TfidfVectorizer(lowercase=True, ngram_range=(1, 2), min_df=2, sublinear_tf=True)),
            ("classifier", LogisticRegression(C=4.0, max_iter=2000)),
        ]
    )


def build_model(texts: pd.Series | list[str], labels: pd.Series | np.ndarray) -> Pipeline:
    """The model of `unfitted_model` fitted on raw texts and their labels."""
    return unfitted_model().fit(list(texts), np.asarray(labels))


@functools.cache
def train_model() -> Pipeline:
    """The demo's classifier, trained on 70% of the movie-review sentences (cached per process)."""
    train = split_training_domain(load_sentences())["train"]
    return build_model(train["text"], train["label"])


def scored(model: Pipeline, frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with the model's `prediction` and positive-class `score` on its `text` column."""
    proba = model.predict_proba(frame["text"].tolist())[:, 1]
    return frame.assign(prediction=(proba >= 0.5).astype(np.int64), score=proba)


def cross_validated(frame: pd.DataFrame, folds: int = 5) -> pd.DataFrame:
    """The training rows scored out of fold, so the reference's performance is an honest estimate."""
    texts, labels = frame["text"].tolist(), frame["label"].to_numpy()
    proba = cross_val_predict(unfitted_model(), texts, labels, cv=folds, method="predict_proba")
    return frame.assign(prediction=(proba[:, 1] >= 0.5).astype(np.int64), score=proba[:, 1])


def demo_frames(rows: int = BATCH_ROWS, seed: int = SEED) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The reference (the training rows, scored out of fold: the vocabulary the model learnt) and one
    scored batch per id of BATCH_DOMAINS."""
    sentences = load_sentences()
    parts = split_training_domain(sentences, seed)
    model = train_model()
    rng = np.random.default_rng(seed + 1)
    batches = {}
    for batch_id, domain in BATCH_DOMAINS.items():
        pool = parts["held_out"] if domain == TRAIN_DOMAIN else sentences[sentences["domain"] == domain]
        picked = pool.iloc[np.sort(rng.choice(len(pool), size=min(rows, len(pool)), replace=False))]
        batches[batch_id] = scored(model, picked.reset_index(drop=True))
    return cross_validated(parts["train"].reset_index(drop=True)), batches


def write_demo_data(output: Path) -> Path:
    """Write `data/reference.parquet`, `data/batches/<id>.parquet` and a copy of the monitor spec
    under `output`; returns the spec's path."""
    reference, batches = demo_frames()
    data_dir = output / "data"
    (data_dir / "batches").mkdir(parents=True, exist_ok=True)
    reference.to_parquet(data_dir / "reference.parquet", index=False)
    for batch_id, frame in batches.items():
        frame.to_parquet(data_dir / "batches" / f"{batch_id}.parquet", index=False)
    spec = output / "monitor.yaml"
    spec.write_text((resources.files("driftline.data") / "text" / "monitor.yaml").read_text())
    return spec
