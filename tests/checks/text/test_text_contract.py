"""Every text check, with the model attached, through bad input: clear results, never a traceback."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import driftline.checks.text  # noqa: F401  (registration)
from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.result import SEVERITIES, STATUSES
from driftline.checks.runner import run_check

TEXT_FAMILIES = ("text.", "drift.unigrams", "drift.bigrams", "attack.", "transform.", "nlp.")
NAMES = sorted(n for n in registry.names() if n.startswith(TEXT_FAMILIES))
COLUMNS = Columns(id="id", text=("review",), label="label", prediction="prediction")
WORDS = ["good", "bad", "film", "he", "she", "John", "Mary", "plot", "Paris", "Muslim", "great", "dull"]


def make_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    reviews = [" ".join(rng.choice(WORDS, size=rng.integers(1, 9))) for _ in range(n)]
    label = np.array([int("good" in r or "great" in r) for r in reviews])
    return pd.DataFrame(
        {"id": np.arange(n), "review": pd.Series(reviews, dtype="str"), "label": label, "prediction": label}
    )


REFERENCE = make_frame(300, 0)
MODEL = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(REFERENCE["review"], REFERENCE["label"])
CASES = {
    "valid": lambda f: f,
    "empty batch": lambda f: f.iloc[:0],
    "no text column": lambda f: f.drop(columns=["review"]),
    "null texts": lambda f: f.assign(review=pd.Series([None] * len(f), dtype="str")),
    "empty texts": lambda f: f.assign(review=""),
    "numbers for text": lambda f: f.assign(review=np.arange(len(f), dtype=float)),
    "one row": lambda f: f.iloc[:1],
    "no labels": lambda f: f.drop(columns=["label"]),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", NAMES)
def test_text_check_answers_bad_input_with_a_reason(name: str, case: str) -> None:
    check = registry.create(
        name, {"sample_size": 50} if "sample_size" in registry.get(name).parameters() else {}
    )
    if hasattr(check, "attach_model"):
        check.attach_model(MODEL)
    current = CASES[case](make_frame(120, 1))
    results = run_check(check, current, COLUMNS, reference=REFERENCE, strict=True)
    assert results
    for r in results:
        assert r.check == name and r.status in STATUSES and r.severity in SEVERITIES
        assert r.status == "ok" or r.reason
        json.dumps(r.to_dict(), allow_nan=False)
    if case == "valid":
        assert not [r.reason for r in results if r.status == "error"]
    if case in ("no text column", "numbers for text"):
        assert all(r.status != "ok" for r in results)
        assert any("review" in (r.reason or "") for r in results)


ISSUE_NAMES = [
    "text.unseen_unigram",
    "text.empty_string",
    "drift.unigrams",
    "drift.bigrams",
    "attack.invisible_character",
    "attack.deletion_control",
    "attack.intentional_homoglyph",
    "attack.confusable_homoglyph",
    "attack.universal_prefix",
    "attack.char_deletion",
    "attack.char_insertion",
    "attack.char_substitution",
    "attack.char_swap",
    "attack.misspelling",
    "attack.keyboard",
    "attack.ocr",
    "attack.synonym_swap",
    "attack.contextual_swap",
    "attack.contextual_insertion",
    "transform.upper",
    "transform.lower",
    "transform.remove_special",
    "transform.pronouns_m2f",
    "transform.pronouns_f2m",
    "transform.names_f2m",
    "transform.names_m2f",
    "nlp.robustness",
    "nlp.bias",
    "nlp.accuracy",
    "nlp.fairness",
    "nlp.representation",
]


def test_every_public_name_is_registered_with_a_summary() -> None:
    assert sorted(ISSUE_NAMES) == NAMES
    for name in NAMES:
        assert registry.describe(name)["summary"]
