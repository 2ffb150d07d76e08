"""Subset codes computed once per run and shared by the subset checks: the same results as each check
cutting the batch itself, one cut per feature, and visible to forked check workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from driftline.checks import slice_codes
from driftline.checks.slice_codes import batch_codes, sharing_codes
from driftline.checks.slicing import apply_slices, fit_slices
from driftline.tasks.config.spec import load_spec
from driftline.tasks.run.isolation import run_isolated
from driftline.tasks.run.pipeline import run_monitor
from tests.demo import write_spec

SUBSET_CHECKS = ["subset.accuracy", "subset.f1", "subset.auc"]


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "x": np.where(rng.random(2000) < 0.05, np.nan, rng.normal(size=2000)),
            "c": rng.choice(["a", "b", "c", None], size=2000),
        }
    )


def test_codes_from_the_store_equal_a_direct_cut_and_other_frames_are_cut_themselves() -> None:
    frame = _frame()
    numeric = fit_slices(frame["x"], bins=4, max_categories=20, numeric=True)
    categorical = fit_slices(frame["c"], bins=4, max_categories=2, numeric=False)
    with sharing_codes(frame) as store:
        store.add("x", numeric)
        store.add("c", categorical)
        store.add("absent", numeric)  # left to the check, which reports the missing column
        assert len(store) == 2
        for feature, slices in (("x", numeric), ("c", categorical)):
            kept = store.get(feature, slices)
            assert kept is not None and kept.dtype == np.uint8
            np.testing.assert_array_equal(
                batch_codes(frame, feature, slices), apply_slices(frame[feature], slices)
            )
        copy = frame.copy()
        assert store.get("x", numeric) is not batch_codes(copy, "x", numeric)
        other_cut = fit_slices(frame["x"], bins=3, max_categories=20, numeric=True)
        assert store.get("x", other_cut) is None
    assert slice_codes._stores == {}


def test_a_forked_worker_reads_the_codes_the_parent_computed() -> None:
    frame = _frame()
    slices = fit_slices(frame["x"], bins=4, max_categories=20, numeric=True)
    with sharing_codes(frame) as store:
        store.add("x", slices)
        marked = store.get("x", slices)
        assert marked is not None
        marked[:] = 7  # a value no real cut gives: only the parent's store can be its source
        codes = run_isolated(lambda: batch_codes(frame, "x", slices), timeout_s=60)
    assert (codes == 7).all()


def _subset_results(summary: Any) -> list[dict[str, Any]]:
    return [r for r in summary.to_dict()["results"] if r["check"].startswith("subset.")]


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_cached_run_cuts_each_feature_once_and_finds_what_every_check_cutting_its_own_found(
    demo_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    path = write_spec(
        demo_data,
        tmp_path,
        checks=SUBSET_CHECKS,
        store_url=f"sqlite:///{tmp_path / 'h.db'}",
        execution={"isolation": isolation},
    )
    spec = load_spec(path)
    first = run_monitor(spec, "2018-12", alerts=False, retrain=False)  # fits: every check cuts its own

    cuts: list[str] = []
    real = slice_codes.apply_slices

    def counted(values: pd.Series, slices: dict[str, Any]) -> np.ndarray:
        cuts.append(str(values.name))
        return real(values, slices)

    monkeypatch.setattr(slice_codes, "apply_slices", counted)
    second = run_monitor(spec, "2018-12", alerts=False, retrain=False)

    assert _subset_results(second) == _subset_results(first)
    assert len(_subset_results(first)) > len(SUBSET_CHECKS)
    features = {r["target"] for r in _subset_results(first) if r["status"] == "ok"}
    # every feature is cut once, in the parent (workers that fork never add to this list)
    assert sorted(cuts) == sorted(set(cuts)) and features <= set(cuts)
