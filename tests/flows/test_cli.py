"""The `driftline` command line: catalog, evaluate, run (exit codes), history."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp
from typer.testing import CliRunner

from driftline.checks import registry
from driftline.checks.result import CheckResult
from driftline.flows.cli import EXIT_FAILED, EXIT_USAGE, app
from driftline.tasks.history.db import open_store
from driftline.tasks.history.store import record_run

runner = CliRunner()


def drift_result(psi: float, severity: str) -> dict:
    """A `drift.numeric` result on `age` in the stored format."""
    return CheckResult(
        check="drift.numeric",
        target="age",
        severity=severity,
        metrics={"psi": psi},
        thresholds={"psi": [0.1, 0.2, 0.3]},
        rows=100,
        failing_rows=4,
        details={"bins": 10},
    ).to_dict()


def store_runs(url: str, runs: list[tuple[str, dict]]) -> None:
    """Record one run a day from 2024-01-01, each with one result: (status, result) pairs."""
    engine = open_store(url)
    for day, (status, result) in enumerate(runs, start=1):
        record_run(
            engine,
            monitor="m",
            batch_id=f"b{day}",
            batch_time=datetime(2024, 1, day, tzinfo=UTC),
            results=[result],
            status=status,
            worst_severity=result["severity"],
            rows=100,
        )
    engine.dispose()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(3)
    reference = pd.DataFrame({"age": rng.normal(40, 10, 2000), "city": rng.choice(["a", "b"], 2000)})
    current = pd.DataFrame({"age": rng.normal(45, 10, 1500), "city": rng.choice(["a", "b", "c"], 1500)})
    reference.to_parquet(tmp_path / "ref.parquet")
    current.to_csv(tmp_path / "cur.csv", index=False)
    return tmp_path / "ref.parquet", tmp_path / "cur.csv"


def test_checks_lists_the_whole_catalog_as_json() -> None:
    result = runner.invoke(app, ["checks", "--json"])
    assert result.exit_code == 0
    entries = json.loads(result.stdout)
    assert [e["name"] for e in entries] == registry.names()
    [psi] = [e for e in entries if e["name"] == "drift.prediction"]
    assert psi["thresholds"] == {"psi": [0.1, 0.2, 0.3]}


def test_evaluate_prints_json_results_matching_scipy(files) -> None:
    ref, cur = files
    args = ["evaluate", "--check", "drift.numeric", "--reference", str(ref), "--current", str(cur), "--json"]
    result = runner.invoke(app, [*args, "--param", "numeric=[age]", "--param", "categorical=[city]"])
    assert result.exit_code == 0, result.output
    [age] = json.loads(result.stdout)
    expected = ks_2samp(pd.read_parquet(ref)["age"], pd.read_csv(cur)["age"]).statistic
    assert age["target"] == "age" and age["metrics"]["ks_statistic"] == pytest.approx(expected)


def test_evaluate_takes_one_feature_given_as_a_bare_word(files) -> None:
    """`--param features=age` names the feature `age`, not the features `a`, `g` and `e`."""
    ref, cur = files
    args = ["evaluate", "-c", "drift.categorical", "-r", str(ref), "--current", str(cur), "--json"]
    result = runner.invoke(app, [*args, "--param", "features=city", "--param", "categorical=[city]"])
    assert result.exit_code == 0, result.output
    assert [r["target"] for r in json.loads(result.stdout)] == ["city"]


def test_checks_shows_each_check_s_parameters_with_their_defaults() -> None:
    result = runner.invoke(app, ["checks"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    line = next(row for row in result.stdout.splitlines() if "drift.numeric" in row)
    assert "bins=10" in line


def test_evaluate_bad_input_exits_2_naming_the_problem(files, tmp_path) -> None:
    ref, cur = files
    base = ["evaluate", "--reference", str(ref), "--current", str(cur)]
    unknown = runner.invoke(app, [*base, "--check", "drift.numerics"])
    assert unknown.exit_code == EXIT_USAGE and "did you mean drift.numeric" in unknown.stderr
    bad_param = runner.invoke(app, [*base, "--check", "drift.numeric", "--param", "binz=3"])
    assert bad_param.exit_code == EXIT_USAGE and "'binz'" in bad_param.stderr
    missing = runner.invoke(
        app, ["evaluate", "--check", "drift.numeric", "-r", str(tmp_path / "nope.csv"), "--current", str(cur)]
    )
    assert missing.exit_code == EXIT_USAGE and "nope.csv: no such file" in missing.stderr


def test_evaluate_and_checks_do_not_import_prefect(files) -> None:
    ref, cur = files
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom driftline.flows.cli import app\n"
        f"args = ['evaluate', '-c', 'drift.categorical', '-r', {str(ref)!r}, '--current', {str(cur)!r}]\n"
        "r = CliRunner().invoke(app, args)\n"
        "assert r.exit_code == 0, r.output\n"
        "assert CliRunner().invoke(app, ['checks']).exit_code == 0\n"
        "assert 'prefect' not in sys.modules, 'prefect was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


@pytest.mark.usefixtures("prefect_server")
def test_run_exit_codes_and_history(demo_data: Path, tmp_path: Path) -> None:
    from tests.demo import write_spec

    url = f"sqlite:///{tmp_path / 'h.db'}"
    spec = write_spec(demo_data, tmp_path, store_url=url, retrain=None)
    passed = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--json"])
    assert passed.exit_code == 0, passed.output
    assert json.loads(passed.stdout)["status"] == "passed"
    failed = runner.invoke(app, ["run", str(spec), "--batch", "2018-12", "--json"])
    assert failed.exit_code == EXIT_FAILED, failed.output
    assert json.loads(failed.stdout)["status"] == "failed"  # console alerts go to stderr, not into the JSON
    assert "driftline: acs-employment, batch 2018-12" in failed.stderr

    history = runner.invoke(
        app,
        [
            "history",
            "acs-employment",
            "--check",
            "drift.prediction",
            "--metric",
            "psi",
            "--db",
            url,
            "--json",
        ],
    )
    assert history.exit_code == 0, history.output
    rows = json.loads(history.stdout)
    assert [r["batch_id"] for r in rows] == ["2016-06", "2018-12"]
    assert rows[0]["value"] < 0.1 <= rows[1]["value"]
    since = runner.invoke(app, ["history", "acs-employment", "--since", "2017-01-01", "--db", url, "--json"])
    assert {r["batch_id"] for r in json.loads(since.stdout)} == {"2018-12"}

    bad_spec = tmp_path / "bad.yaml"
    bad_spec.write_text("name: x\nreference: {path: a.csv}\nbatches: {path: b.csv}\nchecks: [drift.nope]\n")
    result = runner.invoke(app, ["run", str(bad_spec)])
    assert result.exit_code == EXIT_USAGE and "checks.0: unknown check 'drift.nope'" in result.stderr


def test_a_clean_run_prints_a_short_summary_and_its_report_and_verbose_every_result(
    demo_data: Path, tmp_path: Path
) -> None:
    from tests.demo import write_spec

    spec = write_spec(demo_data, tmp_path, store_url=f"sqlite:///{tmp_path / 'h.db'}", retrain=None)
    short = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local"])
    assert short.exit_code == 0, short.output
    lines = short.stdout.splitlines()
    assert len(lines) <= 40, short.stdout
    assert "PASSED" in lines[0] and "not listed (--verbose lists them)" in short.stdout
    report = next(line.removeprefix("report: ") for line in lines if line.startswith("report: "))
    assert Path(report).is_file() and Path(report).suffix == ".html"
    every = runner.invoke(app, ["run", str(spec), "--batch", "2016-06", "--engine", "local", "--verbose"])
    assert every.exit_code == 0, every.output
    stored = json.loads(runner.invoke(app, ["runs", str(spec), "--batch", "2016-06", "--json"]).stdout)
    verdicts = [r for r in stored if r["check"] not in ("data.summary", "run.drifted_features")]
    assert len(verdicts) > 20
    for r in verdicts:
        assert r["target"][:20] in every.stdout, r["target"]


def test_trend_reports_sustained_drift_and_robust_outliers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    psi = [0.02, 0.03, 0.01, 0.02, 0.25, 0.31, 0.40]
    severities = ["none", "none", "none", "none", "medium", "high", "high"]
    store_runs(url, [("passed", drift_result(v, sev)) for v, sev in zip(psi, severities, strict=True)])

    out = runner.invoke(
        app, ["trend", "m", "--metric", "psi", "--window", "4", "--z", "1", "--db", url, "--json"]
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    [streak] = report["sustained"]
    assert (streak["streak"], streak["since_batch"], streak["sustained"]) == (3, "b5", True)
    [outlier] = report["moved"]
    previous = np.array(psi[-5:-1])  # the 4 runs before the latest
    median = np.median(previous)
    expected_z = (psi[-1] - median) / (np.median(np.abs(previous - median)) / 0.6744897501960817)
    assert outlier["batch_id"] == "b7" and outlier["robust_z"] == pytest.approx(expected_z)


def test_history_does_not_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    result = runner.invoke(app, ["history", "m", "--db", f"sqlite:///{missing}"])
    assert result.exit_code == EXIT_USAGE and "no history database" in result.stderr
    assert not missing.exists()


def test_runs_lists_runs_and_shows_a_stored_batch(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    result = drift_result(0.42, "high")
    store_runs(url, [("passed", result), ("failed", result)])

    listed = runner.invoke(app, ["runs", "m", "--db", url, "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(r["batch_id"], r["status"]) for r in json.loads(listed.stdout)] == [
        ("b2", "failed"),
        ("b1", "passed"),
    ]
    stored = runner.invoke(app, ["runs", "m", "--batch", "b1", "--db", url, "--json"])
    assert json.loads(stored.stdout) == [result]
    missing = runner.invoke(app, ["runs", "m", "--batch", "b9", "--db", url])
    assert missing.exit_code == EXIT_USAGE and "no stored results" in missing.stderr
