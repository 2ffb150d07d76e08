"""The run report end to end: written by every run of the plain engine, self-contained, small, showing
the failing checks with their pictures and the stored values, re-rendered by `driftline report`."""

from __future__ import annotations

import base64
import html
import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from driftline.flows import cli_report  # noqa: F401  (registers `driftline report`)
from driftline.flows.cli_common import app
from driftline.flows.demo import worst_run
from driftline.tasks.config.spec import load_spec
from driftline.tasks.history.db import connected_store
from driftline.tasks.report import ReportDataError, render_html, write_html_report
from driftline.tasks.report.gather import from_store, from_summary
from tests.report.conftest import BATCHES, SENTINEL, SyntheticRun

MAX_BYTES = 2 * 1024 * 1024


def _page(run: SyntheticRun, batch: str = BATCHES[-1]) -> str:
    summary = run.summaries[BATCHES.index(batch)]
    assert summary.report is not None, "the run did not write its report"
    return Path(summary.report).read_text()


def test_every_run_writes_its_report_into_its_report_folder(synthetic_run: SyntheticRun) -> None:
    for batch, summary in zip(BATCHES, synthetic_run.summaries, strict=True):
        path = Path(summary.report)
        assert (
            path.name == "report.html"
            and path.parent.name == batch
            and path.parent.parent.name == "synthetic"
        )
        assert summary.to_dict()["report"] == str(path)


def test_the_report_is_self_contained_small_and_carries_no_raw_rows(synthetic_run: SyntheticRun) -> None:
    page = _page(synthetic_run)
    assert len(page.encode()) < MAX_BYTES
    assert SENTINEL not in page
    external = re.findall(r"""(?:src|href)\s*=\s*["'](?!data:|#|\.\./)([^"']*)""", page)
    assert external == []
    assert "@import" not in page and "url(http" not in page and "<script" not in page
    images = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    decoded = [base64.b64decode(b).decode() for b in images]
    assert decoded and all(svg.lstrip().startswith("<?xml") and "<svg" in svg for svg in decoded)
    assert not any(SENTINEL in svg for svg in decoded)


def test_failing_checks_get_a_section_with_their_picture_and_the_rest_only_a_row(
    synthetic_run: SyntheticRun,
) -> None:
    page = _page(synthetic_run)
    summary = synthetic_run.summaries[-1]
    failing = {r["check"] for r in summary.to_dict()["results"] if r["severity"] in ("medium", "high")}
    assert failing >= {"drift.numeric", "drift.categorical", "subset.auc", "performance.calibration"}
    sections = re.findall(r'<section class="check (\w+)" id="check-([\w-]+)"', page)
    assert {anchor for _, anchor in sections} == {c.replace(".", "-") for c in failing}
    assert [severity for severity, _ in sections] == sorted(
        (severity for severity, _ in sections), key=["high", "medium"].index
    )
    for caption in (
        "reference vs batch distribution",
        "categories whose share moved most",
        "subsets against the same subsets in the reference",
        "calibration curves",
    ):
        assert caption in page
    table = page.split('id="results"')[1]
    verdicts = [r for r in summary.results if r.check != "data.summary"]  # described in its own section
    assert table.count("<tr><td>") == len(verdicts)  # the table: one row per result
    assert f"<b>{summary.rows}</b>" in page
    assert ">failed<" in page and ">high<" in page
    (drift,) = [r for r in summary.to_dict()["results"] if r["check"] == "drift.numeric"]
    grades = [html.unescape(g.split("</p>")[0]) for g in page.split('<p class="grade">')[1:]]
    assert drift["reason"] in grades  # the grade in words


def test_shown_numbers_are_the_runs_and_the_trend_covers_every_run(synthetic_run: SyntheticRun) -> None:
    page = _page(synthetic_run)
    summary = synthetic_run.summaries[-1]
    (drift,) = [r for r in summary.to_dict()["results"] if r["check"] == "drift.numeric"]
    assert f"{drift['metrics']['psi']:.4g}" in page
    assert "psi over the last 5 run(s)" in page
    passing = _page(synthetic_run, BATCHES[0])
    assert "No check reached medium severity" in passing and '<section class="check' not in passing


def test_report_from_the_store_matches_the_run(synthetic_run: SyntheticRun) -> None:
    summary = synthetic_run.summaries[-1].to_dict()
    with connected_store(synthetic_run.database_url, create=False) as engine:
        stored = from_store(engine, "synthetic", BATCHES[-1])
        live = from_summary(summary, engine=engine)
        newest = from_store(engine, "synthetic")
        with pytest.raises(ReportDataError, match="batch 'nope'"):
            from_store(engine, "synthetic", "nope")
        with pytest.raises(ReportDataError, match="no stored run"):
            from_store(engine, "unknown")
    assert newest.batch_id == BATCHES[-1] and stored.status == summary["status"]
    assert [(r["check"], r["target"], r["severity"]) for r in stored.failing()] == [
        (r["check"], r["target"], r["severity"]) for r in live.failing()
    ]
    assert stored.history["batch_id"].nunique() == live.history["batch_id"].nunique() == len(BATCHES)
    psi = lambda data: data.history.query("check == 'drift.numeric' and metric == 'psi'")["value"]  # noqa: E731
    np.testing.assert_allclose(psi(stored).to_numpy(), psi(live).to_numpy())
    assert stored.neighbours() == (BATCHES[-2], None)


def test_history_window_ends_at_the_reported_batch(synthetic_run: SyntheticRun) -> None:
    with connected_store(synthetic_run.database_url, create=False) as engine:
        middle = from_store(engine, "synthetic", BATCHES[2], runs=2)
    assert sorted(middle.history["batch_id"].unique()) == BATCHES[1:3]


def test_driftline_report_rerenders_a_stored_batch(synthetic_run: SyntheticRun) -> None:
    path = Path(synthetic_run.summaries[-2].report)
    path.unlink()
    runner = CliRunner()
    done = runner.invoke(app, ["report", str(synthetic_run.spec_path), "--batch", BATCHES[-2], "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["report"] == str(path) and path.exists()
    missing = runner.invoke(app, ["report", str(synthetic_run.spec_path), "--batch", "2030-01"])
    assert missing.exit_code == 2 and "no stored run" in missing.output


def test_report_open_uses_the_web_browser(
    synthetic_run: SyntheticRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    done = CliRunner().invoke(app, ["report", str(synthetic_run.spec_path), "--open"])
    assert done.exit_code == 0, done.output
    assert opened == [Path(done.output.strip()).resolve().as_uri()]


def test_text_from_the_data_is_escaped(synthetic_run: SyntheticRun) -> None:
    summary = synthetic_run.summaries[-1].to_dict()
    hostile = '<script>alert("x")</script>'
    summary["results"] = [{**r, "target": hostile} for r in summary["results"]]
    page = render_html(from_summary(summary))
    assert hostile not in page and "&lt;script&gt;" in page


def test_a_report_that_cannot_be_written_never_fails_the_run(
    synthetic_run: SyntheticRun, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from driftline.tasks.run.pipeline import run_monitor

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("driftline.tasks.report.write_html_report", broken)
    with caplog.at_level(logging.WARNING):
        summary = run_monitor(load_spec(synthetic_run.spec_path), BATCHES[0], alerts=False, retrain=False)
    assert summary.report is None and summary.status == "passed"
    assert "HTML report not written: OSError: disk full" in caplog.text


def test_report_without_a_readable_store_shows_this_run_alone(
    synthetic_run: SyntheticRun, tmp_path: Path
) -> None:
    spec = load_spec(synthetic_run.spec_path)
    summary = synthetic_run.summaries[-1]
    path = write_html_report(spec, summary, database_url=f"sqlite:///{tmp_path / 'absent.db'}")
    page = path.read_text()
    assert "psi over the last 1 run(s)" in page and "<section" in page


def test_demo_names_the_worst_batch() -> None:
    def run(batch: str, worst: str, severities: list[str]) -> dict:
        results = [{"status": "ok", "severity": s} for s in severities]
        return {"batch_id": batch, "worst_severity": worst, "results": results}

    runs = [run("a", "none", ["none"]), run("b", "high", ["high", "medium"]), run("c", "high", ["high"])]
    assert worst_run(runs)["batch_id"] == "b"
    assert worst_run([*runs, run("d", "high", ["high", "high"])])["batch_id"] == "d"
    assert worst_run([]) is None


def _ranked_summary() -> dict:
    """A finished run (not stored): three drifted features in column order, the prediction's drift
    last, each feature with its importance and every result with its evidence."""

    def drift(check: str, target: str, share: float | None = None, rank: int = 0) -> dict:
        details: dict = {
            "edges": [0, 1],
            "reference_shares": [0.3, 0.4, 0.3],
            "current_shares": [0.2, 0.3, 0.5],
        }
        if share is not None:
            details["importance"] = {"share": share, "rank": rank, "of": 3, "method": "permutation"}
        return {
            "check": check,
            "target": target,
            "status": "ok",
            "severity": "high",
            "metrics": {"psi": 0.9, "psi_bound": 0.8},
            "thresholds": {"psi": [0.1, 0.2, 0.3]},
            "rows": 1000,
            "failing_rows": None,
            "model_impact": None,
            "details": details,
            "reason": "psi 0.9, lower bound 0.8 ≥ high threshold 0.3",
            "evidence": {"psi": {"estimate": 0.9, "noise": "scaled_chi2", "scale": 0.001, "df": 8.0}},
        }

    results = [
        drift("drift.numeric", "AGE", 0.1, 3),
        drift("drift.numeric", "LIMIT_BAL", 0.6, 1),
        drift("drift.numeric", "PAY_0", 0.3, 2),
        drift("drift.prediction", "score"),
    ]
    return {
        "monitor": "credit",
        "batch_id": "b1",
        "batch_time": "2024-05-01T00:00:00+00:00",
        "rows": 1000,
        "status": "failed",
        "worst_severity": "high",
        "results": results,
    }


def test_sections_and_findings_come_in_rank_order_with_comparison_and_importance() -> None:
    page = render_html(from_summary(_ranked_summary()))
    sections = re.findall(r'<section class="check \w+" id="check-([\w-]+)"', page)
    assert sections == ["drift-prediction", "drift-numeric"]
    targets = re.findall(r'<span class="target">([^<]+)</span>', page)
    assert targets == ["score", "LIMIT_BAL", "PAY_0", "AGE"]
    comparison = "batch 50% vs reference 30%, psi 0.9 (bound 0.8; high threshold 0.3)"
    assert f'<p class="comparison">share of rows with LIMIT_BAL &gt; 1: {comparison}</p>' in page
    assert '<span class="importance">importance 60% (rank 1 of 3)</span>' in page
    table = page.split('id="results"')[1]
    assert [t for t in re.findall(r"<tr><td>[\w.]+</td><td>(\w+)", table)] == targets


def test_likely_causes_open_the_report_and_a_clean_run_has_none() -> None:
    run = _ranked_summary()
    page = render_html(from_summary(run))
    assert "Likely causes" not in page
    nulls = {
        "check": "abnormal.nulls",
        "target": "<i>EDUCATION",
        "status": "ok",
        "severity": "high",
        "metrics": {"null_rate_increase": 1.0, "reference_null_rate": 0.002},
        "thresholds": {"null_rate_increase": [0.01, 0.05, 0.1]},
        "rows": 1000,
        "failing_rows": 1000,
        "model_impact": None,
        "details": {"null_rate": 1.0},
        "reason": "every value null",
    }
    run["results"].append(nulls)
    page = render_html(from_summary(run))
    causes = page.split('<section class="causes">')[1].split("</section>")[0]
    assert "<b>&lt;i&gt;EDUCATION</b>: every value is null (reference 0.2%)" in causes
    assert page.index('<section class="causes">') < page.index('id="check-')
