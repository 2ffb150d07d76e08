"""Great Expectations suites as a check: each expectation is a target that passes or fails on the batch."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import CheckInputError, NotApplicable
from driftline.checks.registry import register
from driftline.checks.result import SEVERITIES, CheckResult

# GX data contexts are not thread-safe; checks of a run share one lock.
_GX_LOCK = threading.Lock()


def require_great_expectations() -> None:
    """A batch is not validated without Great Expectations: the check is skipped, naming the install."""
    try:
        import great_expectations  # noqa: F401
    except ImportError:
        raise NotApplicable(
            "needs Great Expectations, which is not installed: pip install 'driftline[expectations]'"
        ) from None


def _class_name(expectation_type: str) -> str:
    return "".join(part.capitalize() for part in expectation_type.split("_"))


def _build_suite(expectations: list[dict[str, Any]]) -> Any:
    """A GX suite from `{type: expect_..., <kwargs>}` mappings (needs an active context)."""
    import great_expectations as gx

    suite = gx.ExpectationSuite(name="driftline")
    for spec in expectations:
        kwargs = {k: v for k, v in spec.items() if k != "type"}
        cls = getattr(gx.expectations, _class_name(spec["type"]), None)
        if cls is None:
            raise CheckInputError(f"expectations.suite: unknown expectation type {spec['type']!r}")
        try:
            suite.add_expectation(cls(**kwargs))
        except Exception as exc:
            raise CheckInputError(f"expectations.suite: {spec['type']}: {exc}") from exc
    return suite


def _quiet_gx_logs() -> None:
    """Great Expectations logs its housekeeping at INFO (a temporary folder on every validation), some of
    it through loggers whose level it sets itself: raise them all to WARNING, so a run logs its own."""
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger):  # a placeholder of a logger not made yet
            continue
        if logger.level < logging.WARNING and name.startswith("great_expectations."):
            logger.setLevel(logging.WARNING)


def _validate(frame: pd.DataFrame, expectations: list[dict[str, Any]]) -> Any:
    """Run the expectations on the whole frame in an ephemeral (file-less) context, progress bars off."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    with _GX_LOCK:
        _quiet_gx_logs()
        context = gx.get_context(mode="ephemeral")
        context.variables.progress_bars = ProgressBarsConfig(globally=False)
        batch_definition = (
            context.data_sources.add_pandas("driftline")
            .add_dataframe_asset("batch")
            .add_batch_definition_whole_dataframe("whole")
        )
        suite = _build_suite(expectations)
        return batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(suite)


@register
@dataclass(kw_only=True)
class ExpectationSuiteCheck(Check):
    """Great Expectations on the batch: one result per expectation, `failure_severity` when it fails,
    with the unexpected share and up to 20 unexpected row indices."""

    name: ClassVar[str] = "expectations.suite"
    slow_start: ClassVar[bool] = True
    worker_imports: ClassVar[tuple[str, ...]] = ("scipy.stats", "great_expectations")
    family: ClassVar[str] = "expectations"
    role: ClassVar[str] = "data_quality"

    expectations: list[dict[str, Any]] = field(default_factory=list)
    failure_severity: str = "medium"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.failure_severity not in SEVERITIES:
            raise CheckInputError(f"{self.name}: failure_severity must be one of {SEVERITIES}")
        for i, spec in enumerate(self.expectations):
            if not isinstance(spec, dict) or not str(spec.get("type", "")).startswith("expect_"):
                raise CheckInputError(
                    f"{self.name}: expectations.{i} needs `type: expect_...` and its arguments"
                )

    def fit(self, reference: pd.DataFrame, columns: Columns) -> None:
        """Expectations are stated, not learned: nothing to fit."""
        return None

    def evaluate(self, current: pd.DataFrame, profile: None, columns: Columns) -> list[CheckResult]:
        if not self.expectations:
            raise NotApplicable("no expectations configured (parameter `expectations`)")
        require_great_expectations()
        outcome = _validate(current, self.expectations)
        results = []
        for item in outcome.results:
            config = item.expectation_config
            kwargs = {k: v for k, v in config.kwargs.items() if k != "batch_id"}
            target = f"{config.type}({kwargs.get('column', '')})"
            stats = item.result or {}
            unexpected = stats.get("unexpected_percent")
            metrics = {"failed": 0.0 if item.success else 1.0}
            if unexpected is not None:
                metrics["unexpected_share"] = unexpected / 100.0
            results.append(
                self.result(
                    target,
                    metrics,
                    rows=len(current),
                    failing_rows=stats.get("unexpected_count"),
                    severity="none" if item.success else self.failure_severity,
                    details={
                        "expectation": kwargs,
                        "observed_value": stats.get("observed_value"),
                        "unexpected_index": (stats.get("partial_unexpected_index_list") or [])[:20],
                    },
                )
            )
        return results
