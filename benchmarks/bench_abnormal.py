"""Speed and memory of the abnormal-input checks, against a naive pandas peer per column.

Run: `.venv/bin/python -m benchmarks.bench_abnormal [--rows N]`. The frames are `make_frame` (40 numeric
+ 10 categorical columns) plus six string columns (e-mail, URL, domain, a name with nulls, a country
and a time zone that follows it). The batch is shifted and carries a few unseen values, case variants,
empty strings and inconsistent pairs. Every profile is fitted once beforehand (timed separately), then
each check is evaluated on the batch. The peer does the same per column with row-level pandas
(`isin`, `value_counts`, `str` methods, a merge for the pairs), with its reference summaries also
computed beforehand; it computes neither model impact nor failing ids.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.measure import measure, peak_rss_mb
from benchmarks.synthetic import make_frame
from driftline.checks import infer_columns, registry
from driftline.checks.columns import Columns

NAMES = (
    "abnormal.numeric_outliers",
    "abnormal.out_of_range",
    "abnormal.nulls",
    "abnormal.rare_categories",
    "abnormal.unseen_categorical",
    "abnormal.unseen_url",
    "abnormal.unseen_domain",
    "abnormal.unseen_email",
    "abnormal.empty_string",
    "abnormal.capitalization",
    "abnormal.required_characters",
    "abnormal.inconsistencies",
)
COUNTRIES = np.array(["USA", "France", "Japan", "Brazil", "India"])
ZONES = np.array(["EST", "CET", "JST", "BRT", "IST"])


def add_strings(frame: pd.DataFrame, seed: int, abnormal: bool) -> pd.DataFrame:
    """String columns; with `abnormal`, 0.1% of their values are unseen, recased, empty or inconsistent."""
    rng = np.random.default_rng(seed)
    n = len(frame)
    k = np.arange(5000)
    vocab = {
        "email": np.char.add(np.char.add("user", k.astype(str)), "@mail.example.com"),
        "site": np.char.add(np.char.add("https://site", k.astype(str)), ".org/page"),
        "host": np.char.add(np.char.add("host", k[:1000].astype(str)), ".net"),
        "name": np.char.add("Name", k[:2000].astype(str)),
    }
    out = {c: v[rng.integers(0, len(v), n)].astype(object) for c, v in vocab.items()}
    country = rng.integers(0, len(COUNTRIES), n)
    zone = np.where(rng.random(n) < 0.98, country, rng.integers(0, len(ZONES), n))
    out["country"], out["tz"] = COUNTRIES[country].astype(object), ZONES[zone].astype(object)
    out["name"][rng.random(n) < 0.02] = None
    if abnormal:
        rows = rng.choice(n, size=6 * max(n // 1000, 1), replace=False).reshape(6, -1)
        out["email"][rows[0]] = "new.user@other.example.org"
        out["site"][rows[1]] = "https://unknown.example.net/x"
        out["host"][rows[2]] = "unknown.io"
        out["name"][rows[3]] = ""
        out["country"][rows[4]] = np.char.lower(COUNTRIES[country[rows[4]]])
        out["tz"][rows[5]] = ZONES[(country[rows[5]] + 1) % len(ZONES)]
    strings = pd.DataFrame({c: pd.Series(v, dtype="str") for c, v in out.items()}, index=frame.index)
    return pd.concat([frame, strings], axis=1)


def run_ours(
    reference: pd.DataFrame, current: pd.DataFrame, columns: Columns
) -> tuple[dict[str, Any], list[tuple[str, float, float, float, float, int]]]:
    """Profiles and (name, fit s, fit MB, evaluate s, evaluate MB, failing rows) of every check."""
    profiles, rows = {}, []
    for name in NAMES:
        check = registry.create(name)
        profile, fit_s, fit_mb = measure(lambda check=check: check.fit(reference, columns))
        results, eval_s, eval_mb = measure(
            lambda check=check, profile=profile: check.evaluate(current, profile, columns)
        )
        profiles[name] = profile
        failing = sum(r.failing_rows or 0 for r in results)
        rows.append((name, fit_s, fit_mb, eval_s, eval_mb, failing))
    return profiles, rows


def naive_peers(
    reference: pd.DataFrame, current: pd.DataFrame, profiles: dict[str, Any]
) -> dict[str, Callable[[], int]]:
    """Row-level pandas equivalents of each check (failing-row totals), reference summaries made now."""
    targets = {name: profile["targets"] for name, profile in profiles.items()}
    vocab = {c: reference[c].dropna().unique() for c in targets["abnormal.unseen_categorical"]}
    lowered = {c: pd.Series(v, dtype="str").str.lower().unique() for c, v in vocab.items()}
    counts = {c: reference[c].value_counts(normalize=True) for c in vocab}
    pair_tables = {}
    for pair in targets["abnormal.inconsistencies"].values():
        a, b = pair["columns"]
        joint = reference.value_counts([a, b], normalize=True).rename("joint").reset_index()
        joint["expected"] = joint[a].map(counts[a]).astype(float) * joint[b].map(counts[b]).astype(float)
        pair_tables[(a, b)] = joint

    def ranges(name: str) -> int:
        return sum(
            int(((current[c] < t["lower"]) | (current[c] > t["upper"])).sum())
            for c, t in targets[name].items()
        )

    def unseen(name: str) -> int:
        return sum(int((~current[c].isin(vocab[c]) & current[c].notna()).sum()) for c in targets[name])

    def rare() -> int:
        total = 0
        for c in targets["abnormal.rare_categories"]:
            share = counts[c]
            total += int(current[c].isin(share.index[share < 0.1 / len(share)]).sum())
        return total

    def capitalization() -> int:
        return sum(
            int((~current[c].isin(vocab[c]) & current[c].str.lower().isin(lowered[c])).sum())
            for c in targets["abnormal.capitalization"]
        )

    def required() -> int:
        total = 0
        for c, t in targets["abnormal.required_characters"].items():
            found = pd.concat([current[c].str.contains(ch, regex=False) for ch in t["required"]], axis=1)
            total += int((~found.any(axis=1) & current[c].notna()).sum())
        return total

    def inconsistencies() -> int:
        total = 0
        for (a, b), joint in pair_tables.items():
            merged = current[[a, b]].merge(joint, on=[a, b], how="left")
            known = current[a].isin(vocab[a]).to_numpy() & current[b].isin(vocab[b]).to_numpy()
            low = (merged["joint"].fillna(0.0) < merged["expected"].fillna(np.inf) * 0.02).to_numpy()
            total += int((low & known).sum())
        return total

    return {
        "abnormal.numeric_outliers": lambda: ranges("abnormal.numeric_outliers"),
        "abnormal.out_of_range": lambda: ranges("abnormal.out_of_range"),
        "abnormal.nulls": lambda: sum(int(current[c].isna().sum()) for c in targets["abnormal.nulls"]),
        "abnormal.rare_categories": rare,
        "abnormal.unseen_categorical": lambda: unseen("abnormal.unseen_categorical"),
        "abnormal.unseen_url": lambda: unseen("abnormal.unseen_url"),
        "abnormal.unseen_domain": lambda: unseen("abnormal.unseen_domain"),
        "abnormal.unseen_email": lambda: unseen("abnormal.unseen_email"),
        "abnormal.empty_string": lambda: sum(
            int((current[c] == "").sum()) for c in targets["abnormal.empty_string"]
        ),
        "abnormal.capitalization": capitalization,
        "abnormal.required_characters": required,
        "abnormal.inconsistencies": inconsistencies,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    reference = add_strings(make_frame(args.rows), seed=10, abnormal=False)
    current = add_strings(make_frame(args.rows, shift=0.1, seed=1), seed=11, abnormal=True)
    columns = infer_columns(reference)
    print(
        f"{args.rows:,} rows x {len(columns.numeric)} numeric + {len(columns.categorical)} categorical "
        f"columns (frames built in {time.perf_counter() - start:.1f} s)\n"
    )
    profiles, ours = run_ours(reference, current, columns)
    peers = naive_peers(reference, current, profiles)
    header = f"{'check':<30} {'fit s':>7} {'eval s':>7} {'eval MB':>8} {'rows/s':>9} {'failing':>8}"
    print(f"{header} {'peer s':>7} {'peer MB':>8} {'peer fail':>9} {'peer/ours':>9}")
    totals = np.zeros(3)
    for name, fit_s, eval_s, eval_mb, failing in ((r[0], r[1], r[3], r[4], r[5]) for r in ours):
        peer_failing, peer_s, peer_mb = measure(peers[name])
        totals += (fit_s, eval_s, peer_s)
        print(
            f"{name:<30} {fit_s:7.2f} {eval_s:7.2f} {eval_mb:8.0f} {args.rows / eval_s:9.3g} {failing:8d} "
            f"{peer_s:7.2f} {peer_mb:8.0f} {peer_failing:9d} {peer_s / eval_s:8.1f}x"
        )
    print(f"{'total':<30} {totals[0]:7.2f} {totals[1]:7.2f} {'':>8} {'':>9} {'':>8} {totals[2]:7.2f}")
    maxrss = peak_rss_mb()
    print(
        f"\nprocess peak RSS {maxrss:,.0f} MB (includes both frames); timings are noisy on a shared machine"
    )


if __name__ == "__main__":
    main()
