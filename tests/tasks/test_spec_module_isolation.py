"""Two monitors in one process whose folders hold modules of the same names (`model.py` with its
`helpers.py`, `revenue_check.py`): each is scored and checked by its own folder's code."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score

from driftline.checks import registry
from driftline.tasks.config.spec import load_spec
from driftline.tasks.history.db import connected_store
from driftline.tasks.history.query import latest_results
from driftline.tasks.run.pipeline import run_monitor

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "revenue_check.py"
MODEL = """
import pandas as pd
from sklearn.linear_model import LogisticRegression

from helpers import FEATURE


def build():
    reference = pd.read_parquet(__file__.rsplit("/", 1)[0] + "/reference.parquet")
    return LogisticRegression().fit(reference[[FEATURE]], reference["y"])
"""


def table(rows: int, seed: int) -> pd.DataFrame:
    """`y` follows `a` closely and `b` loosely, so models on either column score differently."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=rows), "b": rng.normal(size=rows)})
    noisy = frame["a"] + 0.3 * frame["b"] + rng.normal(scale=0.5, size=rows)
    return frame.assign(y=(noisy > 0).astype(int), churn_score=rng.uniform(size=rows))


def folder(root: Path, name: str, spec: dict) -> Path:
    """A monitor folder with a reference, one batch and `spec`."""
    path = root / name
    (path / "batches").mkdir(parents=True)
    table(2000, 1).to_parquet(path / "reference.parquet")
    table(1500, 2).to_parquet(path / "batches" / "b1.parquet")
    base = {
        "name": name,
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "store_url": f"sqlite:///{root / 'history.db'}",
        "execution": {"isolation": "thread"},
    }
    (path / "monitor.yaml").write_text(yaml.safe_dump({**base, **spec}))
    return path / "monitor.yaml"


@pytest.fixture(autouse=True)
def no_plain_modules() -> Iterator[None]:
    """Nothing is left under the folders' plain module names once the runs are done."""
    names = {"model", "helpers", "revenue_check"}
    yield
    registry._REGISTRY.pop("business.revenue_at_risk", None)
    registry._REGISTRY.pop("business.revenue_at_risk_b", None)
    left = names & set(sys.modules)
    for name in left:
        del sys.modules[name]
    assert not left


def stored(spec_path: Path, check: str) -> dict[str, dict]:
    spec = load_spec(spec_path)
    with connected_store(spec.database_url()) as engine:
        rows = latest_results(engine, spec.name, "b1")
    return {r["target"]: r for r in rows if r["check"] == check}


def test_two_monitors_with_a_model_py_each_are_scored_by_their_own(tmp_path: Path) -> None:
    specs = {}
    for name, feature in (("on-a", "a"), ("on-b", "b")):
        columns = {"label": "y", "numeric": ["a", "b"]}
        spec = folder(
            tmp_path, name, {"model": "model:build", "columns": columns, "checks": ["performance.overall"]}
        )
        (spec.parent / "model.py").write_text(textwrap.dedent(MODEL))
        (spec.parent / "helpers.py").write_text(f"FEATURE = {feature!r}\n")
        specs[feature] = spec
    for spec in specs.values():
        run_monitor(load_spec(spec), "b1", alerts=False, retrain=False)

    reference, batch = table(2000, 1), table(1500, 2)
    accuracies = {}
    for feature, spec in specs.items():
        model = LogisticRegression().fit(reference[[feature]], reference["y"])
        expected = accuracy_score(batch["y"], model.predict(batch[[feature]]))
        accuracies[feature] = stored(spec, "performance.overall")["accuracy"]["metrics"]["current"]
        assert accuracies[feature] == pytest.approx(expected, abs=1e-12)
    assert abs(accuracies["a"] - accuracies["b"]) > 0.05  # the two models really differ


def test_two_monitors_with_a_revenue_check_py_each_run_their_own_check(tmp_path: Path) -> None:
    entry = {"check": "revenue_check:RevenueAtRisk", "params": {"cutoff": 0.7}}
    spec = {"columns": {"score": "churn_score", "numeric": ["a", "b"]}, "checks": [entry]}
    first, second = folder(tmp_path, "first", spec), folder(tmp_path, "second", spec)
    shutil.copy(EXAMPLE, first.parent / "revenue_check.py")
    renamed = EXAMPLE.read_text().replace('"business.revenue_at_risk"', '"business.revenue_at_risk_b"')
    (second.parent / "revenue_check.py").write_text(renamed)

    checks = {}
    for path in (first, second):
        summary = run_monitor(load_spec(path), "b1", alerts=False, retrain=False)
        checks[path.parent.name] = {r.check for r in summary.results}
    assert checks == {
        "first": {"schema.columns", "data.summary", "business.revenue_at_risk"},
        "second": {"schema.columns", "data.summary", "business.revenue_at_risk_b"},
    }
    assert stored(second, "business.revenue_at_risk_b")


def test_a_folder_s_modules_are_its_own_and_leave_imported_ones_alone(tmp_path: Path) -> None:
    """Loaded twice, a folder gives the same module; its neighbours resolve within the folder; a file
    named like a module already imported (`json.py`) does not replace it."""
    from driftline.checks.spec_modules import import_beside, plain_name

    loaded = {}
    for value in ("a", "b"):
        folder = tmp_path / value
        folder.mkdir()
        (folder / "helpers.py").write_text(f"VALUE = {value!r}\n")
        (folder / "json.py").write_text("raise RuntimeError('the folder shadowed json')\n")
        (folder / "probe.py").write_text("import json\n\nfrom helpers import VALUE\n\nDUMPS = json.dumps\n")
        loaded[value] = import_beside("probe", folder)
        assert import_beside("probe", folder) is loaded[value]
    assert (loaded["a"].VALUE, loaded["b"].VALUE) == ("a", "b")
    assert loaded["a"].DUMPS is sys.modules["json"].dumps
    assert loaded["a"].__name__ != loaded["b"].__name__ and plain_name(loaded["a"].__name__) == "probe"
    assert import_beside("json", None) is sys.modules["json"]  # no folder: the usual import path
