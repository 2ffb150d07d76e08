"""NLP test categories against scikit-learn's scores and data built so that every group is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score, precision_recall_fscore_support
from sklearn.pipeline import make_pipeline

from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.checks.text.groups import infer_gender, mentions, term_swapper
from driftline.checks.text.nlp import Accuracy, Bias, Fairness, Representation, Robustness

COLUMNS = Columns(text=("text",), label="label", prediction="prediction")


def by_target(results) -> dict:
    return {r.target: r for r in results}


def test_accuracy_per_class_and_macro_match_scikit_learn() -> None:
    rng = np.random.default_rng(0)
    truth = rng.choice(["neg", "neu", "pos"], size=200, p=[0.5, 0.3, 0.2])
    predicted = np.where(rng.random(200) < 0.7, truth, rng.choice(["neg", "neu", "pos"], size=200))
    frame = pd.DataFrame({"text": ["x"] * 200, "label": truth, "prediction": predicted})
    results = by_target(Accuracy().run(frame, frame, COLUMNS))
    p, r, f, s = precision_recall_fscore_support(
        truth, predicted, labels=["neg", "neu", "pos"], zero_division=0
    )
    for i, c in enumerate(["neg", "neu", "pos"]):
        got = results[f"class={c}"]
        assert got.metrics == pytest.approx({"precision": p[i], "recall": r[i], "f1": f[i]})
        assert got.rows == s[i]
    assert results["macro"].metrics["f1"] == pytest.approx(f1_score(truth, predicted, average="macro"))
    weighted = by_target(Accuracy(average="weighted").run(frame, frame, COLUMNS))["weighted"]
    assert weighted.metrics["recall"] == pytest.approx(
        precision_recall_fscore_support(truth, predicted, average="weighted")[1]
    )


def test_accuracy_grades_low_scores_and_needs_labels() -> None:
    frame = pd.DataFrame({"text": ["a"] * 20, "label": [0, 1] * 10, "prediction": [0] * 20})
    results = by_target(Accuracy().run(frame, frame, COLUMNS))
    assert results["class=1"].metrics["recall"] == 0.0 and results["class=1"].severity == "high"
    (skipped,) = run_check(Accuracy(), frame, Columns(text=("text",)), reference=frame, strict=True)
    assert skipped.status == "skipped" and "label" in skipped.reason


def gendered_frame() -> pd.DataFrame:
    male = [f"{name} said he liked it" for name in ["John", "David", "Paul", "Mark", "Peter"]] * 4
    female = [f"{name} said she liked it" for name in ["Mary", "Susan", "Linda", "Karen", "Emily"]] * 4
    neutral = ["the film was fine"] * 20
    rng = np.random.default_rng(1)
    label = rng.integers(0, 2, size=60)
    prediction = np.where(rng.random(60) < 0.75, label, 1 - label)
    return pd.DataFrame({"text": male + female + neutral, "label": label, "prediction": prediction})


def test_gender_inference_and_fairness_per_group() -> None:
    frame = gendered_frame()
    groups = infer_gender(frame["text"])
    assert list(groups) == ["male"] * 20 + ["female"] * 20 + ["unknown"] * 20
    assert infer_gender(pd.Series(["He met Mary and she left", "hers"])).tolist() == ["female", "female"]
    results = by_target(Fairness().run(frame, frame, COLUMNS))
    overall = f1_score(frame["label"], frame["prediction"], average="macro")
    for group, rows in (("male", slice(0, 20)), ("female", slice(20, 40)), ("unknown", slice(40, 60))):
        part = frame.iloc[rows]
        expected = f1_score(part["label"], part["prediction"], average="macro")
        got = results[f"gender={group}"]
        assert got.metrics["f1"] == pytest.approx(expected)
        assert got.metrics["f1_gap"] == pytest.approx(overall - expected)
        assert got.metrics["accuracy"] == pytest.approx(np.mean(part["label"] == part["prediction"]))


def test_representation_counts() -> None:
    frame = gendered_frame()
    frame.loc[0:4, "text"] = ["a Muslim view", "Catholic music", "from France", "in Japan today", "Hindu art"]
    results = by_target(Representation().run(frame, frame, COLUMNS))
    assert results["religion"].metrics == {"count": 3.0, "proportion": 3 / 60}
    assert results["country"].metrics["count"] == 2.0
    assert results["gender=female"].metrics["count"] == 20.0
    assert results["gender=male"].metrics["count"] == 15.0
    assert results["label=1"].metrics["count"] == float(frame["label"].sum())
    assert mentions(pd.Series(["a hindu", "Hindustan"]), ["Hindu"]).tolist() == [False, False]


def test_term_swaps_cycle_within_a_category() -> None:
    swap = term_swapper(["Christian", "Muslim", "atheist"])
    assert swap("A Christian and a Muslim, ATHEIST") == "A Muslim and a atheist, Christian"


@pytest.fixture(scope="module")
def case_sensitive_model():
    texts = ["GREAT film", "great film", "awful plot", "AWFUL plot", "Great acting", "bad acting"] * 5
    labels = [1, 0, 0, 1, 1, 0] * 5
    return make_pipeline(TfidfVectorizer(lowercase=False), LogisticRegression()).fit(texts, labels)


def test_robustness_pass_rate_is_prediction_agreement(case_sensitive_model) -> None:
    texts = ["great film", "awful plot", "Great acting", "bad acting today", "a great plot"] * 4
    frame = pd.DataFrame({"text": texts, "label": [1] * 20})
    check = Robustness(tests=["transform.upper", "transform.lower"]).attach_model(case_sensitive_model)
    results = by_target(check.run(frame, frame, Columns(text=("text",))))
    before = case_sensitive_model.predict(texts)
    for test, function in (("transform.upper", str.upper), ("transform.lower", str.lower)):
        after = case_sensitive_model.predict([function(t) for t in texts])
        assert results[f"text:{test}"].metrics["pass_rate"] == pytest.approx(np.mean(before == after))


class EchoModel:
    """A 'generating' model: its output is its input."""

    def predict(self, texts):
        return np.array([f"{t} ok" for t in texts], dtype=object)


def test_generated_text_is_scored_with_rouge() -> None:
    texts = ["it is good.", "don't stop now", "we're done", "a fine day", "the end."] * 4
    frame = pd.DataFrame({"text": texts})
    check = Robustness(tests=["transform.upper", "transform.remove_special"], rouge_threshold=0.99)
    results = by_target(check.attach_model(EchoModel()).run(frame, frame, Columns(text=("text",))))
    assert results["text:transform.upper"].details["evaluation"] == "rouge_l"
    # ROUGE lower-cases and drops punctuation: upper-casing and periods change nothing,
    # a removed apostrophe merges two tokens ("don t" -> "dont")
    assert results["text:transform.upper"].metrics["pass_rate"] == 1.0
    assert results["text:transform.remove_special"].metrics["pass_rate"] == pytest.approx(3 / 5)


def test_bias_scores_only_swapped_texts(case_sensitive_model) -> None:
    texts = ["John liked the GREAT film", "great film", "Mary saw a bad acting"] * 10
    frame = pd.DataFrame({"text": texts})
    results = by_target(Bias().attach_model(case_sensitive_model).run(frame, frame, Columns(text=("text",))))
    assert results["text:transform.names_m2f"].rows == 10
    assert results["text:transform.names_m2f"].metrics["pass_rate"] == 1.0
    assert results["text:swap_country"].status == "skipped"
    with pytest.raises(ValueError, match="perturbation test"):
        Robustness(tests=["drift.unigrams"]).fit(frame, Columns(text=("text",)))
