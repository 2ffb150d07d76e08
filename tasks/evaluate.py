"""`evaluate`: checks on a reference and a current table, outside any monitor, through the same check
plan and driver as a monitor run (`driftline evaluate` and the Airflow check operator call it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_columns
from driftline.checks.result import CheckResult
from driftline.tasks.alerts.config import AlertConfig
from driftline.tasks.driver import Driver
from driftline.tasks.plan import CheckPlan, Evaluation
from driftline.tasks.profiles import ProfileCache
from driftline.tasks.spec import ExecutionSpec
from driftline.tasks.steps import grade_run

# The reference's name in the profile cache of one call (kept in memory: nothing is written).
REFERENCE_KEY = "evaluate"


def evaluate(
    checks: Sequence[str | Check],
    reference: pd.DataFrame,
    current: pd.DataFrame,
    *,
    params: Mapping[str, Any] | None = None,
    columns: Columns | Mapping[str, Any] | None = None,
    execution: ExecutionSpec | None = None,
    confidence: float = AlertConfig().confidence,
    base_dir: Path | None = None,
    driver: Driver | None = None,
) -> list[CheckResult]:
    """Every check's results on `current` against `reference`, graded together at `confidence`.

    `checks` are configured checks, catalog names or `module:Class` paths (looked up in `base_dir`
    first), the named ones created with `params`; `columns` are the roles, or the roles given from
    which the others are inferred from the reference. Each check runs as in a monitor run: isolated
    and limited as `execution` says (by default in a worker process with a 600 s limit), bad input
    and failures turned into `skipped` or `error` results. An unknown check or parameter raises
    `CheckInputError`.
    """
    configured = [
        c if isinstance(c, Check) else registry.create(c, dict(params or {}), base_dir) for c in checks
    ]
    roles = columns if isinstance(columns, Columns) else infer_columns(reference, columns)
    evaluation = Evaluation(current, roles, reference, REFERENCE_KEY, ProfileCache(None))
    results = CheckPlan.of(configured, execution).run(driver or Driver(), evaluation)
    return grade_run(results, confidence)
