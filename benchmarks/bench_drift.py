"""Speed and memory of the drift and overall-performance checks, against scipy and naive pandas peers.

Run: `.venv/bin/python -m benchmarks.bench_drift [--rows N]`. The reference profile is fitted once
(timed separately), then every check is evaluated on a shifted batch of the same size. Peers computed
in the same run: `scipy.stats.ks_2samp` per numeric column, a naive PSI per column with `pd.cut` /
`value_counts` (numeric) or `value_counts` (categorical), and a numpy floor for drift.numeric: per
column, the batch sorted, the KS distance from two `searchsorted` calls against the reference sorted
beforehand (as a fitted profile is), and the PSI from the ten reference deciles and a `bincount`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

from benchmarks.measure import measure, peak_rss_mb
from benchmarks.synthetic import make_frame
from driftline.checks import infer_columns, registry
from driftline.checks.columns import Columns

FIRST_SET = ("drift.numeric", "drift.categorical", "drift.label", "drift.prediction", "performance.overall")
REST = (
    "drift.label_psi",
    "drift.predicted_label",
    "performance.calibration",
    "drift.correlation",
    "drift.mutual_info_features",
    "drift.mutual_info_label",
)


def naive_psi(reference: pd.Series, current: pd.Series, bins: int = 10) -> float:
    """PSI the straightforward pandas way: quantile edges, pd.cut, value_counts, add-one smoothing."""
    if isinstance(reference.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(reference):
        ref, cur = reference.value_counts(), current.value_counts()
    else:
        edges = np.unique(np.quantile(reference, np.linspace(0, 1, bins + 1)[1:-1]))
        cut = [-np.inf, *edges, np.inf]
        ref = pd.cut(reference, cut).value_counts()
        cur = pd.cut(current, cut).value_counts()
    ref, cur = ref.align(cur, fill_value=0)
    p = (ref + 1) / (ref.sum() + len(ref))
    q = (cur + 1) / (cur.sum() + len(cur))
    return float(((q - p) * np.log(q / p)).sum())


def run_checks(
    names: tuple[str, ...], reference: pd.DataFrame, current: pd.DataFrame, columns: Columns
) -> list[tuple[str, float, float, float, float]]:
    """(name, fit s, fit MB, evaluate s, evaluate MB) of each check."""
    rows = []
    for name in names:
        check = registry.create(name)
        profile, fit_s, fit_mb = measure(lambda check=check: check.fit(reference, columns))
        _, eval_s, eval_mb = measure(
            lambda check=check, profile=profile: check.evaluate(current, profile, columns)
        )
        rows.append((name, fit_s, fit_mb, eval_s, eval_mb))
    return rows


def peers(reference: pd.DataFrame, current: pd.DataFrame, columns: Columns) -> dict[str, tuple[float, float]]:
    """Seconds and traced peak MB of the peer computations over the same columns."""

    def ks_all() -> None:
        for c in columns.numeric:
            stats.ks_2samp(reference[c].to_numpy(), current[c].to_numpy())

    def psi_numeric() -> None:
        for c in columns.numeric:
            naive_psi(reference[c], current[c])

    def psi_categorical() -> None:
        for c in columns.categorical:
            naive_psi(reference[c], current[c])

    fitted = {c: np.sort(reference[c].to_numpy()) for c in columns.numeric}
    deciles = {c: np.quantile(fitted[c], np.linspace(0, 1, 11)[1:-1]) for c in columns.numeric}

    def numpy_floor() -> None:
        for c in columns.numeric:
            ref, cur = fitted[c], np.sort(current[c].to_numpy())
            points = np.concatenate([ref, cur])
            ks = np.abs(
                np.searchsorted(ref, points, "right") / len(ref)
                - np.searchsorted(cur, points, "right") / len(cur)
            ).max()
            p = np.bincount(np.searchsorted(deciles[c], ref), minlength=10) / len(ref)
            q = np.bincount(np.searchsorted(deciles[c], cur), minlength=10) / len(cur)
            p, q = np.clip(p, 1e-4, None), np.clip(q, 1e-4, None)
            float(ks + ((q - p) * np.log(q / p)).sum())

    out = {}
    for label, fn in (
        ("ks_2samp", ks_all),
        ("naive_psi_numeric", psi_numeric),
        ("naive_psi_cat", psi_categorical),
        ("numpy_floor", numpy_floor),
    ):
        _, seconds, peak = measure(fn)
        out[label] = (seconds, peak)
    return out


def table(rows: list[tuple[str, float, float, float, float]], n_rows: int) -> None:
    print(f"{'check':<30} {'fit s':>8} {'fit MB':>8} {'eval s':>8} {'eval MB':>8} {'eval rows/s':>12}")
    for name, fit_s, fit_mb, eval_s, eval_mb in rows:
        print(f"{name:<30} {fit_s:8.2f} {fit_mb:8.0f} {eval_s:8.2f} {eval_mb:8.0f} {n_rows / eval_s:12.3g}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--skip-rest", action="store_true", help="only the first set of checks")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    reference = make_frame(args.rows)
    current = make_frame(args.rows, shift=0.1, seed=1)
    columns = infer_columns(reference)
    shape = f"{len(columns.numeric)} numeric + {len(columns.categorical)} categorical columns"
    print(f"{args.rows:,} rows x {shape} (frames built in {time.perf_counter() - start:.1f} s)\n")

    first = run_checks(FIRST_SET, reference, current, columns)
    print("First set (profile fitted once beforehand):")
    table(first, args.rows)
    fit_total = sum(r[1] for r in first)
    eval_total = sum(r[3] for r in first)
    print(f"{'total':<30} {fit_total:8.2f} {'':>8} {eval_total:8.2f}\n")

    peer = peers(reference, current, columns)
    ours = {name: eval_s for name, _, _, eval_s, _ in first}
    print(f"{'peer':<30} {'seconds':>8} {'MB':>8}   comparison (peer s / our eval s)")
    comparisons = {
        "ks_2samp": ("drift.numeric", "PSI + KS, 40 columns"),
        "naive_psi_numeric": ("drift.numeric", "PSI + KS, 40 columns"),
        "naive_psi_cat": ("drift.categorical", "PSI + chi-square, 10 columns"),
        "numpy_floor": ("drift.numeric", "sort, KS distance and PSI a column"),
    }
    for label, (seconds, peak) in peer.items():
        check, what = comparisons[label]
        print(f"{label:<30} {seconds:8.2f} {peak:8.0f}   {seconds / ours[check]:5.1f}x vs {check} ({what})")

    if not args.skip_rest:
        print("\nOther checks:")
        table(run_checks(REST, reference, current, columns), args.rows)
    maxrss = peak_rss_mb()
    print(
        f"\nprocess peak RSS {maxrss:,.0f} MB (includes both frames); timings are noisy on a shared machine"
    )


if __name__ == "__main__":
    main()
