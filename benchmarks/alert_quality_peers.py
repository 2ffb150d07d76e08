"""The peers' side of the alert-quality benchmark: Evidently 0.7 and NannyML 0.13 at their defaults.

Runs with the interpreter of the peer's own virtualenv (both need pandas < 3), so it imports nothing
from driftline. FOLDER holds `reference.parquet`, `batches.parquet` (every batch, a `batch` column
numbering them) and `columns.json` (numeric, categorical and text features, label, prediction,
score). Prints one JSON object: per signal, one flag per batch (null when the peer failed on it),
the failures' messages and the seconds spent.

- evidently: `DataDriftPreset()` over the features, label, prediction and score: the dataset-drift
  flag (its share-of-drifted-columns test fails) and the columns whose drift test fails;
- alibi: alibi-detect 0.13's `CVMDriftOnline` over the numeric features and score, `FETDriftOnline`
  over the label and prediction (binary), ERT 1,000 rows, windows of 20 and 40 rows, thresholds
  configured on 1,000 reference rows: fed a batch row by row from an empty window, a batch alarms
  when either detector does;
- nannyml: `UnivariateDriftCalculator` (default methods and thresholds) over the same columns less
  text, `CBPE` and `PerformanceCalculator` (ROC AUC, F1, accuracy), one chunk per batch: each is
  fitted on the reference once per batch size with chunk_size = that size, and a batch alerts when
  any of its rows in the result does. Batches too large for the reference to hold two chunks of their
  size are left out (NannyML's thresholds are the spread over the reference's chunks).

python benchmarks/alert_quality_peers.py {alibi,evidently,nannyml} FOLDER
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

METRICS = ["roc_auc", "f1", "accuracy"]
PRESET_EVERY = 10
MIN_REFERENCE_CHUNKS = 2
# alibi-detect's online detectors: the expected run time (rows between false alarms) and the test
# windows of its documentation's example; configuring thresholds holds O(reference rows²) memory per
# simulated stream, so the reference is subsampled, as its documentation advises
ALIBI_ERT = 1000
ALIBI_WINDOWS = [20, 40]
ALIBI_REFERENCE_ROWS = 1000

Flags = dict[str, list[Any]]
# flags per signal, failures, notes
Answer = tuple[Flags, list[str], list[str]]


def monitored(columns: dict[str, Any], text: bool = True) -> tuple[list[str], list[str], list[str]]:
    """Numeric, categorical and text columns the peers compare: features, score, label, prediction."""
    numeric = [*columns["numeric"], columns["score"]]
    categorical = [*columns["categorical"], columns["label"], columns["prediction"]]
    return numeric, categorical, list(columns["text"]) if text else []


def evidently_decisions(reference: Any, batch: Any, columns: dict[str, Any]) -> tuple[bool, list[str]]:
    """Evidently's dataset-drift flag and drifted columns of one batch, from the calculation that
    DataDriftPreset's drifted-columns count runs (`get_drift_for_columns`, default options, drift
    share 0.5), without the preset's plots, which take most of its time."""
    from evidently.legacy.calculations.data_drift import get_drift_for_columns
    from evidently.legacy.options.data_drift import DataDriftOptions
    from evidently.legacy.pipeline.column_mapping import ColumnMapping
    from evidently.legacy.utils.data_operations import process_columns

    numeric, categorical, text = monitored(columns)
    mapping = ColumnMapping(
        target=None,
        prediction=None,
        numerical_features=numeric,
        categorical_features=categorical,
        text_features=text,
    )
    drift = get_drift_for_columns(
        current_data=batch,
        reference_data=reference,
        dataset_columns=process_columns(reference, mapping),
        data_drift_options=DataDriftOptions(),
        drift_share_threshold=0.5,
        agg_data=True,
    )
    drifted = [name for name, column in drift.drift_by_columns.items() if column.drift_detected]
    return bool(drift.dataset_drift), drifted


def evidently_preset(reference: Any, batch: Any, columns: dict[str, Any]) -> tuple[bool, list[str]]:
    """The same two answers from a full `Report([DataDriftPreset()])` run, as a user runs it."""
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    numeric, categorical, text = monitored(columns)
    definition = DataDefinition(numerical_columns=numeric, categorical_columns=categorical, text_columns=text)
    names = numeric + categorical + text

    def dataset(frame: Any) -> Any:
        return Dataset.from_pandas(frame[names], data_definition=definition)

    report = Report([DataDriftPreset()], include_tests=True)
    failed = [
        t for t in report.run(dataset(batch), dataset(reference)).dict()["tests"] if t["status"] == "FAIL"
    ]
    drifted = [t["metric_config"]["params"]["column"] for t in failed if t["id"] == "drift"]
    return any(t["id"] == "lt" for t in failed), drifted


def evidently_flags(reference: Any, batches: list[Any], columns: dict[str, Any]) -> Answer:
    """Evidently's dataset-drift flag and drifted columns of every batch; on every
    `PRESET_EVERY`-th batch the full preset runs too, and any disagreement is reported."""
    flags: Flags = {"evidently.dataset_drift": [], "evidently.drifted_columns": []}
    errors: list[str] = []
    agreed = compared = 0
    for index, batch in enumerate(batches):
        try:
            decision = evidently_decisions(reference, batch, columns)
            if index % PRESET_EVERY == 0:
                compared += 1
                preset = evidently_preset(reference, batch, columns)
                agreed += (decision[0], sorted(decision[1])) == (preset[0], sorted(preset[1]))
        except Exception as exc:
            errors.append(f"evidently, batch of {len(batch)} rows: {type(exc).__name__}: {exc}")
            decision = (None, None)
        flags["evidently.dataset_drift"].append(decision[0])
        flags["evidently.drifted_columns"].append(decision[1])
    notes = [f"Evidently: the full DataDriftPreset, run on {compared} of the batches, agreed on {agreed}"]
    return flags, errors, notes


def nannyml_calculators(columns: dict[str, Any], size: int) -> dict[str, Any]:
    """The three NannyML calculators at their defaults, chunked so that one batch is one chunk."""
    import nannyml as nml

    numeric, categorical, _ = monitored(columns, text=False)
    outputs = {"y_pred_proba": columns["score"], "y_pred": columns["prediction"], "y_true": columns["label"]}
    binary = "classification_binary"
    return {
        "nannyml.univariate_drift": nml.UnivariateDriftCalculator(
            column_names=numeric + categorical,
            treat_as_categorical=categorical,
            chunk_size=size,
        ),
        "nannyml.cbpe": nml.CBPE(metrics=METRICS, problem_type=binary, chunk_size=size, **outputs),
        "nannyml.realised_performance": nml.PerformanceCalculator(
            metrics=METRICS, problem_type=binary, chunk_size=size, **outputs
        ),
    }


def chunk_alerts(result: Any) -> list[bool]:
    """Per analysis chunk, whether any of the result's `alert` columns is set."""
    frame = result.filter(period="analysis").to_df()
    alerts = frame.loc[:, [c for c in frame.columns if c[-1] == "alert"]]
    return [bool(v) for v in alerts.fillna(False).astype(bool).any(axis=1)]


def nannyml_flags(reference: Any, batches: list[Any], columns: dict[str, Any]) -> Answer:
    """NannyML's alerts per batch: batches of one size are concatenated and chunked by that size."""
    import pandas as pd

    by_size: dict[int, list[int]] = {}
    for index, batch in enumerate(batches):
        by_size.setdefault(len(batch), []).append(index)
    flags: Flags = {name: [None] * len(batches) for name in nannyml_calculators(columns, 1)}
    errors: list[str] = []
    for size, indices in sorted(by_size.items()):
        if len(reference) < MIN_REFERENCE_CHUNKS * size:
            errors.append(
                f"nannyml: batches of {size} rows left out: the reference holds fewer than "
                f"{MIN_REFERENCE_CHUNKS} chunks of that size, so the thresholds (the spread over the "
                "reference's chunks) are degenerate and every batch alerts"
            )
            continue
        analysis = pd.concat([batches[i] for i in indices], ignore_index=True)
        for name, calculator in nannyml_calculators(columns, size).items():
            try:
                fitted = calculator.fit(reference)
                # CBPE estimates (it needs no labels), the other two calculate
                result = (
                    fitted.estimate(analysis) if hasattr(fitted, "estimate") else fitted.calculate(analysis)
                )
                alerts = chunk_alerts(result)
                for index, alert in zip(indices, alerts, strict=True):
                    flags[name][index] = alert
            except Exception as exc:
                errors.append(f"{name}, batches of {size} rows: {type(exc).__name__}: {exc}")
    return flags, errors, []


def alibi_flags(reference: Any, batches: list[Any], columns: dict[str, Any]) -> Answer:
    """Whether alibi-detect's online detectors alarm within each batch, fed row by row."""
    import numpy as np
    from alibi_detect.cd import CVMDriftOnline, FETDriftOnline

    np.random.seed(0)  # the thresholds are configured on simulated streams of numpy's global generator
    numeric = [*columns["numeric"], columns["score"]]
    binary = [columns["label"], columns["prediction"]]
    sample = reference.sample(n=min(len(reference), ALIBI_REFERENCE_ROWS), random_state=0)
    options = {"ert": ALIBI_ERT, "window_sizes": ALIBI_WINDOWS, "verbose": False}
    detectors = [
        (CVMDriftOnline(sample[numeric].to_numpy(dtype=float), **options), numeric),
        (FETDriftOnline(sample[binary].to_numpy(dtype=float), **options), binary),
    ]
    flags: Flags = {"alibi.online_drift": []}
    errors: list[str] = []
    for batch in batches:
        try:
            flags["alibi.online_drift"].append(
                any(alarms(d, batch[c].to_numpy(dtype=float)) for d, c in detectors)
            )
        except Exception as exc:
            errors.append(f"alibi, batch of {len(batch)} rows: {type(exc).__name__}: {exc}")
            flags["alibi.online_drift"].append(None)
    return flags, errors, []


def alarms(detector: Any, rows: Any) -> bool:
    """Whether an online detector, reset to an empty window, alarms on any of the rows in turn."""
    detector.reset_state()
    return any(detector.predict(row)["data"]["is_drift"] for row in rows)


PEERS: dict[str, Callable[[Any, list[Any], dict[str, Any]], Answer]] = {
    "alibi": alibi_flags,
    "evidently": evidently_flags,
    "nannyml": nannyml_flags,
}


def main() -> None:
    """Read the folder, run one peer over every batch and print its flags as JSON."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    import pandas as pd

    columns = json.loads((args.folder / "columns.json").read_text())
    reference = pd.read_parquet(args.folder / "reference.parquet")
    frame = pd.read_parquet(args.folder / "batches.parquet")
    batches = [b.drop(columns="batch").reset_index(drop=True) for _, b in frame.groupby("batch", sort=True)]
    started = time.perf_counter()
    flags, errors, notes = PEERS[args.peer](reference, batches, columns)
    seconds = time.perf_counter() - started
    print(json.dumps({"flags": flags, "errors": errors, "notes": notes, "seconds": seconds}))


if __name__ == "__main__":
    main()
