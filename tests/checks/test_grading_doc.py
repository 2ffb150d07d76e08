"""The custom check in docs/grading.md runs as written and is graded on its bound."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from driftline.checks.columns import Columns
from driftline.checks.runner import run_check

DOC = Path(__file__).resolve().parents[2] / "docs" / "grading.md"


def _doc_check() -> type:
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    module = types.ModuleType("grading_doc_example")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    return module.RefundRate


def test_the_documented_check_grades_on_its_lower_bound() -> None:
    rng = np.random.default_rng(0)
    reference = pd.DataFrame({"refunded": rng.random(20_000) < 0.05})
    batch = pd.DataFrame({"refunded": rng.random(3_000) < 0.09})
    (result,) = run_check(_doc_check()(), batch, Columns(), reference=reference)
    p1 = (batch["refunded"].sum() + 1) / 3_002
    p0 = (reference["refunded"].sum() + 1) / 20_002
    se = np.sqrt(p1 * (1 - p1) / 3_002 + p0 * (1 - p0) / 20_002)
    change = batch["refunded"].mean() - reference["refunded"].mean()
    bound = change - stats.norm.ppf(0.99) * se
    assert abs(result.metrics["rate_change_bound"] - bound) < 1e-12
    expected = "high" if bound >= 0.05 else "medium" if bound >= 0.02 else "low" if bound >= 0.01 else "none"
    assert result.severity == expected == "medium"


def test_the_documented_check_skips_a_batch_too_small_for_a_verdict() -> None:
    reference = pd.DataFrame({"refunded": [True, False] * 100})
    (result,) = run_check(_doc_check()(), reference.head(10), Columns(), reference=reference)
    assert result.status == "skipped" and "needs at least 50" in result.reason
