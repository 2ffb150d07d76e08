"""Multivariate drift: driftline's `drift.multivariate` against NannyML 0.13's data reconstruction drift.

Data, real and offline: the census demo's survey year 2015 (ACS Massachusetts), shuffled; the first
10,000 rows are the reference, the other 10,000 the pool batches are drawn from. Numeric features
AGEP (age) and SCHL (schooling attainment, its ordinal code), categorical the other 14. Clean
batches are seeded random draws from the pool; decorrelated ones are such draws with SCHL shuffled
among the batch's rows, so that both marginals stay as they were and only the joint distribution
changes.

driftline fits each method once on the reference and evaluates every batch on its own (one graded
metric, confidence 0.99); a batch alerts at medium or worse (the default `alerts.min_severity`).
NannyML sees the same reference as its reference period and every batch as one chunk
(`chunk_size` = the batch's rows, all batches concatenated as the analysis period), at its defaults
(65% of the variance, thresholds at the reference chunks' mean ± 3 std); a batch alerts when its
chunk does. Both compute the same reconstruction error, so the table sets the batch errors side by
side; driftline's reference error is cross-fitted, NannyML's is measured on the rows its PCA was
fitted on.

NannyML runs in its own virtualenv (it needs pandas < 3), created on first use under the cache
folder; it runs this file with `peer FOLDER` and prints JSON.

python -m benchmarks.multivariate [--batches 50] [--rows 1000] [--cache DIR] [--no-peer]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.alert_quality import PEER_ENVIRONMENT

REFERENCE_ROWS = 10_000
NUMERIC = ["AGEP", "SCHL"]
ALERT = "medium"
NANNYML = (["nannyml==0.13.0", "pandas<3", "statsmodels"], "nannyml", "0.13.0")
SHOWN = 5  # batches of each kind whose errors the table shows one by one
FIVE = "{:.5f}".format  # errors to five decimals (the table rounds other floats to three digits)


# --- data --------------------------------------------------------------------------------------------


def census() -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The reference, the pool and the categorical features (NUMERIC are the numeric ones)."""
    from importlib import resources

    from driftline.data.demo import DATA_FILE, LABEL

    with resources.as_file(DATA_FILE) as path:
        data = pd.read_parquet(path)
    data = data[data["year"] == 2015].drop(columns=["year", "id", LABEL]).sample(frac=1.0, random_state=0)
    data["SCHL"] = data["SCHL"].astype("int64")
    categorical = [c for c in data.columns if c not in NUMERIC]
    reference, pool = data.iloc[:REFERENCE_ROWS], data.iloc[REFERENCE_ROWS:]
    return reference.reset_index(drop=True), pool.reset_index(drop=True), categorical


def batches(pool: pd.DataFrame, count: int, rows: int) -> tuple[list[pd.DataFrame], list[pd.DataFrame]]:
    """`count` clean draws and `count` decorrelated ones (other draws, SCHL shuffled within each)."""
    clean = [pool.sample(rows, random_state=seed).reset_index(drop=True) for seed in range(count)]
    shifted = []
    for seed in range(count, 2 * count):
        batch = pool.sample(rows, random_state=seed).reset_index(drop=True)
        schl = np.random.default_rng(seed).permutation(batch["SCHL"].to_numpy())
        shifted.append(batch.assign(SCHL=schl))
    return clean, shifted


# --- driftline ---------------------------------------------------------------------------------------


def driftline_run(
    method: str, reference: pd.DataFrame, frames: list[pd.DataFrame], categorical: list[str]
) -> dict[str, Any]:
    """One method fitted once and evaluated on every batch: severities, metrics and seconds."""
    from driftline.checks.columns import Columns
    from driftline.checks.drift_multivariate import MultivariateDrift
    from driftline.checks.runner import run_check

    columns = Columns(numeric=tuple(NUMERIC), categorical=tuple(categorical))
    check = MultivariateDrift(method=method)
    started = time.perf_counter()
    profile = check.fit(reference, columns)
    fitted = time.perf_counter()
    results = [run_check(check, frame, columns, profile=profile)[0] for frame in frames]
    done = time.perf_counter()
    return {
        "severities": [r.severity for r in results],
        "metrics": [r.metrics for r in results],
        "reference_error": getattr(profile, "error_mean", None),
        "fit": fitted - started,
        "per_batch": (done - fitted) / len(frames),
    }


# --- NannyML (in its own virtualenv) ------------------------------------------------------------------


def nannyml_run(folder: Path) -> dict[str, Any]:
    """NannyML's reconstruction error and alert per batch (one chunk each) and its seconds."""
    import nannyml as nml

    reference = pd.read_parquet(folder / "reference.parquet")
    analysis = pd.read_parquet(folder / "batches.parquet")
    rows = json.loads((folder / "rows.json").read_text())
    calculator = nml.DataReconstructionDriftCalculator(column_names=list(reference.columns), chunk_size=rows)
    started = time.perf_counter()
    calculator.fit(reference)
    fitted = time.perf_counter()
    result = calculator.calculate(analysis)
    done = time.perf_counter()
    frame = result.filter(period="analysis").to_df()
    in_reference = result.filter(period="reference").to_df()
    return {
        "errors": frame[("reconstruction_error", "value")].tolist(),
        "alerts": frame[("reconstruction_error", "alert")].astype(bool).tolist(),
        "reference_error": float(in_reference[("reconstruction_error", "value")].mean()),
        "fit": fitted - started,
        "per_batch": (done - fitted) / len(frame),
    }


def run_peer(python: Path, reference: pd.DataFrame, frames: list[pd.DataFrame]) -> dict[str, Any]:
    """NannyML over the same reference and batches, through Parquet files in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reference.to_parquet(folder / "reference.parquet", index=False)
        pd.concat(frames, ignore_index=True).to_parquet(folder / "batches.parquet", index=False)
        (folder / "rows.json").write_text(json.dumps(len(frames[0])))
        command = [str(python), str(Path(__file__).resolve()), "peer", str(folder)]
        env = {**os.environ, **PEER_ENVIRONMENT}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"NannyML failed (exit {done.returncode}): {done.stderr.strip()[-1500:]}")
    return json.loads(done.stdout)


# --- the tables ---------------------------------------------------------------------------------------


def verdict_rows(runs: dict[str, dict[str, Any]], count: int) -> list[tuple[Any, ...]]:
    """Per detector: alerts on the clean and on the decorrelated batches (and, for driftline, batches
    graded any severity at all), fit and per-batch time."""
    from driftline.checks.result import severity_rank

    rows = []
    for name, run in runs.items():
        if "alerts" in run:
            alerts, graded = run["alerts"], "–"
        else:
            alerts = [severity_rank(s) >= severity_rank(ALERT) for s in run["severities"]]
            some = [s != "none" for s in run["severities"]]
            graded = f"{sum(some[:count])}/{count}, {sum(some[count:])}/{count}"
        clean, shifted = f"{sum(alerts[:count])}/{count}", f"{sum(alerts[count:])}/{count}"
        rows.append((name, clean, shifted, graded, run["fit"], 1000 * run["per_batch"]))
    return rows


def error_rows(ours: dict[str, Any], theirs: dict[str, Any], count: int) -> list[tuple[Any, ...]]:
    """The reference error and the first SHOWN batches' errors of each kind, side by side."""
    errors = [m["reconstruction_error"] for m in ours["metrics"]]
    reference = (ours["reference_error"], theirs["reference_error"])
    rows: list[tuple[Any, ...]] = [("reference", *map(FIVE, reference), "cross-fitted vs in-sample")]
    for kind, start in (("clean", 0), ("decorrelated", count)):
        for i in range(start, start + min(SHOWN, count)):
            gap = abs(errors[i] - theirs["errors"][i]) / theirs["errors"][i]
            rows.append((f"{kind} {i - start}", FIVE(errors[i]), FIVE(theirs["errors"][i]), f"{gap:.1e}"))
    return rows


def largest_gap(ours: dict[str, Any], theirs: dict[str, Any]) -> float:
    """The largest relative difference between the two batch errors over every batch."""
    mine = np.array([m["reconstruction_error"] for m in ours["metrics"]])
    return float(np.max(np.abs(mine - np.array(theirs["errors"])) / np.array(theirs["errors"])))


def main() -> None:
    """Build the batches, run both driftline methods and NannyML, print the tables."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=50, help="batches of each kind (clean, decorrelated)")
    parser.add_argument("--rows", type=int, default=1000, help="rows per batch")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "driftline-bench")
    parser.add_argument("--peer", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    from benchmarks.measure import table, venv_python

    reference, pool, categorical = census()
    clean, shifted = batches(pool, args.batches, args.rows)
    frames = clean + shifted
    runs = {
        f"driftline {m}": driftline_run(m, reference, frames, categorical)
        for m in ("reconstruction", "classifier")
    }
    setup = "NannyML left out (--no-peer)"
    if args.peer:
        python, setup = venv_python(args.cache / "nannyml", *NANNYML)
        if python is not None:
            runs["NannyML reconstruction"] = run_peer(python, reference, frames)
    sizes = f"{args.batches} clean and {args.batches} decorrelated batches of {args.rows} rows"
    print(f"{len(reference)} reference rows, {sizes}; {setup}\n")
    header = ("detector", "clean alerts", "decorrelated alerts", "any severity", "fit s", "ms per batch")
    print(table(verdict_rows(runs, args.batches), header))
    if "NannyML reconstruction" in runs:
        ours, theirs = runs["driftline reconstruction"], runs["NannyML reconstruction"]
        print()
        print(
            table(
                error_rows(ours, theirs, args.batches),
                ("reconstruction error", "driftline", "NannyML", "relative gap"),
            )
        )
        print(f"\nlargest relative gap over all {len(frames)} batches: {largest_gap(ours, theirs):.1e}")


def peer_main(folder: Path) -> None:
    """The NannyML side: run it over the folder and print JSON."""
    warnings.filterwarnings("ignore")
    print(json.dumps(nannyml_run(folder)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["peer"]:
        peer_main(Path(sys.argv[2]))
    else:
        main()
