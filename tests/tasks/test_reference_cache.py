"""An unchanged reference is neither read nor hashed again once every profile is cached; any change to
the file, the roles or the model makes the run read it again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from driftline import load_spec, run_monitor
from driftline.checks.fingerprint import frame_fingerprint
from driftline.tasks.references.reference import model_fingerprint
from driftline.tasks.run import pipeline
from tests.tasks.model_fixture import load


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The reference reads of the runs made in a test."""
    seen: list[str] = []
    original = pipeline.load_reference

    def counting(source: Any, *limits: Any) -> pd.DataFrame:
        seen.append(source.describe())
        return original(source, *limits)

    monkeypatch.setattr(pipeline, "load_reference", counting)
    return seen


def frames(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    label = (x[:, 0] + x[:, 1] + rng.normal(size=n) > 0).astype(int)
    return pd.DataFrame({"id": np.arange(n), "f0": x[:, 0], "f1": x[:, 1], "label": label})


def write_monitor(folder: Path, checks: list[str], model: bool = False) -> Path:
    data = folder / "data"
    data.mkdir(exist_ok=True)
    frames(0, 2000).to_parquet(data / "reference.parquet")
    frames(1, 500).assign(f0=lambda f: f["f0"] + 0.5).to_parquet(data / "b1.parquet")
    spec = {
        "name": "cached",
        "reference": {"path": "data/reference.parquet"},
        "batches": {"path": "data/{batch}.parquet"},
        "columns": {"id": "id", "label": "label", "numeric": ["f0", "f1"]},
        "checks": checks,
        "store_url": f"sqlite:///{folder / 'h.db'}",
        "alerts": {"min_severity": "high"},
    }
    if model:
        spec["model"] = "tests.tasks.model_fixture:load"
    path = folder / "monitor.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def metrics(summary: Any) -> dict[tuple[str, str], dict[str, float]]:
    return {(r["check"], r["target"]): r["metrics"] for r in summary.to_dict()["results"]}


def test_a_cached_reference_is_not_read_again_and_gives_the_same_results(
    tmp_path: Path, reads: list[str]
) -> None:
    spec = load_spec(write_monitor(tmp_path, ["drift.numeric", "performance.overall"]))
    first = run_monitor(spec, "b1")
    assert len(reads) == 1
    second = run_monitor(spec, "b1")
    assert len(reads) == 1  # every profile cached: the reference was not read
    assert metrics(second) == metrics(first)
    assert metrics(first)[("drift.numeric", "f0")]["psi"] > 0.1  # a real comparison was made


def test_a_profile_that_is_none_is_cached_like_any_other(tmp_path: Path, reads: list[str]) -> None:
    """expectations.suite fits to no profile at all: a cached run still reads the reference zero times,
    in the parent or in a check's worker (threads here, so that a worker's read is counted)."""
    pytest.importorskip("great_expectations")
    path = write_monitor(tmp_path, ["drift.numeric"])
    spec = yaml.safe_load(path.read_text())
    suite = [{"type": "expect_column_values_to_not_be_null", "column": "f0"}]
    spec["checks"].append({"check": "expectations.suite", "params": {"expectations": suite}})
    spec["execution"] = {"isolation": "thread"}
    path.write_text(yaml.safe_dump(spec))
    first = run_monitor(load_spec(path), "b1")
    assert len(reads) == 1
    second = run_monitor(load_spec(path), "b1")
    assert len(reads) == 1
    status = {r["check"]: r["status"] for r in second.to_dict()["results"]}
    assert status["expectations.suite"] == "ok" and metrics(second) == metrics(first)


def test_a_touched_or_changed_reference_is_read_again(tmp_path: Path, reads: list[str]) -> None:
    path = write_monitor(tmp_path, ["drift.numeric"])
    spec = load_spec(path)
    reference = tmp_path / "data" / "reference.parquet"
    run_monitor(spec, "b1")
    stat = reference.stat()
    os.utime(reference, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    same = run_monitor(spec, "b1")
    assert len(reads) == 2  # the file's identity changed: read and hashed again (same content)

    frames(5, 2000).assign(f0=lambda f: f["f0"] + 0.5).to_parquet(reference)
    changed = run_monitor(spec, "b1")
    assert len(reads) == 3
    assert metrics(changed)[("drift.numeric", "f0")]["psi"] < metrics(same)[("drift.numeric", "f0")]["psi"]


def test_a_new_check_reads_the_reference_once_for_its_profile(tmp_path: Path, reads: list[str]) -> None:
    path = write_monitor(tmp_path, ["drift.numeric"])
    run_monitor(load_spec(path), "b1")
    spec = yaml.safe_load(path.read_text())
    spec["checks"] = ["drift.numeric", "abnormal.out_of_range"]
    path.write_text(yaml.safe_dump(spec))
    summary = run_monitor(load_spec(path), "b1")
    assert len(reads) == 2
    assert {r["check"]: r["status"] for r in summary.to_dict()["results"]} == {
        "schema.columns": "ok",
        "data.summary": "ok",
        "drift.numeric": "ok",
        "abnormal.out_of_range": "ok",
        "run.drifted_features": "ok",
    }


def test_with_a_model_the_scored_reference_is_cached_under_the_models_fingerprint(
    tmp_path: Path, reads: list[str]
) -> None:
    spec = load_spec(write_monitor(tmp_path, ["drift.prediction"], model=True))
    first = run_monitor(spec, "b1")
    second = run_monitor(spec, "b1")
    assert len(reads) == 1 and metrics(second) == metrics(first)
    assert model_fingerprint(load()) == model_fingerprint(load())  # a refitted identical model matches
    assert model_fingerprint(lambda: None) is None  # a model that cannot be pickled is never cached


def test_the_stored_reference_hash_is_the_content_hash(tmp_path: Path, reads: list[str]) -> None:
    spec = load_spec(write_monitor(tmp_path, ["drift.numeric"]))
    run_monitor(spec, "b1")
    summary = run_monitor(spec, "b1")
    from driftline.tasks.history.db import open_store
    from driftline.tasks.history.query import list_runs

    engine = open_store(spec.database_url())
    try:
        (run,) = list_runs(engine, "cached")
    finally:
        engine.dispose()
    expected = frame_fingerprint(pd.read_parquet(tmp_path / "data" / "reference.parquet"))
    assert run["details"]["reference_hash"] == expected and run["details"]["reference_rows"] == 2000
    assert summary.status in ("passed", "failed")
