"""Label-free estimates against the truth and against NannyML's CBPE (performance.estimated).

Two data sets: the demo's census batches (ACS employment of Massachusetts: reference survey year 2015,
six batches 2016-2018, the later ones aged) and UCI Adult (the alert-quality benchmark's gradient
boosting model, its reference, six clean batches of 300 to 3,000 rows from its held-out pool and two
batches of respondents aged 50 and over). `performance.estimated` is fitted on the reference, each
batch's labels are hidden, the metrics are estimated, then computed from the labels with scikit-learn.
Printed per data set, batch and metric: the estimate ± its band's half-width, the realised value,
whether the band holds it, and the realised metric's simulated spread (`realised_error`, the grade's
noise). With `--nannyml-python` (an interpreter with nannyml 0.13.1; `--nannyml` creates the
alert-quality benchmark's cached virtualenv) the same batches are estimated by NannyML's CBPE and the
table adds its estimate ± 3 sampling errors and the ratios driftline / NannyML of the estimates and of
the band half-widths.

    .venv/bin/python -m benchmarks.estimate_vs_truth [--nannyml | --nannyml-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

from driftline.checks.columns import Columns
from driftline.checks.performance_estimated import EstimatedPerformance

SKLEARN = {
    "accuracy": lambda y, d: accuracy_score(y, d["prediction"]),
    "precision": lambda y, d: precision_score(y, d["prediction"]),
    "recall": lambda y, d: recall_score(y, d["prediction"]),
    "f1": lambda y, d: f1_score(y, d["prediction"]),
    "auc": lambda y, d: roc_auc_score(y, d["score"]),
}
NANNYML_NAMES = {
    "accuracy": "accuracy",
    "precision": "precision",
    "recall": "recall",
    "f1": "f1",
    "auc": "roc_auc",
}
ADULT_CLEAN_ROWS = (300, 1000, 3000, 300, 1000, 3000)
ADULT_AGED_ROWS = 1500

NANNYML_SCRIPT = """
import json, sys, warnings
import pandas as pd, nannyml as nml
warnings.filterwarnings("ignore")
folder, label, names, batches = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
reference = pd.read_parquet(f"{folder}/reference.parquet")
estimator = nml.CBPE(y_pred_proba="score", y_pred="prediction", y_true=label, metrics=names,
                     chunk_number=1, problem_type="classification_binary").fit(reference)
out = {"needs_calibration": bool(estimator.needs_calibration), "batches": {}}
for batch in batches:
    frame = pd.read_parquet(f"{folder}/{batch}.parquet").drop(columns=label)
    table = estimator.estimate(frame).to_df()
    row = table[table[("chunk", "period")] == "analysis"].iloc[0]
    out["batches"][batch] = {m: [float(row[(m, "value")]), float(row[(m, "sampling_error")])] for m in names}
print(json.dumps(out))
"""


def census_batches(folder: Path) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], str]:
    """The demo's reference and batches (built under `folder`), and the label column."""
    from driftline.data.demo import BATCHES, LABEL, build_demo_data

    build_demo_data(folder)
    reference = pd.read_parquet(folder / "data" / "reference.parquet")
    batches = {b: pd.read_parquet(folder / "data" / "batches" / f"{b}.parquet") for b, _, _ in BATCHES}
    return reference, batches, LABEL


def adult_batches() -> tuple[pd.DataFrame, dict[str, pd.DataFrame], str]:
    """UCI Adult's reference, six clean batches and two of respondents aged 50 and over."""
    from benchmarks.alert_data import adult, draw

    data = adult()
    rng = np.random.default_rng(0)
    batches = {f"clean-{i + 1}-{n}": draw(data.pool, n, rng) for i, n in enumerate(ADULT_CLEAN_ROWS)}
    aged = data.pool[data.pool["age"] >= 50].reset_index(drop=True)
    for i in range(2):
        batches[f"aged-{i + 1}-{ADULT_AGED_ROWS}"] = draw(aged, ADULT_AGED_ROWS, rng)
    return data.reference, batches, data.roles["label"]


def measure(reference: pd.DataFrame, batches: dict[str, pd.DataFrame], label: str) -> list[dict]:
    """One row per batch and metric: estimate, band, realised spread, realised value, inside or not."""
    columns = Columns(label=label, prediction="prediction", score="score", task="binary")
    check = EstimatedPerformance()
    profile = check.fit(reference, columns)
    rows = []
    for batch_id, batch in batches.items():
        results = {r.target: r for r in check.evaluate(batch.drop(columns=label), profile, columns)}
        for metric, truth in SKLEARN.items():
            m = results[metric].metrics
            value = float(truth(batch[label].to_numpy(), batch))
            rows.append(
                {
                    "batch": batch_id,
                    "metric": metric,
                    "estimated": m["estimated"],
                    "half_width": m["upper"] - m["estimated"],
                    "sampling_error": m["sampling_error"],
                    "realised_error": m["realised_error"],
                    "realised": value,
                    "inside": bool(m["lower"] <= value <= m["upper"]),
                }
            )
    return rows


def nannyml_estimates(
    python: str, reference: pd.DataFrame, batches: dict[str, pd.DataFrame], label: str
) -> dict:
    """NannyML CBPE's estimates and sampling errors of the same batches, run in `python`."""
    with tempfile.TemporaryDirectory() as tmp:
        reference.to_parquet(Path(tmp) / "reference.parquet")
        for batch_id, batch in batches.items():
            batch.to_parquet(Path(tmp) / f"{batch_id}.parquet")
        names = json.dumps(list(NANNYML_NAMES.values()))
        done = subprocess.run(
            [python, "-c", NANNYML_SCRIPT, tmp, label, names, json.dumps(list(batches))],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "NML_DISABLE_USAGE_LOGGING": "1", "DO_NOT_TRACK": "1"},
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(name: str, rows: list[dict], peer: dict | None) -> None:
    """A Markdown table, one line per batch and metric, then per metric the hit counts and ratios."""
    header = "| data | batch | metric | estimated ± band | realised | inside | realised spread |"
    rule = "| --- | --- | --- | --- | --- | --- | --- |"
    if peer:
        header += " NannyML CBPE ± 3·SE | estimate ratio | band ratio |"
        rule += " --- | --- | --- |"
    print(header)
    print(rule)
    for r in rows:
        line = (
            f"| {name} | {r['batch']} | {r['metric']} | {r['estimated']:.4f} ± {r['half_width']:.4f} "
            f"| {r['realised']:.4f} | {'yes' if r['inside'] else 'NO'} | {r['realised_error']:.4f} |"
        )
        if peer:
            value, error = peer["batches"][r["batch"]][NANNYML_NAMES[r["metric"]]]
            r["estimate_ratio"], r["band_ratio"] = r["estimated"] / value, r["sampling_error"] / error
            line += f" {value:.4f} ± {3 * error:.4f} | {r['estimate_ratio']:.5f} | {r['band_ratio']:.4f} |"
        print(line)
    print()
    for metric in SKLEARN:
        own = [r for r in rows if r["metric"] == metric]
        hits = sum(r["inside"] for r in own)
        spread = sum(abs(r["realised"] - r["estimated"]) <= 3 * r["realised_error"] for r in own)
        line = (
            f"{name} {metric}: band holds the realised value in {hits}/{len(own)} batches, ± 3 realised "
            f"spreads in {spread}/{len(own)}; mean |estimate - realised| "
            f"{np.mean([abs(r['estimated'] - r['realised']) for r in own]):.4f}"
        )
        if peer:
            estimates = [abs(r["estimate_ratio"] - 1) for r in own]
            bands = [r["band_ratio"] for r in own]
            line += (
                f"; estimates within {max(estimates):.1e} of NannyML's, band ratio "
                f"{min(bands):.4f}-{max(bands):.4f}"
            )
        print(line)
    print()


def nannyml_interpreter(args: argparse.Namespace) -> str | None:
    """The interpreter NannyML runs in: given, or the alert-quality benchmark's cached virtualenv."""
    if args.nannyml_python:
        return args.nannyml_python
    if not args.nannyml:
        return None
    from benchmarks.alert_quality import default_cache, peer_python

    python, how = peer_python("nannyml", default_cache())
    if python is None:
        raise SystemExit(how)
    return str(python)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nannyml-python", help="an interpreter with nannyml 0.13.1 installed")
    parser.add_argument(
        "--nannyml", action="store_true", help="use (and create) the cached NannyML virtualenv"
    )
    args = parser.parse_args()
    python = nannyml_interpreter(args)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (reference, batches, label) in {
            "census": census_batches(Path(tmp)),
            "adult": adult_batches(),
        }.items():
            rows = measure(reference, batches, label)
            peer = nannyml_estimates(python, reference, batches, label) if python else None
            if peer:
                print(f"{name}: NannyML needs_calibration {peer['needs_calibration']}\n")
            print_table(name, rows, peer)


if __name__ == "__main__":
    main()
