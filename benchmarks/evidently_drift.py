"""Evidently 0.7's DataDriftPreset over two Parquet files, as a user would run it in one process.

The peer side of bench_vs_evidently. It runs with the interpreter of Evidently's own virtualenv (Evidently
0.7 needs pandas < 3), so it imports nothing from driftline. It prints one JSON line: seconds spent
loading and computing (after imports), the number of columns compared and how many Evidently calls drifted.

python benchmarks/evidently_drift.py REFERENCE CURRENT --numeric a,b --categorical c,d
"""

from __future__ import annotations

import argparse
import json
import time


def _names(text: str) -> list[str]:
    """A comma-separated list of column names; an empty string is no columns."""
    return [name for name in text.split(",") if name]


def main() -> None:
    """Load both files, run the drift preset over the named columns and report timings and counts."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("reference")
    parser.add_argument("current")
    parser.add_argument("--numeric", default="", help="comma-separated numeric columns")
    parser.add_argument("--categorical", default="", help="comma-separated categorical columns")
    args = parser.parse_args()

    import pandas as pd
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    numeric, categorical = _names(args.numeric), _names(args.categorical)
    columns = numeric + categorical
    started = time.perf_counter()
    reference = pd.read_parquet(args.reference, columns=columns)
    current = pd.read_parquet(args.current, columns=columns)
    loaded = time.perf_counter()
    definition = DataDefinition(numerical_columns=numeric, categorical_columns=categorical)
    report = Report([DataDriftPreset(columns=columns)])
    snapshot = report.run(
        Dataset.from_pandas(current, data_definition=definition),
        Dataset.from_pandas(reference, data_definition=definition),
    )
    metrics = snapshot.dict()["metrics"]
    computed = time.perf_counter()
    drifted = next(
        (
            m["value"]["count"]
            for m in metrics
            if str(m.get("metric_name", "")).startswith("DriftedColumnsCount")
        ),
        None,
    )
    print(
        json.dumps(
            {
                "load_s": loaded - started,
                "compute_s": computed - loaded,
                "columns": len(columns),
                "drifted": drifted,
                "rows": [len(reference), len(current)],
            }
        )
    )


if __name__ == "__main__":
    main()
