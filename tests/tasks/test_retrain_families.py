"""Retraining starts on the model's failures: by default only results of the performance family start
it, never broken data nor drifted predictions alone; `retrain.on` names the families or checks that
may; the CLI says what each action did."""

from __future__ import annotations

from driftline.checks.result import CheckResult
from driftline.flows.render import format_retraining
from driftline.tasks.config.spec import RetrainSpec
from driftline.tasks.retraining.trigger import retraining_failures
from driftline.tasks.run.pipeline import RunSummary


def summary(*failing: tuple[str, str]) -> RunSummary:
    results = [CheckResult(check=c, target="x", severity=s) for c, s in failing]
    return RunSummary("m", "b", "2024-01-01", 10, "failed", "high", results)


BUG_BATCH = (("abnormal.out_of_range", "high"), ("abnormal.nulls", "high"), ("schema.columns", "high"))


def test_a_batch_failing_on_data_quality_alone_is_not_retrained() -> None:
    assert retraining_failures(RetrainSpec(command=["true"]), summary(*BUG_BATCH)) == []


def test_performance_failures_start_retraining_worst_first_and_drift_alone_does_not() -> None:
    run = summary(
        *BUG_BATCH,
        ("drift.prediction", "high"),
        ("subset.auc", "high"),
        ("performance.estimated", "medium"),
        ("performance.overall", "high"),
    )
    found = retraining_failures(RetrainSpec(command=["true"], min_severity="medium"), run)
    assert [r.check for r in found] == ["performance.overall", "performance.estimated"]
    drift_only = summary(*BUG_BATCH, ("drift.prediction", "high"), ("drift.numeric", "high"))
    assert retraining_failures(RetrainSpec(command=["true"]), drift_only) == []


def test_retrain_on_names_the_families_or_checks_that_may_start_it() -> None:
    run = summary(*BUG_BATCH, ("drift.prediction", "high"), ("performance.overall", "high"))
    on_abnormal = RetrainSpec(command=["true"], on=["abnormal"])
    assert {r.check for r in retraining_failures(on_abnormal, run)} == {
        "abnormal.out_of_range",
        "abnormal.nulls",
    }
    on_one = RetrainSpec(command=["true"], on=["performance.overall"])
    assert [r.check for r in retraining_failures(on_one, run)] == ["performance.overall"]


def test_the_cli_line_says_what_each_action_did() -> None:
    assert format_retraining({"command": {"returncode": 0}}) == "command: ran, exit 0"
    assert format_retraining({"webhook": {"status": 202}}) == "webhook: called, HTTP 202"
    once = {"command": {"returncode": 0}, "incidents": [12, 14]}
    assert format_retraining(once) == "command: ran, exit 0 (for incidents 12, 14)"
    skipped = {"command": {"skipped": "already started for this batch and reference"}}
    assert (
        format_retraining(skipped) == "command: not run again (already started for this batch and reference)"
    )
    assert format_retraining({"skipped": "batch a is older"}) == "not started: batch a is older"
