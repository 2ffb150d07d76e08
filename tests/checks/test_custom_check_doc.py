"""docs/custom_checks.md: its example check (docs/examples/revenue_check.py, quoted in full) keeps the
contract, as the doc's own test code runs it, and its number is the hand-computed share of revenue at
risk, graded on its lower bound."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driftline.checks.columns import Columns
from driftline.checks.runner import run_check

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC = DOCS / "custom_checks.md"
EXAMPLE = DOCS / "examples" / "revenue_check.py"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture
def revenue_check(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The example imported by path, as `revenue_check` (the name the doc imports it by) for this test
    only: dataclasses and pickle look the module up by name."""
    spec = importlib.util.spec_from_file_location("revenue_check", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_the_doc_quotes_the_example_file_as_it_is() -> None:
    assert _python_blocks()[0] == EXAMPLE.read_text()


def test_the_docs_test_code_runs_check_contract_on_the_example(revenue_check: ModuleType) -> None:
    (testing_code,) = [block for block in _python_blocks() if "check_contract(" in block]
    namespace: dict = {"__name__": "custom_checks_doc_tests"}
    exec(compile(testing_code, str(DOC), "exec"), namespace)
    namespace["test_revenue_at_risk_keeps_the_contract"]()
    (parametrised,) = namespace["test_revenue_at_risk_contract_case"].pytestmark
    cases = parametrised.args[1]
    assert "merge" in [case.name for case in cases]
    for case in cases:
        case.run()


def test_the_example_declared_as_output_drift_ranks_with_the_model_outputs(revenue_check: ModuleType) -> None:
    """Four high results: the example's comes with the prediction drift, before the two features (the
    one the model relies on more first), as the role it declares says."""
    from driftline.checks import registry
    from driftline.tasks.views.ranking import ranked

    def high(check: str, target: str, share: float | None = None) -> dict:
        importance = {} if share is None else {"importance": {"share": share, "rank": 1, "of": 2}}
        return {"check": check, "target": target, "status": "ok", "severity": "high", "details": importance}

    registry.register(revenue_check.RevenueAtRisk)
    try:
        results = [
            high("drift.numeric", "tenure", 0.2),
            high("drift.numeric", "revenue", 0.6),
            high("business.revenue_at_risk", "revenue"),
            high("drift.prediction", "churn_score"),
        ]
        order = [(r["check"], r["target"]) for r in ranked(results)]
    finally:
        registry._REGISTRY.pop(revenue_check.RevenueAtRisk.name, None)
    assert order == [
        ("business.revenue_at_risk", "revenue"),
        ("drift.prediction", "churn_score"),
        ("drift.numeric", "revenue"),
        ("drift.numeric", "tenure"),
    ]


def _share_and_error(revenue: np.ndarray, score: np.ndarray, cutoff: float) -> tuple[float, float]:
    """Share of revenue above the cut-off among usable rows, and its delta-method standard error
    sqrt(sum (r (h - share))²) / sum r, written out directly."""
    keep = np.isfinite(revenue) & (revenue >= 0) & np.isfinite(score)
    r, h = revenue[keep], (score[keep] > cutoff).astype(float)
    share = np.sum(r * h) / np.sum(r)
    return share, np.sqrt(np.sum((r * (h - share)) ** 2)) / np.sum(r)


def test_the_share_at_risk_and_its_grade_match_a_hand_computation(revenue_check: ModuleType) -> None:
    """40 reference rows, 50 batch rows scored 0.2 higher, three of them unusable (NaN and negative
    revenue, an infinite score)."""
    rng = np.random.default_rng(3)
    reference = pd.DataFrame({"amount": rng.gamma(2.0, 40.0, 40), "p": rng.random(40)})
    amount = rng.gamma(2.0, 40.0, 50)
    batch = pd.DataFrame({"amount": amount, "p": np.clip(rng.random(50) + 0.2, 0, 1)})
    batch.loc[[3, 17], "amount"] = [np.nan, -12.0]
    batch.loc[29, "p"] = np.inf
    check = revenue_check.RevenueAtRisk(revenue="amount", cutoff=0.6)

    (result,) = run_check(check, batch, Columns(score="p"), reference=reference)

    share, error = _share_and_error(batch["amount"].to_numpy(), batch["p"].to_numpy(), 0.6)
    ref_share, ref_error = _share_and_error(reference["amount"].to_numpy(), reference["p"].to_numpy(), 0.6)
    change = share - ref_share
    bound = change - stats.norm.ppf(0.99) * np.hypot(error, ref_error)
    usable = np.isfinite(batch["amount"]) & (batch["amount"] >= 0) & np.isfinite(batch["p"])
    assert result.metrics["share_at_risk"] == pytest.approx(share, rel=1e-12)
    assert result.metrics["reference_share_at_risk"] == pytest.approx(ref_share, rel=1e-12)
    assert result.metrics["share_change"] == pytest.approx(change, rel=1e-12)
    assert result.metrics["share_change_bound"] == pytest.approx(bound, rel=1e-9)
    assert result.failing_rows == int(np.sum(usable & (batch["p"] > 0.6)))
    assert result.details["dropped_rows"] == 3 and result.rows == 50
    expected = "high" if bound >= 0.1 else "medium" if bound >= 0.05 else "low" if bound >= 0.02 else "none"
    assert result.severity == expected
    assert expected == "high"
