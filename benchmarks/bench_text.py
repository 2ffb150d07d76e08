"""Speed of the text checks on real sentences with the demo's scikit-learn model.

Run: `.venv/bin/python -m benchmarks.bench_text [--attack-rows 10000] [--drift-rows 1000000]`.

Part 1: every attack and transformation over `--attack-rows` sentences (drawn with replacement from
the VADER extract, all domains) with the demo's TF-IDF + logistic-regression model: each check
perturbs every sentence, calls the model on the original and perturbed texts and compares
(targets: under 60 s for all of them together; the universal prefix on its own line, with its
budget). The peer, where nlpaug's augmenters work offline (keyboard, OCR, random character
actions, spelling), is a plain loop: `augmenter.augment(texts)` and the same two model calls.

Part 2: text drift and abnormal text (`drift.unigrams`, `drift.bigrams`, `text.unseen_unigram`,
`text.empty_string`) on `--drift-rows` sentences against the demo's reference (target: under 30 s in
total). The peer counts unigrams with a Python loop (`collections.Counter` over `str.split`).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.measure import peak_rss_mb, table
from driftline.checks import registry
from driftline.checks.columns import Columns
from driftline.checks.runner import run_check
from driftline.checks.text import attacks, drift, prefix, transforms  # noqa: F401  (registration)
from driftline.data.text import sentiment_model as sm

COLUMNS = Columns(text=("text",), label="label", id="id")
PERTURBATIONS = sorted(
    n for n in registry.names() if n.startswith(("attack.", "transform.")) and n != "attack.universal_prefix"
)
# driftline check -> nlpaug augmenter factory (the ones that run offline)
NLPAUG_PEERS: dict[str, Callable[[], Any]] = {
    "attack.keyboard": lambda: __import__("nlpaug.augmenter.char", fromlist=["x"]).KeyboardAug(),
    "attack.ocr": lambda: __import__("nlpaug.augmenter.char", fromlist=["x"]).OcrAug(),
    "attack.char_swap": lambda: __import__("nlpaug.augmenter.char", fromlist=["x"]).RandomCharAug(
        action="swap"
    ),
    "attack.char_deletion": lambda: __import__("nlpaug.augmenter.char", fromlist=["x"]).RandomCharAug(
        action="delete"
    ),
    "attack.char_insertion": lambda: __import__("nlpaug.augmenter.char", fromlist=["x"]).RandomCharAug(
        action="insert"
    ),
    "attack.char_substitution": lambda: __import__("nlpaug.augmenter.char", fromlist=["x"]).RandomCharAug(
        action="substitute"
    ),
    "attack.misspelling": lambda: __import__("nlpaug.augmenter.word", fromlist=["x"]).SpellingAug(),
}
DRIFT_CHECKS = ("drift.unigrams", "drift.bigrams", "text.unseen_unigram", "text.empty_string")


def sample_sentences(sentences: pd.DataFrame, rows: int, seed: int) -> pd.DataFrame:
    """`rows` sentences drawn with replacement (ids made unique)."""
    picked = sentences.iloc[np.random.default_rng(seed).integers(0, len(sentences), size=rows)]
    return picked.assign(id=np.arange(rows)).reset_index(drop=True)[["id", "text", "label"]]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def nlpaug_loop(name: str, model: Any, texts: list[str]) -> float | None:
    """Seconds of the peer: augment every text with nlpaug, then the two model calls; None if absent."""
    try:
        augmenter = NLPAUG_PEERS[name]()
    except (KeyError, ImportError):
        return None

    def run() -> float:
        perturbed = augmenter.augment(texts)
        before, after = model.predict(texts), model.predict(perturbed)
        return float(np.mean(before != after))

    return timed(run)[1]


def bench_perturbations(rows: int, budget: int) -> None:
    sentences = sm.load_sentences()
    batch = sample_sentences(sentences, rows, seed=1)
    model, train_seconds = timed(sm.train_model)
    print(f"\n## Attacks and transformations: {rows:,} sentences (model trained in {train_seconds:.1f} s)\n")
    texts = batch["text"].tolist()
    out_rows, total = [], 0.0
    for name in PERTURBATIONS:
        check = registry.create(name, {"sample_size": rows}).attach_model(model)
        (result,), seconds = timed(lambda check=check: run_check(check, batch, COLUMNS, reference=batch))
        total += seconds
        peer = nlpaug_loop(name, model, texts)
        ratio = f"{peer / seconds:.2f}x" if peer else "-"
        flip = result.metrics.get("flip_rate", float("nan"))
        out_rows.append((name, seconds, flip, f"{peer:.3g}" if peer else "-", ratio))
    print(table(out_rows, ("check", "driftline s", "flip rate", "nlpaug loop s", "nlpaug/driftline")))
    print(f"\nall {len(PERTURBATIONS)} attacks and transformations: {total:.1f} s (target < 60 s)")
    check = registry.create("attack.universal_prefix", {"budget": budget, "sample_size": 100}).attach_model(
        model
    )
    (result,), seconds = timed(lambda: run_check(check, batch, COLUMNS, reference=batch))
    print(
        f"attack.universal_prefix (budget {budget} evaluations on 100 sentences): {seconds:.1f} s, "
        f"prefix {result.details.get('prefix')!r}, probability shift "
        f"{result.metrics.get('probability_shift', float('nan')):.3f}"
    )


def counter_peer(texts: list[str]) -> Counter:
    """The peer: a Python loop counting lower-cased whitespace-separated words."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(text.lower().split())
    return counts


def bench_drift(rows: int) -> None:
    sentences = sm.load_sentences()
    reference = sm.split_training_domain(sentences)["train"]
    batch = sample_sentences(sentences, rows, seed=2)
    print(f"\n## Text drift and abnormal text: {rows:,} sentences (reference {len(reference):,})\n")
    out_rows, total = [], 0.0
    for name in DRIFT_CHECKS:
        check = registry.create(name)
        profile, fit_seconds = timed(lambda check=check: check.fit(reference, COLUMNS))
        (result, *_), seconds = timed(
            lambda check=check, profile=profile: run_check(check, batch, COLUMNS, profile=profile)
        )
        total += seconds
        shown = {k: round(v, 4) for k, v in result.metrics.items()}
        out_rows.append((name, fit_seconds, seconds, str(shown)))
    print(table(out_rows, ("check", "fit s", "evaluate s", "metrics")))
    _, peer = timed(lambda: counter_peer(batch["text"].tolist()))
    print(f"\nall four on {rows:,} sentences: {total:.1f} s (target < 30 s)")
    print(f"peer, unigram counts with a Counter loop: {peer:.1f} s")
    print(f"peak RSS: {peak_rss_mb():.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack-rows", type=int, default=10_000)
    parser.add_argument("--drift-rows", type=int, default=1_000_000)
    parser.add_argument("--budget", type=int, default=300)
    args = parser.parse_args()
    bench_perturbations(args.attack_rows, args.budget)
    bench_drift(args.drift_rows)


if __name__ == "__main__":
    main()
