"""Custom checks in a monitor: `check: module:Class` (the module beside the spec first) or a name
published under the `driftline.checks` entry point group; loaded, registered, run, graded, stored and
listed like a built-in, and refused with a clear error when they break the contract."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from driftline.checks import custom, registry
from driftline.checks.errors import CheckInputError
from driftline.flows.cli import app
from driftline.tasks.config.spec import SpecError, load_spec
from driftline.tasks.history.db import connected_store
from driftline.tasks.history.query import latest_results
from driftline.tasks.run.pipeline import run_monitor

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "revenue_check.py"
NAME = "business.revenue_at_risk"
CUTOFF = 0.7
runner = CliRunner()


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    """Each test loads the custom check itself."""
    yield
    registry._REGISTRY.pop(NAME, None)
    for module in ("revenue_check", "acme_checks"):
        sys.modules.pop(module, None)
    custom.published.cache_clear()


def frame(n: int, seed: int, risky: float) -> pd.DataFrame:
    """Customers with a revenue and a churn score; a `risky` share of the revenue-heavy ones score high."""
    rng = np.random.default_rng(seed)
    revenue = rng.gamma(2.0, 50.0, n)
    score = np.where(rng.random(n) < risky, rng.uniform(0.7, 1.0, n), rng.uniform(0.0, 0.7, n))
    return pd.DataFrame({"revenue": revenue, "tenure": rng.integers(1, 60, n), "churn_score": score})


def project(tmp_path: Path, checks: list) -> Path:
    """A monitor folder: reference, one batch, the example check module and a spec listing `checks`."""
    frame(4000, 1, 0.1).to_parquet(tmp_path / "reference.parquet")
    (tmp_path / "batches").mkdir()
    frame(3000, 2, 0.4).to_parquet(tmp_path / "batches" / "2024-06.parquet")
    shutil.copy(EXAMPLE, tmp_path / "revenue_check.py")
    spec = {
        "name": "churn",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "columns": {"score": "churn_score", "numeric": ["revenue", "tenure"]},
        "checks": checks,
        "store_url": f"sqlite:///{tmp_path / 'history.db'}",
    }
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def share_at_risk(data: pd.DataFrame) -> float:
    """The share of revenue in rows scored above the cut-off, by hand."""
    return float(data.revenue[data.churn_score > CUTOFF].sum() / data.revenue.sum())


def test_a_custom_check_beside_the_spec_is_run_graded_and_stored(tmp_path: Path) -> None:
    entry = {"check": "revenue_check:RevenueAtRisk", "params": {"cutoff": CUTOFF}, "timeout_s": 60}
    spec = load_spec(project(tmp_path, ["drift.numeric", entry]))
    summary = run_monitor(spec, "2024-06", alerts=False, retrain=False)
    result = next(r for r in summary.to_dict()["results"] if r["check"] == NAME)
    expected = share_at_risk(frame(3000, 2, 0.4)) - share_at_risk(frame(4000, 1, 0.1))
    assert result["metrics"]["share_change"] == pytest.approx(expected, rel=1e-9)
    assert result["severity"] == "high" and "share_change" in result["reason"]
    assert "over" in result["reason"]  # graded with the run's other metrics (Bonferroni)
    with connected_store(spec.database_url()) as engine:
        stored = {r["check"]: r for r in latest_results(engine, "churn", "2024-06")}
    assert stored[NAME]["metrics"]["share_change"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("no_such_module:Check", "No module named 'no_such_module'"),
        ("revenue_check:Missing", "has no attribute 'Missing'"),
        ("revenue_check:RevenueSums", "is not a Check subclass"),
        ("revenue_check", "unknown check"),
    ],
)
def test_a_custom_check_that_cannot_load_is_a_spec_error_naming_it(
    tmp_path: Path, entry: str, message: str
) -> None:
    with pytest.raises(SpecError) as raised:
        load_spec(project(tmp_path, [entry]))
    assert "checks.0" in str(raised.value) and message in str(raised.value)


def test_a_custom_check_may_not_take_a_catalog_name(tmp_path: Path) -> None:
    path = project(tmp_path, ["revenue_check:RevenueAtRisk"])
    module = path.parent / "revenue_check.py"
    module.write_text(module.read_text().replace(f'"{NAME}"', '"drift.numeric"'))
    with pytest.raises(SpecError, match=r"'drift\.numeric' is a catalog name"):
        load_spec(path)


def test_the_cli_lists_and_evaluates_a_custom_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = project(tmp_path, ["revenue_check:RevenueAtRisk"])
    listed = runner.invoke(app, ["checks", "--spec", str(path), "--json"])
    assert listed.exit_code == 0, listed.output
    entry = next(e for e in json.loads(listed.stdout) if e["name"] == NAME)
    assert entry["source"] == "revenue_check:RevenueAtRisk" and entry["family"] == "business"
    monkeypatch.chdir(tmp_path)
    args = ["evaluate", "-c", "revenue_check:RevenueAtRisk", "-r", "reference.parquet"]
    args += ["--current", "batches/2024-06.parquet", "-p", f"cutoff={CUTOFF}", "-p", "score=churn_score"]
    done = runner.invoke(app, [*args, "--json"])
    assert done.exit_code == 0, done.output
    (result,) = json.loads(done.stdout)
    expected = share_at_risk(frame(3000, 2, 0.4)) - share_at_risk(frame(4000, 1, 0.1))
    assert result["metrics"]["share_change"] == pytest.approx(expected, rel=1e-9)


def install(folder: Path, monkeypatch: pytest.MonkeyPatch, published_as: str) -> None:
    """The example check as a distribution on the path that publishes it under the `driftline.checks`
    entry point group as `published_as` (what pip leaves in site-packages)."""
    shutil.copy(EXAMPLE, folder / "acme_checks.py")
    info = folder / "acme_checks-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-checks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[driftline.checks]\n{published_as} = acme_checks:RevenueAtRisk\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    custom.published.cache_clear()


def test_a_check_published_by_an_installed_package_is_found_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, NAME)
    assert NAME in registry.names()
    check = registry.create(NAME, {"cutoff": CUTOFF})
    assert type(check).__module__ == "acme_checks"
    assert registry.describe(NAME)["source"] == "acme_checks:RevenueAtRisk"


def test_an_entry_point_whose_class_has_another_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, monkeypatch, "acme.other")
    with pytest.raises(CheckInputError, match=r"is named 'business\.revenue_at_risk'"):
        registry.get("acme.other")
