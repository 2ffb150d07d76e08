"""The backfill flow: run a monitor over every batch a file template matches, oldest first."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from driftline.flows.monitor import run_monitor
from driftline.flows.spec import load_spec, past_batch_ids
from driftline.tasks.profiles import ProfileCache


@flow(name="driftline-backfill", task_runner=ThreadPoolTaskRunner(max_workers=4))
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
        summaries.append(run_monitor(spec, batch_id, cache=cache, alerts=alerts, retrain=retrain).to_dict())
    return summaries
