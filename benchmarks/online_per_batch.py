"""alibi-detect's online drift detector fed one observation per batch, so that its expected run time
(ERT) counts batches and can be set to driftline's budget over time (one false page per 1,000 runs).

Each batch of the over-time benchmark (`benchmarks/sequence_data.py`: the clean sequence and the
ramps of the census) becomes one vector: the mean of every numeric column and of the score, the
label's and the prediction's share of 1, and the share of every category that holds at least 5% of
the reference. The detector's reference is 300 batches drawn from the reference rows at the clean
sequence's sizes. `CVMDriftOnline` (ERT = 1,000 batches, windows of 5 and 10 batches) then reads the
clean sequence and every ramp sequence from a fresh start; its first alarm per ramp and its alarms
on the clean sequence are printed beside each other.

Two steps, because alibi-detect needs pandas < 3 and numpy < 2 (its own virtualenv, as the other
peers have): `summaries` runs with driftline's interpreter and writes the vectors; `detect` runs with
alibi-detect's.

python -m benchmarks.online_per_batch summaries OUT.json [--clean 500] [--sequences 5]
ALIBI_PYTHON benchmarks/online_per_batch.py detect OUT.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ERT = 1000
WINDOWS = [5, 10]
# alibi-detect sets each feature's threshold from simulated runs; at ERT 1,000 over ~30 features the
# quantile it needs is 1 - 2.3e-5, which needs more than its default 10,000 simulations.
N_BOOTSTRAPS = 50_000
REFERENCE_BATCHES = 300
MIN_LEVEL_SHARE = 0.05
RAMP_BATCHES = 30
RAMP_ROWS = 1000


def summaries(out: Path, clean: int, sequences: int, seed: int) -> None:
    """The census's reference, clean and ramp batches as one vector each, written to `out`."""
    import numpy as np

    from benchmarks import alert_data, sequence_data

    data = alert_data.DATA_SETS["census"]()
    roles = data.roles
    numeric = [*roles["numeric"], roles["score"]]
    binary = [roles["label"], roles["prediction"]]
    levels = {
        column: [
            level
            for level, share in data.reference[column].astype(str).value_counts(normalize=True).items()
            if share >= MIN_LEVEL_SHARE
        ]
        for column in roles["categorical"]
    }

    def vector(batch: Any) -> list[float]:
        values = [float(batch[c].mean()) for c in numeric]
        values += [float((batch[c] == 1).mean()) for c in binary]
        for column, kept in levels.items():
            text = batch[column].astype(str)
            values += [float((text == level).mean()) for level in kept]
        return values

    rng = np.random.default_rng(seed)
    reference = [
        vector(alert_data.draw(data.reference, int(rng.choice(sequence_data.CLEAN_SIZES)), rng))
        for _ in range(REFERENCE_BATCHES)
    ]
    clean_batches = sequence_data.clean_sequence(data, clean, seed)
    ramps = {}
    for r, ramp in enumerate(sequence_data.ramps(data)):
        strengths = [ramp.rate * t for t in range(RAMP_BATCHES)]
        ramps[ramp.name] = [
            [
                vector(b)
                for b in sequence_data.changed_sequence(
                    data, ramp.make, strengths, RAMP_ROWS, seed + 1000 * (r + 1) + s
                )
            ]
            for s in range(sequences)
        ]
    report = {"reference": reference, "clean": [vector(b) for b in clean_batches], "ramps": ramps}
    out.write_text(json.dumps(report))


def detect(path: Path) -> None:
    """Run the detector over the clean sequence (restarted after each alarm) and each ramp sequence;
    print the clean alarms and each ramp's first alarms as JSON."""
    import numpy as np
    from alibi_detect.cd import CVMDriftOnline

    report = json.loads(path.read_text())
    detector = CVMDriftOnline(
        np.asarray(report["reference"], dtype=np.float32),
        ert=ERT,
        window_sizes=WINDOWS,
        n_bootstraps=N_BOOTSTRAPS,
        verbose=False,
    )

    def first_alarm(batches: list[list[float]]) -> int | None:
        detector.reset_state()
        for i, x in enumerate(batches, 1):
            if detector.predict(np.asarray(x, dtype=np.float32))["data"]["is_drift"]:
                return i
        return None

    alarms = 0
    detector.reset_state()
    for x in report["clean"]:
        if detector.predict(np.asarray(x, dtype=np.float32))["data"]["is_drift"]:
            alarms += 1
            detector.reset_state()
    firsts = {name: [first_alarm(s) for s in sequences] for name, sequences in report["ramps"].items()}
    print(json.dumps({"clean_runs": len(report["clean"]), "clean_alarms": alarms, "first_alarms": firsts}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=("summaries", "detect"))
    parser.add_argument("path", type=Path)
    parser.add_argument("--clean", type=int, default=500, help="clean batches")
    parser.add_argument("--sequences", type=int, default=5, help="seeded sequences per ramp")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.step == "summaries":
        summaries(args.path, args.clean, args.sequences, args.seed)
    else:
        detect(args.path)


if __name__ == "__main__":
    sys.exit(main())
