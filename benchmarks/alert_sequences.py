"""Verdicts over time: what a default monitor does over long sequences of batches, through the real
run path, history store, incidents, Slack messages and retraining (`benchmarks/monitor_sequence.py`).

On real data (`benchmarks/alert_data.py`: the census, ACS 2015, and UCI Adult; batches in
`benchmarks/sequence_data.py`):

1. clean: one monitor per data set over many clean batches of 300–3,000 rows drawn from the
   reference's held-out population: pages, incidents, Slack posts and edits, retraining calls;
2. ramps: a unit drifting, a sub-population growing, the label rate rising and labels flipping, each
   growing linearly from zero at batch 1: the batch of the first page per seeded sequence;
3. persistent: subtle shifts present in every batch: the batch that first pages, or never;
4. an id-like column of 1,000 and 10,000 Zipf levels added to the census: how often
   `drift.categorical` grades it low or worse on clean batches of 100 to 50,000 rows;
5. seasons: a census monitor of ACS 2015 fed the 2016–2018 surveys in year order: incidents opened
   and resolved per target (flapping);
6. with --peers: Evidently 0.7 (DataDriftPreset), NannyML 0.13 (univariate drift, one chunk per
   batch) and alibi-detect 0.13's online detectors (CVMDriftOnline on the numeric columns,
   FETDriftOnline on the binary ones, fed row by row) on the same clean and ramp batches
   (`benchmarks/alert_quality_peers.py`): batches to first alarm and false alarms per 100 clean
   batches, beside driftline's.

A page is an incident opened at or above `alerts.min_severity` (medium); a sequence that pages stops
there in sections 2 and 3. Everything is counted from the store, the Slack stand-in and the retraining
file, so the tables follow any change of how incidents open and close.

python -m benchmarks.alert_sequences [--quick] [--peers/--no-peers] [--markdown PATH]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select

from benchmarks import alert_data, alert_quality, sequence_data
from benchmarks.alert_data import DataSet
from benchmarks.alert_quality import markdown_table, peer_parser, progress
from benchmarks.measure import table
from benchmarks.monitor_sequence import MIN_SEVERITY, MonitoredSequence, Tally, batch_index
from driftline.checks.result import severity_rank
from driftline.tasks.history.models import Incident
from driftline.tasks.references.profiles import ProfileCache
from tests.alerts.slack_server import SlackStandIn


@dataclass(frozen=True)
class Plan:
    """How long each part runs: clean batches per data set, seeded sequences per ramp and per
    persistent shift, their lengths, id-column batch sizes and repeats, rows per seasonal chunk; the
    data sets of the clean part and of the ramps and persistent shifts."""

    clean: int
    sequences: int
    ramp_batches: int
    persistent_batches: int
    id_sizes: tuple[int, ...]
    id_repeats: int
    season_rows: int
    data: tuple[str, ...]
    shift_data: tuple[str, ...]
    sustained: tuple[tuple[str, float], ...] = ()  # alerts.sustained keys the monitors set


FULL = Plan(
    clean=500,
    sequences=5,
    ramp_batches=30,
    persistent_batches=20,
    id_sizes=(100, 300, 1_000, 3_000, 10_000, 50_000),
    id_repeats=10,
    season_rows=2_000,
    data=("census", "adult"),
    shift_data=("census", "adult"),
)
QUICK = Plan(
    clean=100,
    sequences=2,
    ramp_batches=30,
    persistent_batches=20,
    id_sizes=(100, 1_000, 10_000, 50_000),
    id_repeats=1,
    season_rows=2_000,
    data=("census", "adult"),
    shift_data=("census",),
)
RAMP_ROWS = 1_000
ID_LEVELS = (1_000, 10_000)
# the alert-quality peers, and alibi-detect's online detectors in a virtualenv of their own
PEERS = {**alert_quality.PEERS, "alibi": (("alibi-detect==0.13.0", "pyarrow<18"), "alibi_detect", "0.13.0")}
PEER_SIGNALS = {
    "alibi.online_drift": "alibi-detect: online CVM/FET",
    "evidently.dataset_drift": "Evidently: dataset drift",
    "evidently.drifted_columns": "Evidently: any column drifted",
    "nannyml.univariate_drift": "NannyML: univariate drift",
}


@dataclass
class Section:
    """One table: a title, its header and rows, and notes under it."""

    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str]

    def text(self) -> str:
        """The section as a fixed-width text table."""
        return "\n".join([self.title, "", table(self.rows, tuple(self.header)), *self.notes])

    def markdown(self) -> str:
        """The section as Markdown."""
        notes = ["", *[f"- {n}" for n in self.notes]] if self.notes else []
        return "\n".join([f"### {self.title}", "", markdown_table(self.header, self.rows), *notes])


class Bench:
    """The shared state of one benchmark run: a temporary folder, the Slack stand-in, the data sets
    with their reference files and profile caches, and the peers' batches when they run."""

    def __init__(
        self, folder: Path, slack: SlackStandIn, plan: Plan, seed: int, started: float, peers: bool
    ) -> None:
        self.folder, self.slack, self.plan, self.seed, self.started = folder, slack, plan, seed, started
        self.data: dict[str, DataSet] = {}
        self.monitors = 0
        self.peers = peers
        self.peer_batches: dict[str, list[tuple[str, pd.DataFrame]]] = {}

    def dataset(self, name: str) -> DataSet:
        """The data set, loaded and its reference written once."""
        if name not in self.data:
            self.data[name] = alert_data.DATA_SETS[name]()
            (self.folder / name).mkdir()
            self.data[name].reference.to_parquet(self.folder / name / "reference.parquet", index=False)
            progress(f"{name}: data and model ready", self.started)
        return self.data[name]

    def monitor(self, data: DataSet, reference: Path | None = None, roles: Any = None) -> MonitoredSequence:
        """A fresh monitor of the data set (its own folder and store)."""
        self.monitors += 1
        base = self.folder / data.name
        return MonitoredSequence(
            data,
            base / f"monitor-{self.monitors}",
            self.slack,
            ProfileCache(base / "profiles"),
            reference or base / "reference.parquet",
            roles,
            dict(self.plan.sustained) or None,
        )

    def keep_for_peers(self, data: DataSet, sequence: str, batches: list[pd.DataFrame]) -> None:
        """Remember a sequence's batches for the peers (when they run)."""
        if self.peers:
            self.peer_batches.setdefault(data.name, []).extend((sequence, b) for b in batches)


def run_until_page(monitor: MonitoredSequence, batches: Sequence[pd.DataFrame]) -> Tally:
    """Run the batches in order, stopping after the first that pages."""
    for batch in batches:
        monitor.run(batch)
        if monitor.paged():
            break
    return monitor.tally()


def per_100(count: int, runs: int) -> str:
    """A count per 100 runs."""
    return f"{100 * count / runs:.1f}" if runs else "–"


def spread(values: Sequence[int | None], batches: int) -> str:
    """Median and range of first pages, with how many sequences never paged within `batches`."""
    found = sorted(v for v in values if v is not None)
    never = len(values) - len(found)
    if not found:
        return f"never in {batches} ({never}/{len(values)})"
    cell = f"{statistics.median(found):g} ({found[0]}–{found[-1]})"
    return cell + (f", never in {batches}: {never}/{len(values)}" if never else "")


def top(counts: Counter[str], n: int = 3) -> str:
    """The `n` most frequent keys with their counts, in one line."""
    return ", ".join(f"{k} ×{v}" for k, v in counts.most_common(n)) or "none"


# --- 1. clean sequences --------------------------------------------------------------------------


def clean_section(bench: Bench) -> tuple[Section, dict[str, Tally]]:
    """One monitor per data set over the plan's clean batches."""
    header = [
        "data set",
        "runs",
        "pages",
        "false pages /100 runs",
        "runs ≥ medium /100",
        "incidents opened",
        "resolved",
        "Slack posts",
        "Slack edits",
        "retraining calls",
        "paged targets",
    ]
    rows, tallies = [], {}
    for name in bench.plan.data:
        data = bench.dataset(name)
        batches = sequence_data.clean_sequence(data, bench.plan.clean, bench.seed)
        bench.keep_for_peers(data, "clean", batches)
        monitor = bench.monitor(data)
        for i, batch in enumerate(batches, 1):
            monitor.run(batch)
            if i % 50 == 0:
                paging = monitor.tally(slack=False).paging_runs
                progress(f"{name}: clean batch {i}/{len(batches)}, {paging} paged so far", bench.started)
        t = tallies[name] = monitor.tally()
        rows.append(
            [
                name,
                str(t.runs),
                str(t.paging_runs),
                per_100(t.paging_runs, t.runs),
                per_100(t.alerting_runs, t.runs),
                str(t.incidents),
                str(sum(t.resolved.values())),
                str(t.posts),
                str(t.edits),
                str(t.retrains),
                top(t.opened),
            ]
        )
        progress(f"{name}: {t.runs} clean runs, {t.paging_runs} pages", bench.started)
    notes = [
        "batches: seeded draws of 300–3,000 rows (ten log-spaced sizes) from the held-out pool; a page "
        f"is a run that opened an incident at {MIN_SEVERITY} or worse; runs ≥ medium counts runs whose "
        "worst result reached it (paged or not)"
    ]
    return Section("Clean sequences", header, rows, notes), tallies


# --- 2. ramps and 3. persistent shifts -----------------------------------------------------------


def ramp_strength(ramp: sequence_data.Ramp, batch: float) -> str:
    """The ramp's strength at a (median) batch number."""
    value = ramp.rate * (batch - 1)
    return f"×{1 + value:.2f}" if ramp.unit == "factor" else f"{100 * value:.1f} pt"


def ramp_section(bench: Bench) -> tuple[Section, dict[tuple[str, str], list[int | None]]]:
    """Every ramp on every data set, `plan.sequences` seeded sequences each."""
    plan = bench.plan
    header = ["data set", "ramp", "first page: median (range)", "strength at the median", "pages"]
    rows, firsts = [], {}
    for name in plan.shift_data:
        data = bench.dataset(name)
        for r, ramp in enumerate(sequence_data.ramps(data)):
            found = []
            for s in range(plan.sequences):
                strengths = [ramp.rate * t for t in range(plan.ramp_batches)]
                seed = bench.seed + 1000 * (r + 1) + s
                batches = sequence_data.changed_sequence(data, ramp.make, strengths, RAMP_ROWS, seed)
                bench.keep_for_peers(data, f"{ramp.name} #{s}", batches)
                found.append(run_until_page(bench.monitor(data), batches).first_page)
            firsts[(name, ramp.name)] = found
            paged = [f for f in found if f is not None]
            at = ramp_strength(ramp, statistics.median(paged)) if paged else "–"
            rows.append([name, ramp.name, spread(found, plan.ramp_batches), at, f"{len(paged)}/{len(found)}"])
            progress(f"{name}: ramp {ramp.name}: first pages {found}", bench.started)
    notes = [f"{plan.sequences} seeded sequences of up to {plan.ramp_batches} batches of {RAMP_ROWS:,} rows"]
    return Section("Gradual ramps", header, rows, notes), firsts


def persistent_section(bench: Bench) -> Section:
    """Every subtle persistent shift on every data set: the batch that first pages."""
    plan = bench.plan
    header = ["data set", "shift", "rows a batch", "detected by batch: median (range)", "pages"]
    rows = []
    for name in plan.shift_data:
        data = bench.dataset(name)
        for p, shift in enumerate(sequence_data.persistent(data)):
            found = []
            for s in range(plan.sequences):
                seed = bench.seed + 5000 + 100 * p + s
                strengths = [shift.strength] * plan.persistent_batches
                batches = sequence_data.changed_sequence(data, shift.make, strengths, shift.rows, seed)
                found.append(run_until_page(bench.monitor(data), batches).first_page)
            paged = sum(f is not None for f in found)
            cells = [name, shift.name, f"{shift.rows:,}", spread(found, plan.persistent_batches)]
            rows.append([*cells, f"{paged}/{len(found)}"])
            progress(f"{name}: {shift.name}: first pages {found}", bench.started)
    notes = [f"{plan.sequences} seeded sequences of up to {plan.persistent_batches} batches each"]
    return Section("Subtle persistent shifts", header, rows, notes)


# --- 4. an id-like column ------------------------------------------------------------------------


def id_section(bench: Bench) -> Section:
    """The census with an id-like column: how often clean batches grade it, by batch size."""
    plan = bench.plan
    data = bench.dataset("census")
    header = ["levels", "batch rows", "runs", "drift.categorical ≥ low", "any check ≥ medium on it"]
    rows, notes = [], []
    for levels in ID_LEVELS:
        rng = np.random.default_rng(bench.seed + levels)
        reference = bench.folder / "census" / f"reference-{levels}-ids.parquet"
        sequence_data.with_ids(data.reference, levels, rng).to_parquet(reference, index=False)
        roles = {**data.roles, "categorical": [*data.roles["categorical"], sequence_data.ID_COLUMN]}
        monitor = bench.monitor(data, reference, roles)
        sizes = [size for size in plan.id_sizes for _ in range(plan.id_repeats)]
        for size in sizes:
            monitor.run(sequence_data.id_batch(data, levels, size, rng))
        verdicts = monitor.target_severities(sequence_data.ID_COLUMN)
        hit: Counter[str] = Counter()
        for size in plan.id_sizes:
            idx = [i for i, s in enumerate(sizes) if s == size]
            low = sum(severity_rank(verdicts[i].get("drift.categorical", "none")) >= 1 for i in idx)
            loud = [i for i in idx if any(severity_rank(v) >= 2 for v in verdicts[i].values())]
            hit.update(c for i in loud for c, v in verdicts[i].items() if severity_rank(v) >= 2)
            rows.append(
                [f"{levels:,}", f"{size:,}", str(len(idx)), f"{low}/{len(idx)}", f"{len(loud)}/{len(idx)}"]
            )
        notes.append(f"{levels:,} levels: checks at medium or worse on the id column: {top(hit, 5)}")
        progress(f"census: id column of {levels:,} levels done", bench.started)
    notes.append(
        "ids drawn afresh for every row (p_k ∝ 1/k); the other columns from the pool, with replacement "
        "when a batch is larger than the pool"
    )
    return Section("An id-like column (census)", header, rows, notes)


# --- 5. seasons ----------------------------------------------------------------------------------


def season_section(bench: Bench) -> Section:
    """The census monitor of 2015 fed 2016–2018 in year order: incidents per target, flapping."""
    data = bench.dataset("census")
    chunks = sequence_data.census_years(data, bench.plan.season_rows, bench.seed)
    monitor = bench.monitor(data)
    for _, chunk in chunks:
        monitor.run(chunk)
    t = monitor.tally()
    years = [year for year, _ in chunks]
    header = ["target", "incidents opened", "resolved", "first opened in"]
    first: dict[str, int] = {}
    for row in monitor.query(
        select(Incident.check, Incident.target, Incident.opened_batch).order_by(Incident.id)
    ):
        first.setdefault(f"{row.check}: {row.target}", years[batch_index(row.opened_batch) - 1])
    rows = [[key, str(n), str(t.resolved[key]), str(first[key])] for key, n in t.opened.most_common()]
    rows = rows or [["none", "0", "0", "–"]]
    notes = [
        f"{len(chunks)} batches of about {bench.plan.season_rows:,} rows ({years[0]}–{years[-1]}, year "
        f"order); {t.paging_runs} runs paged, {t.incidents} incidents, {t.posts} Slack posts and "
        f"{t.edits} edits, {t.retrains} retraining calls"
    ]
    progress("census: seasons done", bench.started)
    return Section("Seasons: census 2015 reference, batches of 2016–2018", header, rows, notes)


# --- 6. peers ------------------------------------------------------------------------------------


def ratio(peer: float | None, ours: float | None) -> str:
    """peer / driftline, `∞` when only driftline's is zero."""
    if peer is None or ours is None:
        return "–"
    if ours == 0:
        return "–" if peer == 0 else "∞"
    return f"{peer / ours:.2g}"


def first_alarms(flags: Sequence[bool | None], labels: Sequence[str], sequence: str) -> int | None:
    """The position (from 1) of the first alarm within one sequence's batches, None without one."""
    own = [f for f, label in zip(flags, labels, strict=True) if label == sequence]
    return next((i for i, f in enumerate(own, 1) if f), None)


def peer_rows(
    name: str, outcome: Any, labels: list[str], ours: tuple[float, dict[str, float | None]], plan: Plan
) -> list[list[str]]:
    """One row per peer signal: false alarms per 100 clean batches and first alarm per ramp, each
    with its ratio to driftline's."""
    clean = [i for i, label in enumerate(labels) if label == "clean"]
    ramp_names = list(ours[1])
    rows = []
    for signal, title in PEER_SIGNALS.items():
        flags = outcome.flags.get(signal)
        if flags is None:
            continue
        flags = [f if f is None or isinstance(f, bool) else bool(f) for f in flags]
        known = [flags[i] for i in clean if flags[i] is not None]
        false = 100 * sum(known) / len(known) if known else None
        cells = [name, title, "–" if false is None else f"{false:.1f} ({ratio(false, ours[0])})"]
        for ramp in ramp_names:
            found = [first_alarms(flags, labels, f"{ramp} #{s}") for s in range(plan.sequences)]
            paged = [f for f in found if f is not None]
            mine = statistics.median(paged) if paged else None
            cells.append(f"{spread(found, plan.ramp_batches)} ({ratio(mine, ours[1][ramp])})")
        rows.append(cells)
    return rows


def peer_section(
    bench: Bench, cache: Path, clean: dict[str, Tally], firsts: dict[tuple[str, str], list[int | None]]
) -> Section:
    """The peers on every data set's clean and ramp batches, beside driftline."""
    pythons = alert_quality.ready_peers(cache, bench.started, PEERS)
    plan = bench.plan
    header = ["data set", "signal", "false alarms /100 clean (× driftline)"]
    rows: list[list[str]] = []
    missing = sorted(set(PEERS) - set(pythons))
    notes = [f"left out (could not be installed): {', '.join(missing)}"] if missing else []
    for name, kept in bench.peer_batches.items():
        ramps = [key[1] for key in firsts if key[0] == name]
        if not header[3:]:
            header += [f"first alarm: {r} (× driftline)" for r in range(1, len(ramps) + 1)]
        labels = [label for label, _ in kept]
        batches = [alert_quality.Batch(frame) for _, frame in kept]
        outcome = alert_quality.Outcome(batches)
        with tempfile.TemporaryDirectory(prefix="alert-sequences-peers-") as tmp:
            data = bench.dataset(name)
            alert_quality.write_peer_inputs(data, batches, Path(tmp))
            for peer, python in pythons.items():
                process = alert_quality.start_peer(python, peer, Path(tmp))
                alert_quality.collect_peer(peer, process, outcome)
                progress(f"{name}: {peer} done", bench.started)
        t = clean[name]
        medians = {
            r: (statistics.median(p) if (p := [f for f in firsts[(name, r)] if f is not None]) else None)
            for r in ramps
        }
        ours = (100 * t.paging_runs / t.runs, medians)
        rows.append(
            [name, "driftline: pages", f"{ours[0]:.1f}"]
            + [spread(firsts[(name, r)], plan.ramp_batches) for r in ramps]
        )
        rows += peer_rows(name, outcome, labels, ours, plan)
        notes.append(f"{name}: ramps in order: " + "; ".join(f"{i}. {r}" for i, r in enumerate(ramps, 1)))
        notes += [*outcome.notes, *[f"† {e}" for e in dict.fromkeys(outcome.peer_errors)]]
    notes.append(
        "a peer alarms on a batch by itself (it has no incidents), so its false alarms are per batch; "
        "driftline's are runs that opened an incident"
    )
    rows = [row + ["–"] * (len(header) - len(row)) for row in rows]  # a data set without ramps
    return Section("Peers on the same batches", header, rows, notes)


# --- main ----------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = peer_parser(__doc__, "100 clean batches, 2 sequences per ramp", peers_by_default=False)
    parser.add_argument("--clean", type=int, help="clean batches per data set")
    parser.add_argument("--sequences", type=int, help="seeded sequences per ramp and persistent shift")
    parser.add_argument("--ramp-batches", type=int, help="batches per ramp sequence")
    parser.add_argument("--persistent-batches", type=int, help="batches per persistent-shift sequence")
    parser.add_argument("--id-repeats", type=int, help="clean batches per size in the id-column part")
    parser.add_argument("--data", nargs="*", choices=("census", "adult"), help="only these data sets")
    parser.add_argument(
        "--expected-run-length",
        type=float,
        help="the monitors' alerts.sustained.expected_run_length (default: the spec's default)",
    )
    parser.add_argument(
        "--min-effect", type=float, help="the monitors' alerts.sustained.min_effect (default: the spec's)"
    )
    parser.add_argument(
        "--parts",
        nargs="*",
        choices=PARTS,
        default=list(PARTS),
        help="only these parts (default: all)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the batches")
    return parser.parse_args()


PARTS = ("clean", "ramps", "persistent", "ids", "seasons")


def chosen_plan(args: argparse.Namespace) -> Plan:
    """The quick or full plan with the command line's overrides."""
    plan = QUICK if args.quick else FULL
    sustained = {"expected_run_length": args.expected_run_length, "min_effect": args.min_effect}
    given = {
        "clean": args.clean,
        "sequences": args.sequences,
        "ramp_batches": args.ramp_batches,
        "persistent_batches": args.persistent_batches,
        "id_repeats": args.id_repeats,
        "data": tuple(args.data) if args.data else None,
        "shift_data": tuple(args.data) if args.data else None,
        "sustained": tuple((k, v) for k, v in sustained.items() if v is not None) or None,
    }
    return replace(plan, **{k: v for k, v in given.items() if v is not None})


def run_parts(bench: Bench, parts: Sequence[str], cache: Path | None) -> list[Section]:
    """The chosen parts in order, then the peers when asked for (they need the clean and ramp parts)."""
    sections, clean, firsts = [], {}, {}
    if "clean" in parts:
        section, clean = clean_section(bench)
        sections.append(section)
    if "ramps" in parts:
        section, firsts = ramp_section(bench)
        sections.append(section)
    if "persistent" in parts:
        sections.append(persistent_section(bench))
    if "ids" in parts:
        sections.append(id_section(bench))
    if "seasons" in parts:
        sections.append(season_section(bench))
    if cache is not None and clean and firsts:
        sections.append(peer_section(bench, cache, clean, firsts))
    return sections


def main() -> None:
    from threadpoolctl import threadpool_limits

    args = parse_args()
    for noisy in ("driftline", "great_expectations"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    threadpool_limits(limits=1)
    started = time.perf_counter()
    plan = chosen_plan(args)
    cache = args.cache if args.peers else None
    with tempfile.TemporaryDirectory(prefix="alert-sequences-") as tmp, SlackStandIn() as slack:
        bench = Bench(Path(tmp), slack, plan, args.seed, started, peers=cache is not None)
        sections = run_parts(bench, args.parts, cache)
    for section in sections:
        print(f"\n{section.text()}", flush=True)
    total = time.perf_counter() - started
    mode = "quick" if args.quick else "full"
    footer = f"Total {total:.0f} s ({mode} mode: {describe(plan)})."
    print(f"\n{footer}")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text("\n\n".join(s.markdown() for s in sections) + f"\n\n{footer}\n")


def describe(plan: Plan) -> str:
    """The plan in one line."""
    return (
        f"{plan.clean} clean batches, {plan.sequences} sequences per ramp ({plan.ramp_batches} batches) "
        f"and per persistent shift ({plan.persistent_batches}), id batches of "
        f"{', '.join(f'{s:,}' for s in plan.id_sizes)} rows ×{plan.id_repeats}; clean: "
        f"{', '.join(plan.data)}; shifts: {', '.join(plan.shift_data)}"
        + "".join(f"; sustained {key.replace('_', ' ')} {value:g}" for key, value in plan.sustained)
    )


if __name__ == "__main__":
    sys.exit(main())
