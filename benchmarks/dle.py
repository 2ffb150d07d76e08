"""Direct loss estimation: driftline's performance.estimated_regression against NannyML 0.13's DLE.

A regression model (scikit-learn's HistGradientBoostingRegressor) predicts age (`AGEP`) from the other
answers of the ACS Massachusetts survey shipped with driftline; it is trained on 5,000 rows of 2015
and the reference is 10,000 other rows of 2015. Both estimators are fitted on that reference and
estimate, labels hidden, the same chunks of `--chunk-rows` rows:

- clean: `--chunks` chunks of respondents of 2016 and 2017 (no selection: the population of the
  reference, a year or two later);
- schooling >= master's: the 2018 respondents with a master's degree or more (`SCHL` >= 22), adults
  of every age, whose age the model guesses worse.

The realised MAE and RMSE of each chunk come from scikit-learn. Printed per scenario and metric: the
realised value and both estimates (means over the chunks), the estimates' mean absolute error, the
share of chunks whose band (± 3 sampling errors, both tools' default) holds the realised value, the
chunks driftline grades medium or worse (a monitor's default alert; each chunk graded on its own, so
at 99% over its two metrics) and those NannyML alerts on, driftline's grades, and the seconds each
tool spent fitting and estimating (both on one thread). Then, chunk by chunk, the ratio of the two
estimates and of their band half-widths. A last table compares each tool's estimate
on the reference itself with the realised value: driftline's is cross-fitted (held out), NannyML's
is in-sample.

NannyML runs in its own virtualenv (it needs pandas < 3), created on first use.

    .venv/bin/python -m benchmarks.dle [--chunks 30] [--chunk-rows 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import mean_absolute_error, root_mean_squared_error
from threadpoolctl import threadpool_limits

from benchmarks.alert_quality import PEERS, default_cache
from benchmarks.measure import table, venv_python
from driftline.checks.columns import Columns
from driftline.checks.performance_dle import EstimatedRegressionPerformance
from driftline.checks.result import severity_rank
from driftline.checks.runner import run_check
from driftline.data.demo import DATA_FILE

LABEL, PREDICTION = "AGEP", "predicted_age"
NUMERIC = ("SCHL",)
CATEGORICAL = ("MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR", "DEYE")
CATEGORICAL += ("DREM", "SEX", "RAC1P")
COLUMNS = Columns(
    label=LABEL, prediction=PREDICTION, numeric=NUMERIC, categorical=CATEGORICAL, task="regression"
)
METRICS = ("mae", "rmse")
REALISED = {"mae": mean_absolute_error, "rmse": root_mean_squared_error}
NANNYML = PEERS["nannyml"]
NANNYML_VENV = default_cache() / "venv-nannyml"  # the alert-quality benchmark's NannyML virtualenv
VENV_WAIT_SECONDS = 600  # a virtualenv another benchmark is still installing is waited for, not cleared

NANNYML_SCRIPT = """
import json, sys, time, warnings
import pandas as pd, nannyml as nml
warnings.filterwarnings("ignore")
folder = sys.argv[1]
spec = json.loads(open(f"{folder}/spec.json").read())
reference = pd.read_parquet(f"{folder}/reference.parquet")
chunks = pd.read_parquet(f"{folder}/chunks.parquet")
started = time.perf_counter()
estimator = nml.DLE(feature_column_names=spec["features"], y_pred=spec["prediction"], y_true=spec["label"],
                    metrics=["mae", "rmse"], chunk_size=spec["chunk_rows"]).fit(reference)
out = {"fit_seconds": time.perf_counter() - started, "scenarios": {}, "estimate_seconds": 0.0}
for scenario, rows in chunks.groupby("scenario", sort=False):
    started = time.perf_counter()
    rows = rows.drop(columns=["scenario", "chunk", spec["label"]]).reset_index(drop=True)
    result = estimator.estimate(rows)
    out["estimate_seconds"] += time.perf_counter() - started
    frame = result.to_df()
    analysis = frame[frame[("chunk", "period")] == "analysis"]
    out["scenarios"][scenario] = {
        m: {k: [float(v) for v in analysis[(m, k)]]
            for k in ("value", "lower_confidence_boundary", "upper_confidence_boundary", "alert")}
        for m in ("mae", "rmse")
    }
    ref = frame[frame[("chunk", "period")] == "reference"]
    out["reference"] = {m: [float(ref[(m, "value")].mean()), float(ref[(m, "realized")].mean())]
                        for m in ("mae", "rmse")}
print(json.dumps(out))
"""


# --- data ------------------------------------------------------------------------------------------------


def census(chunks: int, chunk_rows: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scored reference and the scored analysis chunks (columns `scenario` and `chunk` added)."""
    data = pd.read_parquet(DATA_FILE).drop(columns=["id", "employed"])
    data["SCHL"] = data["SCHL"].astype("int64")
    features = list(COLUMNS.features)
    base = data[data["year"] == 2015].sample(frac=1.0, random_state=0)
    with threadpool_limits(1):
        model = HistGradientBoostingRegressor(categorical_features="from_dtype", random_state=0)
        model.fit(base.iloc[:5000][features], base.iloc[:5000][LABEL])

    def scored(rows: pd.DataFrame) -> pd.DataFrame:
        rows = rows.drop(columns="year").reset_index(drop=True)
        return rows.assign(**{PREDICTION: model.predict(rows[features])})

    later = data[data["year"].isin([2016, 2017])].sample(n=chunks * chunk_rows, random_state=1)
    tail = data[(data["year"] == 2018) & (data["SCHL"] >= 22)].sample(frac=1.0, random_state=2)
    tail = tail.iloc[: len(tail) // chunk_rows * chunk_rows]
    scenarios = {"clean": later, "schooling >= master's": tail}
    analysis = pd.concat(
        [
            scored(rows).assign(scenario=name, chunk=np.arange(len(rows)) // chunk_rows)
            for name, rows in scenarios.items()
        ],
        ignore_index=True,
    )
    return scored(base.iloc[5000:15000]), analysis


# --- the two estimators ----------------------------------------------------------------------------------


def driftline_side(reference: pd.DataFrame, analysis: pd.DataFrame) -> dict[str, Any]:
    """driftline's estimates, bands and grades per scenario, chunk and metric, and its seconds."""
    check = EstimatedRegressionPerformance()
    started = time.perf_counter()
    profile = check.fit(reference, COLUMNS)
    out: dict[str, Any] = {"fit_seconds": time.perf_counter() - started, "estimate_seconds": 0.0}
    out["reference"] = {m: [f.estimated_reference, f.reference] for m, f in profile.losses.items()}
    out["scenarios"], out["grades"] = {}, {}
    for scenario, rows in analysis.groupby("scenario", sort=False):
        per_metric: dict[str, dict[str, list[float]]] = {m: {} for m in METRICS}
        grades: dict[str, list[str]] = {m: [] for m in METRICS}
        for _, chunk in rows.groupby("chunk", sort=True):
            started = time.perf_counter()
            results = run_check(check, chunk.drop(columns=LABEL), COLUMNS, profile=profile)
            out["estimate_seconds"] += time.perf_counter() - started
            for r in results:
                m = r.metrics
                for key, value in (
                    ("value", m["estimated"]),
                    ("lower_confidence_boundary", m["lower"]),
                    ("upper_confidence_boundary", m["upper"]),
                    ("alert", severity_rank(r.severity) >= severity_rank("medium")),
                ):
                    per_metric[r.target].setdefault(key, []).append(float(value))
                grades[r.target].append(r.severity)
        out["scenarios"][scenario] = per_metric
        out["grades"][scenario] = grades
    return out


def nannyml_python() -> tuple[Path | None, str]:
    """NannyML's interpreter; a virtualenv still being installed by another run is waited for first."""
    python = NANNYML_VENV / "bin" / "python"
    deadline = time.monotonic() + VENV_WAIT_SECONDS
    probe = [str(python), "-c", "import nannyml"]
    while python.exists() and time.monotonic() < deadline:
        if subprocess.run(probe, capture_output=True).returncode == 0:
            break
        time.sleep(10)
    return venv_python(NANNYML_VENV, *NANNYML)


def nannyml_side(python: Path, reference: pd.DataFrame, analysis: pd.DataFrame, chunk_rows: int) -> dict:
    """NannyML's DLE, run by its own interpreter on the same frames (one OpenMP thread, as driftline)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reference.to_parquet(folder / "reference.parquet")
        analysis.to_parquet(folder / "chunks.parquet")
        spec = {"features": list(COLUMNS.features), "prediction": PREDICTION, "label": LABEL}
        (folder / "spec.json").write_text(json.dumps({**spec, "chunk_rows": chunk_rows}))
        done = subprocess.run(
            [str(python), "-c", NANNYML_SCRIPT, str(folder)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
    if done.returncode != 0:
        raise SystemExit(f"NannyML failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the tables ------------------------------------------------------------------------------------------


def realised(analysis: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """The realised metric of every chunk, per scenario."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for scenario, rows in analysis.groupby("scenario", sort=False):
        chunks = [chunk for _, chunk in rows.groupby("chunk", sort=True)]
        out[scenario] = {
            m: np.array([f(c[LABEL], c[PREDICTION]) for c in chunks]) for m, f in REALISED.items()
        }
    return out


def tool_cells(got: dict[str, list[float]], values: np.ndarray) -> list[Any]:
    """A tool's mean estimate, mean absolute error, band coverage and alerts over the chunks."""
    estimate = np.array(got["value"])
    lower, upper = np.array(got["lower_confidence_boundary"]), np.array(got["upper_confidence_boundary"])
    inside = int(((lower <= values) & (values <= upper)).sum())
    return [
        float(estimate.mean()),
        float(np.abs(estimate - values).mean()),
        f"{inside}/{len(values)}",
        f"{int(sum(got['alert']))}/{len(values)}",
    ]


def comparison_rows(truth: dict, tools: dict[str, dict]) -> list[tuple[Any, ...]]:
    """One row per scenario and metric: realised and estimated means, estimate errors, coverage,
    alerts, and driftline's grades."""
    rows = []
    for scenario, by_metric in truth.items():
        for metric, values in by_metric.items():
            row: list[Any] = [f"{scenario} {metric}", len(values), float(values.mean())]
            for name in ("driftline", "nannyml"):
                row += tool_cells(tools[name]["scenarios"][scenario][metric], values)
            grades = Counter(tools["driftline"]["grades"][scenario][metric])
            row.append(", ".join(f"{count} {grade}" for grade, count in sorted(grades.items())))
            rows.append(tuple(row))
    return rows


def ratio_rows(tools: dict[str, dict]) -> list[tuple[Any, ...]]:
    """Per scenario and metric, chunk by chunk: driftline's estimate over NannyML's (mean, mean and
    largest distance from 1) and the ratio of their band half-widths."""
    rows = []
    for scenario, by_metric in tools["driftline"]["scenarios"].items():
        for metric, ours in by_metric.items():
            theirs = tools["nannyml"]["scenarios"][scenario][metric]
            ratio = np.array(ours["value"]) / np.array(theirs["value"])
            half = np.array(ours["upper_confidence_boundary"]) - np.array(ours["value"])
            peer_half = np.array(theirs["upper_confidence_boundary"]) - np.array(theirs["value"])
            off = np.abs(ratio - 1)
            rows.append(
                (
                    f"{scenario} {metric}",
                    float(ratio.mean()),
                    float(off.mean()),
                    float(off.max()),
                    float(np.mean(half / peer_half)),
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=30, help="clean chunks (default 30)")
    parser.add_argument("--chunk-rows", type=int, default=1000, help="rows per chunk (default 1000)")
    args = parser.parse_args()
    reference, analysis = census(args.chunks, args.chunk_rows)
    python, how = nannyml_python()
    if python is None:
        raise SystemExit(how)
    tools = {
        "driftline": driftline_side(reference, analysis),
        "nannyml": nannyml_side(python, reference, analysis, args.chunk_rows),
    }
    print(f"reference {len(reference)} rows, chunks of {args.chunk_rows} rows; {how}\n")
    header = ("scenario", "chunks", "realised")
    for name in ("driftline", "nannyml"):
        header += (f"{name} est", f"{name} |err|", f"{name} band", f"{name} alerts")
    header += ("driftline grades",)
    print(table(comparison_rows(realised(analysis), tools), header))
    print()
    print(
        table(
            ratio_rows(tools),
            ("driftline / nannyml, per chunk", "mean ratio", "mean |ratio-1|", "max |ratio-1|", "band ratio"),
        )
    )
    print()
    print(
        table(
            [
                (
                    metric,
                    tools["driftline"]["reference"][metric][1],
                    tools["driftline"]["reference"][metric][0],
                    tools["nannyml"]["reference"][metric][0],
                )
                for metric in METRICS
            ],
            ("on the reference", "realised", "driftline (held out)", "nannyml (in sample, chunk mean)"),
        )
    )
    print()
    print(
        table(
            [(name, t["fit_seconds"], t["estimate_seconds"]) for name, t in tools.items()],
            ("seconds", "fit", "estimate (all chunks)"),
        )
    )


if __name__ == "__main__":
    main()
