"""The backfill flow: run a monitor over every batch a file template matches, oldest first."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from driftline.flows.monitor import CHECK_RUNNER
from driftline.flows.prefect_driver import PrefectDriver
from driftline.tasks.pipeline import run_monitor
from driftline.tasks.profiles import ProfileCache
from driftline.tasks.spec import load_spec, past_batch_ids


@flow(name="driftline-backfill", task_runner=CHECK_RUNNER)
def backfill(
    spec_path: str, batch_ids: list[str] | None = None, alerts: bool = False, retrain: bool = False
) -> list[dict[str, Any]]:
    """Evaluate `batch_ids` (default: every batch file, oldest first) with one shared profile cache.

    History is written for every batch; alerts and retraining are off unless asked for, since the
    batches are past ones.
    """
    spec = load_spec(spec_path)
    batch_ids = past_batch_ids(spec, batch_ids)
    logger = get_run_logger()
    cache = ProfileCache(spec.base_dir / ".driftline" / "profiles")
    summaries = []
    for i, batch_id in enumerate(batch_ids, 1):
        logger.info("batch %d/%d: %s", i, len(batch_ids), batch_id)
        summary = run_monitor(
            spec, batch_id, driver=PrefectDriver(), cache=cache, alerts=alerts, retrain=retrain
        )
        summaries.append(summary.to_dict())
    return summaries
