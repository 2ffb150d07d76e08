"""Regenerate docs/site-index.png and docs/site-monitor.png from the demo's store:
`python -m tests.site.screenshots [DOCS_FOLDER]` (about five minutes).

In a temporary folder, the demo (`python -m driftline.flows.demo`) records its two monitors; then
`acs-employment-late-labels`, the demo's census monitor whose labels land one batch late and which
estimates its performance meanwhile (`performance.estimated`), records the same six batches into the
same store, so the monitor page shows estimates against realised values. The site of that store is
written and photographed in headless Chromium.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from driftline.data.demo import BATCHES, LABEL
from tests.report.browser import screenshot

LATE_MONITOR = "acs-employment-late-labels"


def run_demo(folder: Path) -> Path:
    """Run the demo in `folder`; returns its output folder."""
    subprocess.run([sys.executable, "-m", "driftline.flows.demo"], cwd=folder, check=True)
    return folder / "demo_output"


def late_label_monitor(demo: Path, store_url: str) -> Path:
    """The demo spec over unlabelled copies of its batches, with `performance.estimated`, labels held
    back in `pending/` and looked for in `labels/`; returns the spec's path."""
    folder = demo / "late"
    for name in ("batches", "pending", "labels"):
        (folder / name).mkdir(parents=True)
    for batch_id, _, _ in BATCHES:
        frame = pd.read_parquet(demo / "data" / "batches" / f"{batch_id}.parquet")
        frame.drop(columns=LABEL).to_parquet(folder / "batches" / f"{batch_id}.parquet")
        frame[["id", LABEL]].to_parquet(folder / "pending" / f"{batch_id}.parquet")
    spec = yaml.safe_load((demo / "monitor.yaml").read_text())
    spec.update(
        name=LATE_MONITOR,
        reference={"path": str(demo / "data" / "reference.parquet")},
        batches={"path": "batches/{batch}.parquet"},
        labels={"path": "labels/{batch}.parquet"},
        store_url=store_url,
        retrain=None,
        alerts={"min_severity": "medium", "console": False},
    )
    spec["checks"] = ["performance.estimated", *spec["checks"]]
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def record_late_label_runs(spec_path: Path) -> None:
    """Run the six batches in order; before each, the previous batch's labels land."""
    from driftline import load_spec, run_monitor

    spec = load_spec(spec_path)
    previous = None
    for batch_id, _, _ in BATCHES:
        if previous is not None:
            shutil.move(spec_path.parent / "pending" / f"{previous}.parquet", spec_path.parent / "labels")
        run_monitor(spec, batch_id, alerts=True, retrain=False)
        previous = batch_id


def main(docs: Path) -> None:
    from driftline.tasks.history.db import open_store
    from driftline.tasks.site import write_site

    with tempfile.TemporaryDirectory(prefix="driftline-site-") as temp:
        demo = run_demo(Path(temp))
        store_url = f"sqlite:///{demo / 'driftline.db'}"
        spec_path = late_label_monitor(demo, store_url)
        record_late_label_runs(spec_path)
        roots = [
            demo / ".driftline" / "reports",
            demo / "text" / ".driftline" / "reports",
            spec_path.parent / ".driftline" / "reports",
        ]
        engine = open_store(store_url, create=False)
        try:
            site = write_site(engine, demo / "site", report_roots=roots)
        finally:
            engine.dispose()
        screenshot(site.index, docs / "site-index.png", 1280, 560)
        screenshot(site.pages[LATE_MONITOR], docs / "site-monitor.png", 1280, 2360)
        print(f"screenshots written to {docs}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs"))
