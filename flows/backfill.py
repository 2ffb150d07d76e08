"""The backfill flow: run a monitor over every batch a file template matches, oldest first."""

from __future__ import annotations

from prefect import get_run_logger
from prefect.states import State

from driftline.flows.monitor import CHECK_RUNNER, verdict_flow
from driftline.flows.prefect_driver import PrefectDriver, verdict_state
from driftline.tasks.config.spec import load_spec, past_batch_ids
from driftline.tasks.references.profiles import ProfileCache
from driftline.tasks.retraining.actions import RETRAIN_ALWAYS
from driftline.tasks.run.pipeline import run_monitor


@verdict_flow(name="driftline-backfill", task_runner=CHECK_RUNNER)
def backfill(
    spec_path: str,
    batch_ids: list[str] | None = None,
    alerts: bool = False,
    retrain: bool = False,
    fail_flow_run: bool = True,
) -> State:
    """Evaluate `batch_ids` (default: every batch file, oldest first) with one shared profile cache.

    History is written for every batch; alerts and retraining are off unless asked for, since the
    batches are past ones (`retrain` then retrains every failing batch, older ones included). The
    run ends `Failed` when a batch reached `fail_on`, unless `fail_flow_run` is off.
    """
    spec = load_spec(spec_path)
    batch_ids = past_batch_ids(spec, batch_ids)
    logger = get_run_logger()
    cache = ProfileCache(spec.state_dir / "profiles")
    summaries = []
    for i, batch_id in enumerate(batch_ids, 1):
        logger.info("batch %d/%d: %s", i, len(batch_ids), batch_id)
        driver = PrefectDriver(spec)
        retraining = RETRAIN_ALWAYS if retrain else False
        summary = run_monitor(spec, batch_id, driver=driver, cache=cache, alerts=alerts, retrain=retraining)
        summaries.append(summary.to_dict())
        driver.report(spec, summaries[-1])
    return verdict_state(summaries, spec.fail_on, fail_flow_run, summaries)
