"""Tokenisation, text drift and abnormal text, pinned against plain-Python counts, scipy and hand PSI."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.checks.text.abnormal import EmptyText, UnseenUnigram, rows_unseen_when_left_out
from driftline.checks.text.drift import BigramDrift, UnigramDrift
from driftline.checks.text.tokenise import Vocabulary, tokenise, tokens

COLUMNS = Columns(text=("review",), label="label", prediction="prediction")
TEXT_DATA = Path(__file__).resolve().parents[3] / "data" / "text" / "vader_sentences.parquet"
WORDS = ["good", "bad", "film", "the", "a", "plot", "actor", "dull", "great", "Movie", "it's", "not"]


def random_texts(n: int, seed: int, words: list[str] = WORDS) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        picked = rng.choice(words, size=rng.integers(0, 9))
        out.append(" ".join(picked) + rng.choice(["", ".", "!", ", ok"]))
    return out


def plain_tokens(text: str) -> list[str]:
    """An independent reading of the documented rule: lower-case, split, strip apostrophes, drop empties."""
    return [p.strip("'’") for p in re.split(r"[^\w'’]+", text.lower()) if p.strip("'’")]


def hand_psi(p_counts: np.ndarray, q_counts: np.ndarray, smoothing: float) -> float:
    p = (p_counts + smoothing) / (p_counts.sum() + smoothing * len(p_counts))
    q = (q_counts + smoothing) / (q_counts.sum() + smoothing * len(q_counts))
    return float(np.sum((q - p) * np.log(q / p)))


def hand_bins(ref_counter: Counter, cur_counter: Counter, max_terms: int) -> tuple[np.ndarray, np.ndarray]:
    """Top reference terms (count desc, then alphabetical) plus an "other" bin, for both sides."""
    top = sorted(ref_counter, key=lambda t: (-ref_counter[t], t))[:max_terms]
    ref = [ref_counter[t] for t in top]
    cur = [cur_counter.get(t, 0) for t in top]
    ref.append(sum(ref_counter.values()) - sum(ref))
    cur.append(sum(cur_counter.values()) - sum(cur))
    return np.array(ref, float), np.array(cur, float)


# -- tokenisation ----------------------------------------------------------------------------------


def test_token_rule() -> None:
    assert tokens("The film wasn't GOOD -- 10/10, x_y!") == [
        "the",
        "film",
        "wasn't",
        "good",
        "10",
        "10",
        "x_y",
    ]
    assert tokens("") == [] and tokens("  ...  ") == []


def test_batch_tokenisation_matches_per_text_rule_and_keeps_rows_apart() -> None:
    texts = [*random_texts(300, 1), "line one\nline two", "", "Ünïcode café", "'quoted' rock'n'roll '' dogs'"]
    tokenised = tokenise(pd.Series(texts))
    words = tokenised.vocabulary.to_numpy()[tokenised.codes]
    expected = [t for text in texts for t in plain_tokens(text)]
    assert words.tolist() == expected
    assert tokenised.tokens_per_row().tolist() == [len(plain_tokens(t)) for t in texts]
    bigrams = Counter(p for t in texts for p in zip(plain_tokens(t)[:-1], plain_tokens(t)[1:], strict=True))
    assert tokenised.bigram_counts().to_dict() == {f"{a} {b}": n for (a, b), n in bigrams.items()}


def test_nulls_are_empty_texts() -> None:
    tokenised = tokenise(pd.Series(["a b", None, "c"], dtype=object))
    assert tokenised.tokens_per_row().tolist() == [2, 0, 1]
    assert tokenised.bigram_counts().to_dict() == {"a b": 1}


def test_vocabularies_merge_to_the_vocabulary_of_the_whole() -> None:
    texts = random_texts(200, 2)
    for make in (Vocabulary.of_unigrams, Vocabulary.of_bigrams):
        merged = make(texts[:70]).merge(make(texts[70:]))
        whole = make(texts)
        assert merged.counts.sort_index().to_dict() == whole.counts.sort_index().to_dict()
        assert merged.rows == whole.rows == 200


# -- drift -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("smoothing", "max_terms"), [(1.0, 3), (1.0, 500), (0.0, 3), (0.5, 8)])
def test_unigram_psi_against_hand_counts(smoothing: float, max_terms: int) -> None:
    ref_texts = random_texts(400, 3)
    cur_texts = random_texts(300, 4, [*WORDS, "unseen", "new", "words"])
    ref = Counter(t for x in ref_texts for t in plain_tokens(x))
    cur = Counter(t for x in cur_texts for t in plain_tokens(x))
    p, q = hand_bins(ref, cur, max_terms)
    check = UnigramDrift(max_terms=max_terms, smoothing=smoothing)
    (result,) = check.run(pd.DataFrame({"review": ref_texts}), pd.DataFrame({"review": cur_texts}), COLUMNS)
    assert result.status == "ok", result.reason
    assert result.metrics["psi"] == pytest.approx(hand_psi(p, q, smoothing), rel=1e-12)
    assert result.details["other_share"]["current"] == pytest.approx(q[-1] / q.sum())
    assert result.details["terms"] == min(max_terms, len(ref))


def test_unigram_jensen_shannon_against_scipy() -> None:
    ref_texts, cur_texts = random_texts(400, 5), random_texts(300, 6, [*WORDS, "zzz"])
    ref = Counter(t for x in ref_texts for t in plain_tokens(x))
    cur = Counter(t for x in cur_texts for t in plain_tokens(x))
    p, q = hand_bins(ref, cur, 5)
    check = UnigramDrift(max_terms=5, statistic="jensen_shannon")
    (result,) = check.run(pd.DataFrame({"review": ref_texts}), pd.DataFrame({"review": cur_texts}), COLUMNS)
    assert result.metrics["jensen_shannon"] == pytest.approx(jensenshannon(p, q, base=2), rel=1e-12)
    assert set(result.evidence) == {"jensen_shannon"} and "psi" not in result.metrics


def test_bigram_psi_against_hand_counts() -> None:
    ref_texts, cur_texts = random_texts(400, 7), random_texts(300, 8, WORDS[:6])

    def pairs(texts: list[str]) -> Counter:
        out: Counter = Counter()
        for text in texts:
            toks = plain_tokens(text)
            out.update(f"{a} {b}" for a, b in itertools.pairwise(toks))
        return out

    p, q = hand_bins(pairs(ref_texts), pairs(cur_texts), 40)
    (result,) = BigramDrift(max_terms=40).run(
        pd.DataFrame({"review": ref_texts}), pd.DataFrame({"review": cur_texts}), COLUMNS
    )
    assert result.metrics["psi"] == pytest.approx(hand_psi(p, q, 1.0), rel=1e-12)
    (js,) = BigramDrift(max_terms=40, statistic="jensen_shannon").run(
        pd.DataFrame({"review": ref_texts}), pd.DataFrame({"review": cur_texts}), COLUMNS
    )
    assert js.metrics["jensen_shannon"] == pytest.approx(jensenshannon(p, q, base=2), rel=1e-12)


def test_same_text_shows_no_drift_and_disjoint_text_is_high() -> None:
    texts = pd.DataFrame({"review": random_texts(300, 9)})
    (same,) = UnigramDrift().run(texts, texts, COLUMNS)
    assert same.metrics["psi"] == pytest.approx(0.0, abs=1e-12) and same.severity == "none"
    other = pd.DataFrame({"review": ["zebra quartz"] * 100})
    (js,) = UnigramDrift(statistic="jensen_shannon").run(texts, other, COLUMNS)
    assert js.metrics["jensen_shannon"] == pytest.approx(1.0) and js.severity == "high"


def test_drift_bad_input_names_the_problem() -> None:
    ref = pd.DataFrame({"review": random_texts(100, 10)})
    (missing,) = run_check(UnigramDrift(), pd.DataFrame({"x": [1]}), COLUMNS, reference=ref, strict=True)
    assert missing.status == "error" and "review" in missing.reason
    (numeric,) = run_check(
        UnigramDrift(), pd.DataFrame({"review": [1.0, 2.0]}), COLUMNS, reference=ref, strict=True
    )
    assert numeric.status == "error" and "not strings" in numeric.reason
    (few,) = run_check(UnigramDrift(), pd.DataFrame({"review": ["a"]}), COLUMNS, reference=ref, strict=True)
    assert few.status == "skipped" and "min_terms" in few.reason
    (no_role,) = run_check(UnigramDrift(), ref, Columns(), reference=ref, strict=True)
    assert no_role.status == "skipped" and "columns.text" in no_role.reason
    with pytest.raises(ValueError, match="statistic"):
        UnigramDrift(statistic="kl")


# -- abnormal text ---------------------------------------------------------------------------------


def test_unseen_unigram_flags_the_documented_example_with_model_impact() -> None:
    reference = pd.DataFrame({"review": ["James went to his house", "he went home"] * 5})
    batch = pd.DataFrame(
        {
            "review": ["James went to his casa", "he went home", "his casa", None, "James went"],
            "label": [1, 1, 0, 1, 1],
            "prediction": [0, 1, 1, 1, 1],
        }
    )
    (result,) = UnseenUnigram(min_impact_rows=1).run(reference, batch, COLUMNS)
    assert result.failing_rows == 2 and result.rows == 4
    assert result.details["failing_ids"] == [0, 2] and result.details["top_unseen_tokens"] == [["casa", 2]]
    assert result.metrics["failing_share"] == pytest.approx(2 / 4)
    # 1 + 1 + 2 + 0 tokens unseen out of 5 + 3 + 2 + 2
    assert result.metrics["unseen_token_share"] == pytest.approx(2 / 12)
    assert result.details["row_unseen_share_mean"] == pytest.approx(np.mean([1 / 5, 0, 1 / 2, 0]))
    # error rate on failing rows (2/2) minus on passing rows (0/3: the null row has a prediction too)
    assert result.model_impact == pytest.approx(1.0 - 0.0)


def test_unseen_unigram_min_reference_count() -> None:
    reference = pd.DataFrame({"review": ["common common rare"] * 1 + ["common"] * 5})
    batch = pd.DataFrame({"review": ["rare", "common"]})
    (once,) = UnseenUnigram().run(reference, batch, COLUMNS)
    assert once.failing_rows == 0
    (twice,) = UnseenUnigram(min_reference_count=2).run(reference, batch, COLUMNS)
    assert twice.failing_rows == 1 and twice.details["failing_ids"] == [0]


@pytest.mark.parametrize("min_count", [1, 2])
def test_clean_unseen_rate_is_the_reference_left_out_row_by_row(min_count: int) -> None:
    """The clean rate counts the reference rows that hold a token the other rows hold fewer than
    `min_count` times: pinned by tokenising the reference again without each row in turn."""
    texts = pd.read_parquet(TEXT_DATA, columns=["text"])["text"].head(150).tolist()
    expected = 0
    for i, text in enumerate(texts):
        others = tokenise(texts[:i] + texts[i + 1 :]).unigram_counts()
        seen = set(others.index[others.to_numpy() >= min_count])
        expected += bool(set(tokenise([text]).vocabulary) - seen)
    assert rows_unseen_when_left_out(tokenise(texts), min_count) == expected > 0


def test_unseen_unigram_stays_quiet_on_clean_text_and_flags_another_domain() -> None:
    sentences = pd.read_parquet(TEXT_DATA, columns=["text", "domain"])
    movies = sentences[sentences["domain"] == "movie_reviews"].sample(frac=1.0, random_state=0)["text"]
    reference = pd.DataFrame({"review": movies.iloc[:4000].to_numpy()})
    clean = pd.DataFrame({"review": movies.iloc[4000:5000].to_numpy()})
    (quiet,) = run_check(UnseenUnigram(), clean, COLUMNS, reference=reference)
    assert quiet.severity == "none", quiet.reason
    tweets = sentences[sentences["domain"] == "tweets"]["text"].head(1000).to_numpy()
    (shifted,) = run_check(UnseenUnigram(), pd.DataFrame({"review": tweets}), COLUMNS, reference=reference)
    assert shifted.metrics["failing_rate_increase"] > 0.05 and shifted.severity in ("medium", "high")


def test_empty_text_flags_empty_and_blank_strings_not_nulls() -> None:
    reference = pd.DataFrame({"review": ["fine"]})
    batch = pd.DataFrame({"review": pd.Series(["", "  ", None, "ok", "\t"], dtype="str")})
    (result,) = EmptyText().run(reference, batch, COLUMNS)
    assert result.failing_rows == 3 and result.rows == 4 and result.details["dropped_rows"] == 1
    (strict,) = EmptyText(whitespace_is_empty=False).run(reference, batch, COLUMNS)
    assert strict.failing_rows == 1


def test_abnormal_text_bad_input() -> None:
    reference = pd.DataFrame({"review": ["fine"]})
    (numeric,) = run_check(
        UnseenUnigram(), pd.DataFrame({"review": [1, 2] * 6}), COLUMNS, reference=reference, strict=True
    )
    assert numeric.status == "error" and "review" in numeric.reason
    (mixed,) = run_check(
        EmptyText(),
        pd.DataFrame({"review": ["a", 3] * 6}, dtype=object),
        COLUMNS,
        reference=reference,
        strict=True,
    )
    assert mixed.status == "error" and "non-string" in mixed.reason
    (empty,) = run_check(EmptyText(), reference.iloc[:0], COLUMNS, reference=reference, strict=True)
    assert empty.status == "skipped"
