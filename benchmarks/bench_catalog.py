"""The whole tabular catalog (drift, abnormal input, performance, fairness; not subsets) on one batch.

Run: `.venv/bin/python -m benchmarks.bench_catalog [--rows N]`. Every registered check of those
families is fitted once on a reference of N rows × 50 columns (40 numeric, 10 categorical), then
evaluated on a shifted batch of the same size, one after the other, as a monitor run with one worker
would, and reports the total against the targets (10 s of evaluation, 4 GB of memory). The peer
comparisons (scipy, naive pandas, scikit-learn loops) are in the family benchmarks.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from benchmarks.measure import measure, peak_rss_mb, table
from benchmarks.synthetic import make_frame
from driftline.checks import infer_columns, registry, run_check
from driftline.checks.errors import CheckInputError, NotApplicable

FAMILIES = ("drift", "abnormal", "performance", "fairness", "schema")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    started = time.perf_counter()
    reference, current = make_frame(args.rows), make_frame(args.rows, shift=0.1, seed=1)
    build_s = time.perf_counter() - started
    columns = replace(infer_columns(reference), protected=("cat_0", "cat_1"))
    names = [n for n in registry.names() if registry.get(n).family in FAMILIES]
    print(
        f"{args.rows:,} rows x 40 numeric + 10 categorical columns, {len(names)} checks "
        f"(frames built in {build_s:.1f} s)"
    )
    rows, totals = [], {}
    for name in names:
        check = registry.create(name)
        try:
            profile, fit_s, _ = measure(lambda check=check: check.fit(reference, columns))
        except (NotApplicable, CheckInputError) as exc:
            rows.append((name, "skipped", str(exc)[:60], "", "", ""))
            continue
        results, eval_s, eval_mb = measure(
            lambda c=check, p=profile: run_check(c, current, columns, profile=p)
        )
        family = registry.get(name).family
        totals[family] = totals.get(family, 0.0) + eval_s
        rows.append((name, fit_s, eval_s, eval_mb, len(results), args.rows / eval_s))
    print(table(rows, ("check", "fit s", "eval s", "eval MB", "results", "rows/s")))
    print()
    print(
        table(
            [(f, s) for f, s in totals.items()] + [("catalog total", sum(totals.values()))],
            ("family", "eval s"),
        )
    )
    print(
        f"\nprocess peak RSS {peak_rss_mb():,.0f} MB (includes both frames); target: < 10 s eval, < 4,096 MB"
    )


if __name__ == "__main__":
    main()
