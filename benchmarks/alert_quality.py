"""Alert quality: how often driftline's default checks alert on clean batches, and how often on real shifts.

Data, all real and offline (`benchmarks/alert_data.py`): the census demo (ACS 2015), UCI Adult and the
text demo (movie-review sentences). Clean batches are seeded random draws from a held-out pool of the
reference's own population, log-spaced from 100 to 50,000 rows (capped by the pool); shifted batches
apply one real change at two or three strengths: an older sub-population, a unit change, a column gone
null, a new category, label prior shift, flipped labels, sentences from other domains.

driftline runs the data set's checks at their default thresholds as a run grades them: each check is
fitted once on the reference, `run_check` evaluates it on a batch with that profile, and
`grade_results` grades all the batch's results together at confidence 0.99. A check alerts on a batch
when any of its results is medium or worse; the run alerts when any check does.

The peers see the same reference and batches (Parquet files in a temporary folder) in their own
virtualenvs, created on first use under the cache folder: Evidently 0.7's DataDriftPreset (dataset
drift, and any column drifted) and NannyML 0.13's univariate drift, CBPE and realised-performance
alerts, one chunk per batch (`benchmarks/alert_quality_peers.py`). A peer that cannot be installed is
left out with the reason printed.

python -m benchmarks.alert_quality [--quick] [--peers/--no-peers] [--cache DIR] [--markdown PATH]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import alert_data
from benchmarks.alert_data import DataSet, Shift
from benchmarks.measure import table, venv_python
from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.evidence import grade_results
from driftline.checks.result import SEVERITIES, CheckResult, severity_rank, worst_severity
from driftline.checks.runner import run_check

CONFIDENCE = 0.99
ALERT = "medium"
BANDS = (("100–999", 100, 999), ("1k–9.9k", 1_000, 9_999), ("10k–50k", 10_000, 50_000))
SHIFT_SIZES = (300, 1000, 3000)
PEER_SCRIPT = Path(__file__).with_name("alert_quality_peers.py")
# name -> (pip requirements, module, version); NannyML 0.13.1 imports statsmodels without requiring it,
# and neither peer imports with pandas 3. The Evidently venv is the one bench_vs_evidently uses.
Peer = tuple[tuple[str, ...], str, str]
PEERS: dict[str, Peer] = {
    "evidently": (("evidently==0.7.23", "pandas<3"), "evidently", "0.7.23"),
    "nannyml": (("nannyml==0.13.1", "pandas<3", "statsmodels"), "nannyml", "0.13.1"),
}
PEER_SIGNALS = {
    "evidently.dataset_drift": "Evidently: dataset drift",
    "evidently.drifted_columns": "Evidently: any column drifted",
    "nannyml.univariate_drift": "NannyML: univariate drift",
    "nannyml.cbpe": "NannyML: CBPE",
    "nannyml.realised_performance": "NannyML: realised performance",
}
RUN = "driftline: any check"
# One thread per process (the peers run beside driftline on a small machine), and no usage analytics:
# NannyML otherwise tries to upload them on every calculator and waits on the network.
PEER_ENVIRONMENT = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NML_DISABLE_USAGE_LOGGING": "1",
    "DO_NOT_TRACK": "1",
}


@dataclass(frozen=True)
class Plan:
    """How many batches of each kind: clean batches per data set, shifted batches per strength and size."""

    clean: int
    shift_sizes: tuple[int, ...]
    repeats: int


FULL = Plan(clean=200, shift_sizes=SHIFT_SIZES, repeats=2)
QUICK = Plan(clean=40, shift_sizes=(SHIFT_SIZES[0], SHIFT_SIZES[-1]), repeats=1)


@dataclass
class Batch:
    """One batch of the benchmark: clean (`shift` None) or one shift at one strength."""

    frame: pd.DataFrame
    shift: str | None = None
    strength: float | None = None

    @property
    def rows(self) -> int:
        return len(self.frame)


@dataclass
class Outcome:
    """What every signal said on every batch: a severity per driftline check, a flag per peer signal."""

    batches: list[Batch]
    severities: dict[str, list[str]] = field(default_factory=dict)
    flags: dict[str, list[bool | None]] = field(default_factory=dict)
    peer_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def progress(message: str, started: float) -> None:
    """One line of progress on stderr, with the seconds since the start."""
    print(f"[{time.perf_counter() - started:6.1f} s] {message}", file=sys.stderr, flush=True)


# --- batches -------------------------------------------------------------------------------------


def shifted_batches(data: DataSet, plan: Plan, seed: int) -> list[Batch]:
    """Every shift at every strength, `plan.repeats` batches per size (sizes capped at half the pool)."""
    rng = np.random.default_rng(seed)
    sizes = sorted({min(size, len(data.pool) // 2) for size in plan.shift_sizes})
    return [
        Batch(shift.make(data.pool, strength, rows, rng), shift.name, strength)
        for shift in data.shifts
        for strength in shift.strengths
        for rows in sizes
        for _ in range(plan.repeats)
    ]


def all_batches(data: DataSet, plan: Plan, seed: int) -> list[Batch]:
    """The clean batches, then the shifted ones."""
    clean = [Batch(frame) for frame in alert_data.clean_batches(data, plan.clean, seed)]
    return clean + shifted_batches(data, plan, seed + 1)


# --- driftline -----------------------------------------------------------------------------------


def fitted_checks(data: DataSet, columns: Columns) -> list[tuple[Check, Any]]:
    """Every check at its defaults with its profile fitted once on the reference (None when the fit
    fails: `run_check` then fits again on each batch and reports why)."""
    fitted = []
    for name in data.checks:
        check = registry.create(name)
        try:
            profile = check.fit(data.reference, columns)
        except Exception:
            profile = None
        fitted.append((check, profile))
    return fitted


def batch_results(
    fitted: Sequence[tuple[Check, Any]], batch: pd.DataFrame, columns: Columns, reference: pd.DataFrame
) -> list[CheckResult]:
    """Every check's results on the batch, all graded together as one run grades them."""
    results = []
    for check, profile in fitted:
        given = {"profile": profile} if profile is not None else {"reference": reference}
        results.extend(run_check(check, batch, columns, **given))
    return grade_results(results, confidence=CONFIDENCE)


def verdict(results: Sequence[CheckResult]) -> str:
    """A check's worst graded severity on a batch, or `skipped`/`error` when it gave no verdict."""
    graded = [r.severity for r in results if r.status == "ok"]
    return worst_severity(graded) if graded else results[0].status if results else "skipped"


def run_driftline(data: DataSet, batches: list[Batch], outcome: Outcome) -> None:
    """Every check's verdict on every batch, and the run's (the worst of them); why a check gave no
    verdict goes into the notes, once per check and reason."""
    columns = infer_columns(data.reference, data.roles)
    fitted = fitted_checks(data, columns)
    silent: Counter[tuple[str, str]] = Counter()
    per_batch: list[dict[str, str]] = []
    for batch in batches:
        results = batch_results(fitted, batch.frame, columns, data.reference)
        verdicts = {c.name: verdict([r for r in results if r.check == c.name]) for c, _ in fitted}
        per_batch.append(verdicts)
        for result in results:
            if result.status == "error" or (
                result.status == "skipped" and verdicts[result.check] == "skipped"
            ):
                reason = re.sub(r"^\d+ row\(s\): ", "", result.reason or "")
                silent[(result.check, f"{result.status} on {batch.shift or 'clean'} batches: {reason}")] += 1
    for check, _ in fitted:
        outcome.severities[check.name] = [v[check.name] for v in per_batch]
    outcome.severities[RUN] = [worst_severity(s for s in v.values() if s in SEVERITIES) for v in per_batch]
    outcome.notes += [f"{check}: {why} ({n} batches)" for (check, why), n in silent.items()]


# --- peers ---------------------------------------------------------------------------------------


def default_cache() -> Path:
    """Where the peers' virtualenvs live: outside the repository."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "driftline-bench"


def peer_python(name: str, cache: Path, peers: Mapping[str, Peer] = PEERS) -> tuple[Path | None, str]:
    """The interpreter of the peer's virtualenv, created first if needed; None and why when it cannot."""
    requirements, module, version = peers[name]
    return venv_python(cache / f"venv-{name}", requirements, module, version)


def peer_columns(columns: Columns) -> dict[str, Any]:
    """The roles the peers need, as plain JSON."""
    return {
        "numeric": list(columns.numeric),
        "categorical": list(columns.categorical),
        "text": list(columns.text),
        "label": columns.label,
        "prediction": columns.prediction,
        "score": columns.score,
    }


def write_peer_inputs(data: DataSet, batches: list[Batch], folder: Path) -> None:
    """The reference, every batch (numbered in a `batch` column) and the roles, for the peers."""
    columns = infer_columns(data.reference, data.roles)
    (folder / "columns.json").write_text(json.dumps(peer_columns(columns)))
    data.reference.to_parquet(folder / "reference.parquet", index=False)
    frames = [b.frame.assign(batch=i) for i, b in enumerate(batches)]
    pd.concat(frames, ignore_index=True).to_parquet(folder / "batches.parquet", index=False)


def start_peer(python: Path, name: str, folder: Path) -> subprocess.Popen[str]:
    """Start one peer over the folder's batches (it runs while driftline does)."""
    command = [str(python), str(PEER_SCRIPT), name, str(folder)]
    env = {**os.environ, **PEER_ENVIRONMENT}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def collect_peer(name: str, process: subprocess.Popen[str], outcome: Outcome) -> float | None:
    """The peer's flags into the outcome (drifted-column lists become any-column flags); its seconds."""
    out, err = process.communicate()
    if process.returncode != 0:
        outcome.notes.append(f"{name} failed (exit {process.returncode}): {err.strip()[-1500:]}")
        return None
    report = json.loads(out)
    for signal, values in report["flags"].items():
        outcome.flags[signal] = [v if v is None or isinstance(v, bool) else bool(v) for v in values]
    outcome.peer_errors.extend(report["errors"])
    outcome.notes.extend(report["notes"])
    return float(report["seconds"])


# --- tables --------------------------------------------------------------------------------------


def alerts(severity: str) -> bool:
    """A verdict alerts when it is medium or worse (skipped and error never do)."""
    return severity in SEVERITIES and severity_rank(severity) >= severity_rank(ALERT)


def rate(values: Iterable[bool | None]) -> str:
    """`k/n` with the percentage; batches a peer failed on are left out and counted after a dagger."""
    values = list(values)
    known = [v for v in values if v is not None]
    if not values:
        return "–"
    cell = f"{sum(known)}/{len(known)}" + (f" ({100 * sum(known) / len(known):.0f}%)" if known else "")
    failed = len(values) - len(known)
    return cell + (f" †{failed}" if failed else "")


def signal_flags(outcome: Outcome) -> dict[str, list[bool | None]]:
    """Every signal as one alert flag per batch: driftline's checks and run, then the peers'."""
    flags: dict[str, list[bool | None]] = {
        name: [alerts(s) for s in severities] for name, severities in outcome.severities.items()
    }
    flags.update({PEER_SIGNALS[s]: v for s, v in outcome.flags.items() if s in PEER_SIGNALS})
    return flags


def summary_rows(data: DataSet, outcome: Outcome) -> tuple[list[str], list[list[str]]]:
    """Per signal: clean alert rate per size band and in all, not-run count, detection per shift."""
    batches = outcome.batches
    clean = [i for i, b in enumerate(batches) if b.shift is None]
    bands = [[i for i in clean if low <= batches[i].rows <= high] for _, low, high in BANDS]
    shifts = [[i for i, b in enumerate(batches) if b.shift == s.name] for s in data.shifts]
    header = [
        "signal",
        *[f"clean {name}" for name, _, _ in BANDS],
        "clean, all",
        "no verdict (clean/shifted)",
    ]
    header += [f"{s.name} ({s.kind})" for s in data.shifts]
    rows = []
    for name, flags in signal_flags(outcome).items():
        verdicts = outcome.severities.get(name)
        silent = (
            "–"
            if verdicts is None
            else "/".join(
                str(sum(v not in SEVERITIES for v in part))
                for part in (
                    [verdicts[i] for i in clean],
                    [v for v, b in zip(verdicts, batches, strict=True) if b.shift],
                )
            )
        )
        cells = [rate(flags[i] for i in band) for band in bands]
        rows.append(
            [
                name,
                *cells,
                rate(flags[i] for i in clean),
                silent,
                *[rate(flags[i] for i in s) for s in shifts],
            ]
        )
    return header, rows


def severity_rows(data: DataSet, outcome: Outcome) -> tuple[list[str], list[list[str]]]:
    """Per shift and strength: the run's alerts, its worst severity overall and at each batch size,
    the checks that alert on at least half its batches (less those that alert on most clean batches)
    and the peers' detections."""
    peers = [s for s in PEER_SIGNALS if s in outcome.flags]
    header = ["shift", "strength", "driftline alerts", "worst severity", "worst by batch size"]
    header += ["checks alerting (not on most clean)", *[PEER_SIGNALS[s] for s in peers]]
    noisy = noisy_checks(outcome)
    rows = []
    for shift in data.shifts:
        for strength in shift.strengths:
            idx = [
                i for i, b in enumerate(outcome.batches) if (b.shift, b.strength) == (shift.name, strength)
            ]
            run = [outcome.severities[RUN][i] for i in idx]
            by_size: dict[int, list[str]] = {}
            for i in idx:
                by_size.setdefault(outcome.batches[i].rows, []).append(run[idx.index(i)])
            sizes = ", ".join(f"{rows}: {worst_severity(s)}" for rows, s in sorted(by_size.items()))
            firing = [
                f"{check} ({worst_severity(severities[i] for i in idx if severities[i] in SEVERITIES)})"
                for check, severities in outcome.severities.items()
                if check != RUN
                and check not in noisy
                and 2 * sum(alerts(severities[i]) for i in idx) >= len(idx)
            ]
            peer_cells = [rate(outcome.flags[s][i] for i in idx) for s in peers]
            label = strength_label(shift, strength)
            rows.append(
                [
                    shift.name,
                    label,
                    rate(alerts(s) for s in run),
                    worst_severity(run),
                    sizes,
                    ", ".join(firing) or "none",
                    *peer_cells,
                ]
            )
    return header, rows


def noisy_checks(outcome: Outcome) -> set[str]:
    """The checks that alert on more than half of the clean batches."""
    clean = [i for i, b in enumerate(outcome.batches) if b.shift is None]
    return {
        check
        for check, severities in outcome.severities.items()
        if 2 * sum(alerts(severities[i]) for i in clean) > len(clean)
    }


def strength_label(shift: Shift, strength: float) -> str:
    """A strength with its unit (a share as a percentage)."""
    if shift.unit == "share":
        return f"{100 * strength:g}% of rows"
    if shift.unit == "+rate":
        return f"+{100 * strength:g} pt positives"
    return f"{shift.unit} {strength:g}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["--:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def describe(data: DataSet, outcome: Outcome) -> str:
    """One line about the data set and its batches."""
    clean = [b.rows for b in outcome.batches if b.shift is None]
    shifted = len(outcome.batches) - len(clean)
    return (
        f"{data.name}: reference {len(data.reference):,} rows, clean pool {len(data.pool):,}; {len(clean)} "
        f"clean batches of {min(clean):,}–{max(clean):,} rows, {shifted} shifted batches; "
        f"checks at default thresholds, graded together per batch at confidence {CONFIDENCE}; "
        f"alert = medium or worse"
    )


def report(data: DataSet, outcome: Outcome) -> tuple[str, str]:
    """The data set's two tables, as text and as Markdown."""
    summary, severity = summary_rows(data, outcome), severity_rows(data, outcome)
    notes = [*outcome.notes, *[f"† {e}" for e in dict.fromkeys(outcome.peer_errors)]]
    title = describe(data, outcome)
    text = [
        title,
        "",
        table(summary[1], tuple(summary[0])),
        "",
        f"{data.name}: severity by shift strength",
        "",
        table(severity[1], tuple(severity[0])),
        *notes,
    ]
    md = [f"### {data.name}", "", title, "", markdown_table(*summary), "", markdown_table(*severity)]
    md += ["", *[f"- {n}" for n in notes]] if notes else []
    return "\n".join(text), "\n".join(md)


# --- main ----------------------------------------------------------------------------------------


def evaluate(data: DataSet, plan: Plan, pythons: dict[str, Path], seed: int, started: float) -> Outcome:
    """Draw the batches, start the peers on them, run driftline meanwhile and collect the peers."""
    outcome = Outcome(all_batches(data, plan, seed))
    progress(f"{data.name}: {len(outcome.batches)} batches drawn", started)
    with tempfile.TemporaryDirectory(prefix="alert-quality-") as tmp:
        if pythons:
            write_peer_inputs(data, outcome.batches, Path(tmp))
        running = {name: start_peer(python, name, Path(tmp)) for name, python in pythons.items()}
        began = time.perf_counter()
        run_driftline(data, outcome.batches, outcome)
        progress(f"{data.name}: driftline graded every batch in {time.perf_counter() - began:.1f} s", started)
        for name, process in running.items():
            seconds = collect_peer(name, process, outcome)
            took = "failed" if seconds is None else f"{seconds:.1f} s of compute"
            progress(f"{data.name}: {name} done ({took})", started)
    return outcome


def peer_parser(doc: str | None, quick: str, peers_by_default: bool) -> argparse.ArgumentParser:
    """The options an alert benchmark shares: --quick, --peers/--no-peers, --cache and --markdown."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument(
        "--peers",
        action=argparse.BooleanOptionalAction,
        default=peers_by_default,
        help=f"run the peers on the same batches (default: {'yes' if peers_by_default else 'no'})",
    )
    parser.add_argument("--cache", type=Path, default=default_cache(), help="the peers' virtualenv folder")
    parser.add_argument("--markdown", type=Path, help="also write the tables as Markdown to this file")
    return parser


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = peer_parser(__doc__, "about 40 clean batches per data set", peers_by_default=True)
    parser.add_argument(
        "--data", nargs="*", choices=sorted(alert_data.DATA_SETS), help="only these data sets"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the batches")
    parser.add_argument("--rows", type=int, help="ignored (benchmarks.run passes it; the data are real)")
    return parser.parse_args()


def ready_peers(cache: Path, started: float, peers: Mapping[str, Peer] = PEERS) -> dict[str, Path]:
    """The interpreter of every peer that could be installed; the others are named with the reason."""
    cache.mkdir(parents=True, exist_ok=True)
    pythons = {}
    for name in peers:
        python, why = peer_python(name, cache, peers)
        print(f"peer {why}" if python else f"peer {name} left out: {why}", flush=True)
        if python:
            pythons[name] = python
    progress("peers ready", started)
    return pythons


def section(name: str, plan: Plan, pythons: dict[str, Path], seed: int, started: float) -> tuple[str, str]:
    """One data set's report as text and Markdown; a data set that fails is reported, not fatal."""
    try:
        data = alert_data.DATA_SETS[name]()
        progress(f"{name}: data and model ready", started)
        return report(data, evaluate(data, plan, pythons, seed, started))
    except Exception as exc:
        failed = f"{name}: failed: {type(exc).__name__}: {exc}"
        progress(failed, started)
        return failed, f"### {name}\n\n{failed}"


def main() -> None:
    from threadpoolctl import threadpool_limits

    args = parse_args()
    logging.getLogger("driftline.checks.runner").setLevel(logging.CRITICAL)  # errors go into the notes
    threadpool_limits(limits=1)  # the peers run beside driftline on the same cores
    started = time.perf_counter()
    plan = QUICK if args.quick else FULL
    pythons = ready_peers(args.cache, started) if args.peers else {}
    sections = []
    for name in args.data or alert_data.DATA_SETS:
        text, md = section(name, plan, pythons, args.seed, started)
        print(f"\n{text}", flush=True)
        sections.append(md)
    total = time.perf_counter() - started
    mode = "quick" if args.quick else "full"
    print(f"\ntotal {total:.0f} s ({mode} mode, peers: {', '.join(pythons) or 'none'})")
    if args.markdown:
        args.markdown.write_text("\n\n".join(sections) + f"\n\nTotal {total:.0f} s ({mode} mode).\n")


if __name__ == "__main__":
    main()
