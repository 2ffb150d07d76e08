"""Label-free estimates against the truth on the demo's census batches (performance.estimated).

Builds the demo data (reference survey year 2015, six batches 2016-2018, the later ones aged), fits
`performance.estimated` on the reference, hides each batch's labels, estimates, then computes the
realised metric from the labels with scikit-learn. Prints one row per batch and metric: estimate ±
band half-width, realised value, and whether the band holds it. With `--nannyml-python`, the same
batches are also estimated by NannyML's CBPE in that interpreter (a separate venv with nannyml) and
shown side by side.

    .venv/bin/python -m benchmarks.estimate_vs_truth [--nannyml-python /tmp/nml/bin/python]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

from driftline.checks.columns import Columns
from driftline.checks.performance_estimated import EstimatedPerformance
from driftline.data.demo import BATCHES, LABEL

COLUMNS = Columns(label=LABEL, prediction="prediction", score="score", task="binary")
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

NANNYML_SCRIPT = """
import json, sys, warnings
import pandas as pd, nannyml as nml
warnings.filterwarnings("ignore")
folder, label, names = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
reference = pd.read_parquet(f"{folder}/data/reference.parquet")
estimator = nml.CBPE(y_pred_proba="score", y_pred="prediction", y_true=label, metrics=names,
                     chunk_number=1, problem_type="classification_binary").fit(reference)
out = {"needs_calibration": bool(estimator.needs_calibration), "batches": {}}
for batch in json.loads(sys.argv[4]):
    frame = pd.read_parquet(f"{folder}/data/batches/{batch}.parquet").drop(columns=label)
    table = estimator.estimate(frame).to_df()
    row = table[table[("chunk", "period")] == "analysis"].iloc[0]
    out["batches"][batch] = {m: [float(row[(m, "value")]), float(row[(m, "sampling_error")])] for m in names}
print(json.dumps(out))
"""


def measure(folder: Path) -> list[dict[str, object]]:
    """One row per batch and metric: estimate, band, realised value, inside or not."""
    from driftline.data.demo import build_demo_data

    build_demo_data(folder)
    reference = pd.read_parquet(folder / "data" / "reference.parquet")
    check = EstimatedPerformance()
    profile = check.fit(reference, COLUMNS)
    rows = []
    for batch_id, _, _ in BATCHES:
        batch = pd.read_parquet(folder / "data" / "batches" / f"{batch_id}.parquet")
        results = {r.target: r for r in check.evaluate(batch.drop(columns=LABEL), profile, COLUMNS)}
        for metric, truth in SKLEARN.items():
            m = results[metric].metrics
            value = float(truth(batch[LABEL].to_numpy(), batch))
            rows.append(
                {
                    "batch": batch_id,
                    "metric": metric,
                    "estimated": m["estimated"],
                    "half_width": m["upper"] - m["estimated"],
                    "sampling_error": m["sampling_error"],
                    "realised": value,
                    "inside": bool(m["lower"] <= value <= m["upper"]),
                }
            )
    return rows


def nannyml_estimates(python: str, folder: Path) -> dict[str, object]:
    """NannyML CBPE's estimates and sampling errors of the same batches, run in `python`."""
    names = json.dumps(list(NANNYML_NAMES.values()))
    batches = json.dumps([b for b, _, _ in BATCHES])
    done = subprocess.run(
        [python, "-c", NANNYML_SCRIPT, str(folder), LABEL, names, batches],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(rows: list[dict[str, object]], peer: dict[str, object] | None) -> None:
    """A Markdown table, one line per batch and metric, then the hit counts."""
    header = "| batch | metric | estimated ± band | realised | inside |"
    rule = "| --- | --- | --- | --- | --- |"
    if peer:
        header += " NannyML CBPE (± 3·SE) | |Δ estimate| |"
        rule += " --- | --- |"
    print(header)
    print(rule)
    for r in rows:
        line = (
            f"| {r['batch']} | {r['metric']} | {r['estimated']:.4f} ± {r['half_width']:.4f} "
            f"| {r['realised']:.4f} | {'yes' if r['inside'] else 'NO'} |"
        )
        if peer:
            value, error = peer["batches"][r["batch"]][NANNYML_NAMES[r["metric"]]]
            line += f" {value:.4f} ± {3 * error:.4f} | {abs(value - r['estimated']):.1e} |"
        print(line)
    print()
    for metric in SKLEARN:
        hits = [r["inside"] for r in rows if r["metric"] == metric]
        errors = [abs(r["estimated"] - r["realised"]) for r in rows if r["metric"] == metric]
        print(
            f"{metric}: band holds the realised value in {sum(hits)}/{len(hits)} batches; "
            f"mean |estimate - realised| {np.mean(errors):.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nannyml-python", help="an interpreter with nannyml installed, for a side-by-side run"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = measure(folder)
        peer = nannyml_estimates(args.nannyml_python, folder) if args.nannyml_python else None
    if peer:
        print(f"NannyML needs_calibration: {peer['needs_calibration']}\n")
    print_table(rows, peer)


if __name__ == "__main__":
    main()
