"""`make demo`: monitor an employment classifier over census batches whose population ages.

The data are real (ACS Massachusetts, the package data `driftline.data`: `data/acs_employment/` in
the repository). A gradient-boosting model trained on half of survey year 2015 scores the rows (its
scores ship as data: nothing is trained here); the other half is the reference snapshot. Production
batches are drawn from 2016–2018: the first two are plain samples (the checks pass), the later ones
over-sample older respondents more and more, the kind of population shift a change of acquisition
channel causes, so drift and performance checks cross their thresholds. A second monitor follows a
sentiment classifier trained on rated movie-review sentences over batches from other domains
(tweets, product reviews, editorials): text drift, unseen words, attacks and transformations.
History goes to demo_output/driftline.db (made anew on every demo run), alerts to the console (set
SLACK_BOT_TOKEN and `alerts.slack` in the spec to post them).

`--engine prefect` (the default) runs each batch as a Prefect flow run, on the configured API or a
temporary local server; when neither can be had, the demo says so in one line and goes on with the
local engine, which `--engine local` (`make demo ENGINE=local`) asks for directly: no Prefect at all.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console

from driftline.data.demo import BATCHES, build_demo_data
from driftline.tasks.tools.safe_text import first_line

OUTPUT = Path("demo_output")
HISTORY_URL = f"sqlite:///{OUTPUT / 'driftline.db'}"


RunBatch = Callable[[Path, str], dict[str, Any]]


def local_runner() -> RunBatch:
    """Runs a batch in this process on the local engine, one profile cache per spec across its batches."""
    from driftline.tasks.config.spec import load_spec
    from driftline.tasks.references.profiles import ProfileCache
    from driftline.tasks.run.pipeline import run_monitor

    loaded: dict[Path, tuple[Any, ProfileCache]] = {}

    def run(spec_path: Path, batch_id: str) -> dict[str, Any]:
        if spec_path not in loaded:
            spec = load_spec(spec_path)
            loaded[spec_path] = spec, ProfileCache(spec.state_dir / "profiles")
        spec, cache = loaded[spec_path]
        return run_monitor(spec, batch_id, cache=cache).to_dict()

    return run


def start_engine(engine: str, stack: ExitStack, console: Console) -> RunBatch:
    """How the demo runs a batch: as a Prefect flow run, on the configured API or a temporary server
    held open by `stack`; else (asked for, or no Prefect server could be had) on the local engine."""
    if engine == "prefect":
        console.print("connecting to Prefect (a temporary local server when none is configured: ~15 s) ...")
        try:
            from driftline.flows.monitor import monitor
            from driftline.flows.temporary_server import prefect_api

            stack.enter_context(prefect_api())
        except (ImportError, OSError, RuntimeError) as exc:
            console.print(
                f"[bold]no Prefect server[/] ({first_line(str(exc))}): running on the local engine instead",
                highlight=False,
            )
        else:
            return lambda spec_path, batch_id: monitor(str(spec_path.resolve()), batch_id)
    return local_runner()


def main(argv: list[str] | None = None) -> None:
    """Build the demo data, then run both monitors batch by batch on one engine session."""
    parser = argparse.ArgumentParser(description="Run the two demo monitors over their batches.")
    parser.add_argument(
        "--engine",
        choices=("prefect", "local"),
        default="prefect",
        help="prefect: Prefect flow runs (falls back to local when no server starts); local: no Prefect",
    )
    engine = parser.parse_args(argv).engine
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    if not os.environ.get("PREFECT_API_URL"):
        # Nobody reads the temporary server's logs (its UI is off, it stops with the demo); sending them
        # costs a log worker that Prefect 3.8 may garbage-collect mid-run, printing a traceback.
        os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")
    os.environ["DRIFTLINE_DATABASE_URL"] = HISTORY_URL
    from driftline.flows.render import make_console, print_summary

    console = make_console()
    started = time.perf_counter()
    if OUTPUT.exists():
        shutil.rmtree(OUTPUT)
    spec_path = build_demo_data(OUTPUT)
    console.print(
        f"[bold]driftline demo[/]: data and spec written to {OUTPUT}/ ({time.perf_counter() - started:.1f} s)"
    )

    from driftline.data.text.sentiment_model import BATCH_DOMAINS, write_demo_data

    summaries = []
    with ExitStack() as stack:
        run = start_engine(engine, stack, console)
        for batch_id, _, strength in BATCHES:
            console.rule(f"batch {batch_id} (age tilt {strength})")
            summaries.append(run(spec_path, batch_id))
            print_summary(console, summaries[-1], show_ok=False)
        text_spec = write_demo_data(OUTPUT / "text")
        console.print(
            "\n[bold]second monitor[/]: a sentiment classifier trained on movie reviews, on other domains"
        )
        for batch_id, domain in BATCH_DOMAINS.items():
            console.rule(f"batch {batch_id} ({domain.replace('_', ' ')})")
            print_summary(console, run(text_spec, batch_id), show_ok=False)
    console.print(
        f"\n[bold]done in {time.perf_counter() - started:.0f} s.[/] Metric history:\n"
        f"  .venv/bin/driftline history acs-employment --check drift.prediction --db {HISTORY_URL}\n"
        f"  .venv/bin/driftline trend acs-employment --metric psi --db {HISTORY_URL}"
    )
    worst = worst_run(summaries)
    if worst is not None and worst.get("report"):
        console.print(
            f"\nHTML report of the worst batch ({worst['batch_id']}, {worst['worst_severity']}):\n"
            f"  {worst['report']}",
            highlight=False,
            soft_wrap=True,
        )


def worst_run(summaries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run with the worst severity, then the most results at medium or above, then the latest."""
    from driftline.checks.result import severity_rank

    def weight(summary: dict[str, Any]) -> tuple[int, int]:
        hits = sum(
            r["status"] == "ok" and severity_rank(r["severity"]) >= severity_rank("medium")
            for r in summary["results"]
        )
        return severity_rank(summary["worst_severity"]), hits

    return max(reversed(summaries), key=weight, default=None)


if __name__ == "__main__":
    main()
