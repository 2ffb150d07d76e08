"""Attacks and transformations on a real TF-IDF + logistic-regression model: invariances that cannot
lie, the edits each attack promises, and the comparison numbers recomputed with scikit-learn/scipy."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.pipeline import make_pipeline

from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.checks.text import attacks, prefix, resources, transforms  # noqa: F401  (registration)
from driftline.checks.text.evaluator import wilson_interval
from driftline.checks.text.perturb import perturb_text, picked_count, substitute_char
from driftline.checks.text.tokenise import tokens
from driftline.data.text.sentiment_model import build_model, load_sentences

COLUMNS = Columns(text=("text",), label="label", id="id")
WORD_ATTACKS = sorted(
    n for n in registry.names() if n.startswith("attack.") and n != "attack.universal_prefix"
)
CHEAP_ATTACKS = [
    n
    for n in WORD_ATTACKS
    if n not in ("attack.synonym_swap", "attack.contextual_swap", "attack.contextual_insertion")
]


@pytest.fixture(scope="module")
def sentences() -> pd.DataFrame:
    return load_sentences()


@pytest.fixture(scope="module")
def lowercasing_model(sentences: pd.DataFrame):
    movies = sentences[sentences["domain"] == "movie_reviews"].iloc[:3000]
    return build_model(movies["text"], movies["label"])


@pytest.fixture(scope="module")
def batch(sentences: pd.DataFrame) -> pd.DataFrame:
    tweets = sentences[sentences["domain"] == "tweets"].iloc[:300]
    return tweets[["id", "text", "label"]].reset_index(drop=True)


def run(name: str, model, batch: pd.DataFrame, **params):
    check = registry.create(name, params).attach_model(model)
    (result,) = run_check(check, batch, COLUMNS, reference=batch, strict=True)
    assert result.status == "ok", result.reason
    return result


def test_lower_casing_model_is_exactly_invariant_to_case(lowercasing_model, batch) -> None:
    for name in ("transform.lower", "transform.upper"):
        result = run(name, lowercasing_model, batch)
        assert result.metrics["changed_share"] > 0.8
        assert result.metrics["flip_rate"] == 0.0
        assert result.metrics["accuracy_change"] == 0.0
        assert result.metrics["confidence_drop"] == 0.0
        assert result.severity == "none"


@pytest.mark.parametrize("name", CHEAP_ATTACKS)
def test_no_word_perturbed_changes_nothing(lowercasing_model, batch, name: str) -> None:
    result = run(name, lowercasing_model, batch, word_share=0.0)
    assert result.metrics["changed_share"] == 0.0 and result.metrics["flip_rate"] == 0.0
    assert result.details["examples"] == []


def test_comparison_numbers_against_scikit_learn_and_scipy(sentences, batch) -> None:
    movies = sentences[sentences["domain"] == "movie_reviews"].iloc[:3000]
    case_sensitive = make_pipeline(TfidfVectorizer(lowercase=False), LogisticRegression(max_iter=1000))
    case_sensitive.fit(movies["text"].tolist(), movies["label"])
    result = run("transform.upper", case_sensitive, batch)
    texts = batch["text"].tolist()
    before = case_sensitive.predict(texts)
    after = case_sensitive.predict([t.upper() for t in texts])
    flips = int((before != after).sum())
    assert result.metrics["flip_rate"] == pytest.approx(flips / len(texts))
    assert result.failing_rows == flips
    assert result.metrics["accuracy_change"] == pytest.approx(
        accuracy_score(batch["label"], before) - accuracy_score(batch["label"], after)
    )
    ci = binomtest(flips, len(texts)).proportion_ci(confidence_level=0.95, method="wilson")
    assert result.metrics["flip_rate_ci_low"] == pytest.approx(ci.low)
    assert result.metrics["flip_rate_ci_high"] == pytest.approx(ci.high)
    proba_before = case_sensitive.predict_proba(texts)
    proba_after = case_sensitive.predict_proba([t.upper() for t in texts])
    picked = proba_before.argmax(axis=1)
    rows = np.arange(len(texts))
    expected_drop = np.mean(proba_before[rows, picked] - proba_after[rows, picked])
    assert result.metrics["confidence_drop"] == pytest.approx(expected_drop)
    assert len(result.details["examples"]) == 5
    assert all(
        e["prediction"] != e["perturbed_prediction"] for e in result.details["examples"][: min(5, flips)]
    )


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (17, 250)])
def test_wilson_interval_matches_scipy(k: int, n: int) -> None:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="wilson")
    assert wilson_interval(k, n, 0.9) == pytest.approx((ci.low, ci.high))


def test_share_of_words_perturbed() -> None:
    assert [picked_count(n, 0.3) for n in (1, 2, 5, 9, 10)] == [0, 1, 2, 3, 3]
    rng = np.random.default_rng(0)
    text = "The quick brown fox jumped over the lazy dog today"
    out = perturb_text(text, 0.3, rng, substitute_char)
    changed = [a != b for a, b in zip(tokens(text), tokens(out), strict=True)]
    assert sum(changed) == 3


def test_a_rerun_with_the_same_seed_is_identical(lowercasing_model, batch) -> None:
    first = run("attack.char_swap", lowercasing_model, batch, seed=7)
    again = run("attack.char_swap", lowercasing_model, batch, seed=7)
    other = run("attack.char_swap", lowercasing_model, batch, seed=8)
    assert first.to_dict() == again.to_dict()
    assert first.details["examples"] != other.details["examples"]


def _examples(result) -> list[tuple[str, str]]:
    return [(e["original"], e["perturbed"]) for e in result.details["examples"]]


def test_invisible_and_control_characters_hide_the_original(lowercasing_model, batch) -> None:
    for original, perturbed in _examples(run("attack.invisible_character", lowercasing_model, batch)):
        assert perturbed != original and re.sub("[\u200b\u200c\u200d\u2060]", "", perturbed) == original
    for original, perturbed in _examples(run("attack.deletion_control", lowercasing_model, batch)):
        assert perturbed != original and re.sub(".\u0008", "", perturbed) == original


def test_homoglyphs_come_from_the_unicode_confusables(lowercasing_model, batch) -> None:
    result = run("attack.intentional_homoglyph", lowercasing_model, batch)
    inverse = {g: a for a, glyphs in resources.intentional_homoglyphs().items() for g in glyphs}
    for original, perturbed in _examples(result):
        foreign = [c for c in perturbed if not c.isascii()]
        assert foreign and all(unicodedata.name(c).startswith(("CYRILLIC", "GREEK")) for c in foreign)
        assert "".join(inverse.get(c, c) for c in perturbed) == original
    from confusable_homoglyphs import confusables

    result = run("attack.confusable_homoglyph", lowercasing_model, batch)
    for _, perturbed in _examples(result):
        assert confusables.is_confusable(perturbed, greedy=True)


def test_keyboard_ocr_and_misspelling_edits_use_the_shipped_tables(lowercasing_model, batch) -> None:
    keyboard, ocr, spelled = (
        resources.keyboard_neighbours(),
        resources.ocr_confusions(),
        resources.misspellings(),
    )
    for name, table in (("attack.keyboard", keyboard), ("attack.ocr", ocr)):
        for original, perturbed in _examples(run(name, lowercasing_model, batch)):
            diffs = [(a, b) for a, b in zip(original, perturbed, strict=True) if a != b]
            assert diffs and all(
                b.lower() in table.get(a.lower(), ()) or b in table.get(a, ()) for a, b in diffs
            )
    for original, perturbed in _examples(run("attack.misspelling", lowercasing_model, batch)):
        pairs = [(a, b) for a, b in zip(original.split(), perturbed.split(), strict=True) if a != b]
        for a, b in pairs:
            word, wrong = tokens(a)[0], tokens(b)[0]
            assert wrong in {m.lower() for m in spelled[word]}


def test_pronoun_and_name_swaps(tmp_path) -> None:
    m2f = transforms.word_swapper(transforms.MASCULINE_TO_FEMININE)
    assert m2f("He said his dog saw HIM. he's fine; Hehe.") == "She said her dog saw HER. she's fine; Hehe."
    f2m = transforms.word_swapper(transforms.FEMININE_TO_MASCULINE)
    assert f2m("She told her sister herself") == "He told his sister himself"
    male = resources.read_names(None, transforms.MALE_NAMES_FILE)
    female = resources.read_names(None, transforms.FEMALE_NAMES_FILE)
    assert len(male) > 300 and len(female) > 350 and not set(male) & set(female)
    swap = transforms.NamesM2F().transform()
    assert swap(f"{male[0]} met {female[0]}; {male[1]}!") == f"{female[0]} met {female[0]}; {female[1]}!"
    (tmp_path / "m.txt").write_text("Zorblax\n")
    (tmp_path / "f.txt").write_text("Quenby\n")
    own = transforms.NamesM2F(male_names=str(tmp_path / "m.txt"), female_names=str(tmp_path / "f.txt"))
    assert own.transform()("Zorblax and zorblax") == "Quenby and zorblax"


def test_glove_swaps_use_true_neighbours(lowercasing_model, batch) -> None:
    from driftline.checks.text.embeddings import load_glove

    glove = load_glove(20_000)
    result = run("attack.synonym_swap", lowercasing_model, batch.iloc[:40], neighbours=5)
    for original, perturbed in _examples(result):
        for a, b in zip(tokens(original), tokens(perturbed), strict=True):
            if a != b:  # b is among the 5 most cosine-similar words to a (recomputed with numpy)
                sims = glove.vectors @ glove.vectors[glove.index[a]]
                sims[glove.index[a]] = -np.inf
                assert b in set(glove.words[np.argsort(-sims)[:5]])
    inserted = run("attack.contextual_insertion", lowercasing_model, batch.iloc[:40])
    for original, perturbed in _examples(inserted):
        assert len(tokens(perturbed)) > len(tokens(original))


def test_universal_prefix_within_budget_and_shift_recomputed(lowercasing_model, batch) -> None:
    result = run("attack.universal_prefix", lowercasing_model, batch, budget=60, length=3, sample_size=10_000)
    assert result.details["evaluations"] <= 60
    target_class = result.details["target_class"]
    target = list(lowercasing_model.classes_).index(target_class)
    words = result.details["prefix"]
    assert len(words.split()) == 3
    texts = batch["text"].tolist()
    attacked = [t for t, p in zip(texts, lowercasing_model.predict(texts), strict=True) if p != target_class]
    before = lowercasing_model.predict_proba(attacked)[:, target]
    after = lowercasing_model.predict_proba([f"{words} {t}" for t in attacked])[:, target]
    assert result.rows == len(attacked)
    assert result.metrics["probability_before"] == pytest.approx(before.mean())
    assert result.metrics["probability_after"] == pytest.approx(after.mean())
    assert result.metrics["flip_rate"] == pytest.approx(np.mean(after >= 0.5))
    assert result.metrics["probability_shift"] > 0.05


def test_without_a_model_the_check_is_skipped_with_the_reason(batch) -> None:
    (result,) = run_check(registry.create("attack.char_swap"), batch, COLUMNS, reference=batch, strict=True)
    assert result.status == "skipped" and "model:" in result.reason
    with pytest.raises(ValueError, match="word_share"):
        registry.create("attack.char_swap", {"word_share": 1.5})
