"""data.summary: every statistic pinned against pandas and numpy computed independently (quantiles:
numpy's default linear interpolation), the sketch beyond the exact limit within its stated accuracy,
partitions merged to the whole batch's numbers, and the plan adding it to every monitor."""

from __future__ import annotations

import io
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from driftline.checks.columns import Columns
from driftline.checks.data_summary import QUANTILE_METRICS, QUANTILES, DataSummary
from driftline.checks.errors import CheckInputError
from driftline.checks.result import CheckResult
from driftline.checks.runner import run_check
from driftline.checks.testing import assert_same_results

NO_ROLES = Columns()


def frame(n: int, seed: int) -> pd.DataFrame:
    """Numbers with NaN and ±inf, integers, strings with nulls, a category with an unused level,
    booleans and dates."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(1.0, 1.2, n) * rng.choice([-1, 1], n, p=[0.2, 0.8])
    x[rng.random(n) < 0.05] = np.nan
    x[:3] = [np.inf, -np.inf, np.inf]
    colour = pd.Series(rng.choice(["red", "green", "blue", "teal"], n, p=[0.4, 0.3, 0.2, 0.1]), dtype=object)
    colour[rng.random(n) < 0.1] = None
    return pd.DataFrame(
        {
            "x": x,
            "age": rng.integers(18, 90, n),
            "colour": colour,
            "city": pd.Categorical(rng.choice(["Oslo", "Lima"], n), categories=["Lima", "Oslo", "Rome"]),
            "flag": rng.random(n) < 0.3,
            "when": pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 400, n), unit="D"),
        }
    )


def by_target(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.target: r for r in results}


def expected_numeric(values: pd.Series) -> dict[str, float]:
    """The numeric summary computed with pandas and numpy only."""
    finite = values[np.isfinite(values)]
    quantiles = np.quantile(finite.to_numpy(), QUANTILES, method="linear")
    return {
        "missing_share": values.isna().mean(),
        "count": float(values.notna().sum()),
        "infinite_share": np.isinf(values).mean(),
        "min": finite.min(),
        "max": finite.max(),
        "mean": finite.mean(),
        "std": finite.std(ddof=1),
        **dict(zip(QUANTILE_METRICS, quantiles, strict=True)),
    }


def assert_metrics(actual: dict[str, float | None], expected: dict[str, float]) -> None:
    assert set(actual) == set(expected)
    for name, value in expected.items():
        assert actual[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_numeric_statistics_match_pandas_and_numpy() -> None:
    reference, batch = frame(3000, 0), frame(2000, 1)
    results = by_target(DataSummary().run(reference, batch, NO_ROLES))
    for column in ("x", "age"):
        result = results[column]
        assert (result.status, result.severity, result.rows) == ("ok", "none", 2000)
        assert result.thresholds == {}
        assert_metrics(result.metrics, expected_numeric(batch[column].astype(float)))
        assert result.details["kind"] == "numeric"
        assert result.details["quantiles"] == "exact (linear interpolation)"
        assert_metrics(
            result.details["reference"]["metrics"], expected_numeric(reference[column].astype(float))
        )
        assert result.details["reference"]["rows"] == 3000


def test_categories_match_pandas_value_counts() -> None:
    reference, batch = frame(3000, 0), frame(2000, 1)
    results = by_target(DataSummary(top=3).run(reference, batch, NO_ROLES))
    for column in ("colour", "city", "flag"):
        result = results[column]
        counts = batch[column].astype(object).dropna().astype(str).value_counts()
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        present = counts.sum()
        assert result.metrics == pytest.approx(
            {
                "missing_share": batch[column].isna().mean(),
                "count": float(present),
                "distinct": float(len(counts)),
                "top_share": ranked[0][1] / present,
            }
        )
        assert result.details["kind"] == "categorical"
        assert [(v, c) for v, c, _ in result.details["top"]] == ranked
        assert [s for _, _, s in result.details["top"]] == pytest.approx([c / present for _, c in ranked])
        assert result.details["reference"]["kind"] == "categorical"
    assert results["city"].metrics["distinct"] == 2.0  # the unused level "Rome" is not a value
    assert {v for v, _, _ in results["flag"].details["top"]} == {"True", "False"}


def test_ties_among_top_categories_are_broken_by_value() -> None:
    batch = pd.DataFrame({"c": ["b", "a", "c", "a", "b", "d"]})
    result = DataSummary(top=2, min_count=1).run(batch, batch, NO_ROLES)[0]
    assert result.details["top"] == [["a", 2, 1 / 3], ["b", 2, 1 / 3]]


def test_values_seen_fewer_than_min_count_times_are_never_listed() -> None:
    """An id column's values are single rows: the summary counts them but shows none of them."""
    batch = pd.DataFrame({"id": [f"row-{i}" for i in range(40)], "c": ["x"] * 5 + ["y"] * 4 + ["z"] * 31})
    results = {r.target: r for r in DataSummary().run(batch, batch, NO_ROLES)}
    assert results["id"].details["top"] == [] and results["id"].metrics["distinct"] == 40.0
    assert [v for v, _, _ in results["c"].details["top"]] == ["z", "x"]  # "y" was seen 4 times
    with pytest.raises(CheckInputError, match="min_count must be a whole number >= 1"):
        DataSummary(min_count=0)


def test_dates_report_presence_and_their_first_and_last_value() -> None:
    reference, batch = frame(300, 0), frame(200, 1)
    batch.loc[[5, 9], "when"] = pd.NaT
    result = by_target(DataSummary().run(reference, batch, NO_ROLES))["when"]
    assert result.metrics == {"missing_share": 2 / 200, "count": 198.0}
    assert result.details["first"] == batch["when"].min().isoformat()
    assert result.details["last"] == batch["when"].max().isoformat()
    assert result.to_dict()["details"]["first"] == batch["when"].min().isoformat()


def test_nested_values_are_left_to_the_schema_check() -> None:
    reference = pd.DataFrame({"tags": [["a"], None, ["b", "c"]], "n": [1, 2, 3]})
    batch = pd.DataFrame({"tags": [["a"], None, ["b", "c"], []], "n": [1, 2, 3, 4]})
    assert [r.target for r in DataSummary().run(reference, batch, NO_ROLES)] == ["n"]


def test_an_all_missing_column_has_no_statistics() -> None:
    reference = frame(300, 0)
    batch = frame(200, 1).assign(x=np.nan)
    metrics = by_target(DataSummary().run(reference, batch, NO_ROLES))["x"].metrics
    assert metrics["missing_share"] == 1.0 and metrics["count"] == 0.0
    assert all(metrics[m] is None for m in ("min", "max", "mean", "std", *QUANTILE_METRICS))


def test_columns_the_batch_lacks_and_features_narrowing() -> None:
    reference, batch = frame(300, 0), frame(200, 1).drop(columns=["age"])
    results = by_target(DataSummary().run(reference, batch, NO_ROLES))
    assert results["age"].status == "skipped" and "not in the batch" in results["age"].reason
    assert results["age"].details["reference"]["metrics"]["count"] == 300.0
    narrowed = by_target(DataSummary(features=["colour", "nowhere"]).run(reference, batch, NO_ROLES))
    assert sorted(narrowed) == ["colour", "nowhere"]
    assert narrowed["nowhere"].status == "error" and "neither" in narrowed["nowhere"].reason


def test_a_column_only_the_batch_has_has_no_reference_summary() -> None:
    reference, batch = frame(300, 0), frame(200, 1).assign(extra=1.5)
    result = by_target(DataSummary().run(reference, batch, NO_ROLES))["extra"]
    assert result.status == "ok" and result.details["reference"] is None


@pytest.mark.parametrize(
    "params",
    [
        {"top": 0},
        {"top": 2.5},
        {"exact_quantile_rows": -1},
        {"relative_accuracy": 0},
        {"relative_accuracy": 0.5},
    ],
)
def test_bad_parameters_are_named(params: dict) -> None:
    with pytest.raises(CheckInputError, match=next(iter(params))):
        DataSummary(**params)


def test_no_metric_takes_a_threshold() -> None:
    with pytest.raises(CheckInputError, match="no threshold for metric"):
        DataSummary(thresholds={"mean": [1.0]})


# --- beyond the exact limit: the sketch ---------------------------------------------------------------


def sketch_values(n: int, seed: int) -> pd.DataFrame:
    """Wide-ranging values of both signs, exact zeros, ties and a near-zero cluster."""
    rng = np.random.default_rng(seed)
    x = rng.lognormal(2.0, 2.0, n) * rng.choice([-1, 1], n, p=[0.3, 0.7])
    x[rng.random(n) < 0.05] = 0.0
    x[rng.random(n) < 0.05] = 1e-15
    return pd.DataFrame({"x": x, "normal": rng.normal(100.0, 3.0, n), "small": rng.integers(0, 40, n)})


@pytest.mark.parametrize("accuracy", [0.001, 0.01])
def test_sketch_quantiles_are_within_the_stated_accuracy(accuracy: float) -> None:
    batch = sketch_values(50_000, 2)
    check = DataSummary(exact_quantile_rows=1000, relative_accuracy=accuracy)
    results = by_target(check.run(batch, batch, NO_ROLES))
    for column in batch.columns:
        values = np.sort(batch[column].to_numpy(dtype=float))
        result = results[column]
        assert result.details["quantiles"].startswith("sketch")
        for name, q in zip(QUANTILE_METRICS, QUANTILES, strict=True):
            h = (len(values) - 1) * q
            neighbours = np.abs(values[[math.floor(h), math.ceil(h)]])
            bound = accuracy * neighbours.max() + 1e-12  # each order statistic within `accuracy` of its value
            assert abs(result.metrics[name] - np.quantile(values, q)) <= bound, (column, name)
        # counts, extremes and moments stay exact
        assert result.metrics["min"] == values[0] and result.metrics["max"] == values[-1]
        assert result.metrics["mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert result.metrics["std"] == pytest.approx(values.std(ddof=1), rel=1e-12)
    # small integers each fill a bucket of their own: their quantiles are exact
    small = np.quantile(batch["small"], QUANTILES)
    assert [results["small"].metrics[m] for m in QUANTILE_METRICS] == pytest.approx(small, rel=1e-12)


@pytest.mark.parametrize("exact_rows", [100, 900, 20_000])
def test_partitions_merge_to_the_whole_batch(exact_rows: int) -> None:
    """Below, across and above the exact limit, any partitioning gives the whole batch's results."""
    reference, batch = sketch_values(2000, 0), sketch_values(3000, 1)
    check = DataSummary(exact_quantile_rows=exact_rows)
    profile = check.fit(reference, NO_ROLES)
    whole = check.evaluate(batch, profile, NO_ROLES)
    for bounds in ([0, 250, 250, 1700, 3000], [0, 2999, 3000]):
        parts = [check.partial(batch.iloc[a:z], profile, NO_ROLES) for a, z in itertools.pairwise(bounds)]
        assert_same_results(check.finish(check.merge(parts), profile, NO_ROLES), whole)


def test_a_run_screens_an_empty_batch() -> None:
    results = run_check(DataSummary(), frame(100, 1).iloc[:0], NO_ROLES, reference=frame(100, 0))
    assert [(r.status, r.reason) for r in results] == [("skipped", "the batch is empty")]


# --- every monitor gets it ----------------------------------------------------------------------------


def planned(checks: list, **top: object) -> list[tuple[str, dict]]:
    from driftline.tasks.config.spec import parse_spec
    from driftline.tasks.run.plan import CheckPlan

    spec = parse_spec(
        {
            "name": "m",
            "reference": {"path": "r.csv"},
            "batches": {"path": "{batch}.csv"},
            "checks": checks,
            **top,
        }
    )
    return [(p.check.name, p.check.params()) for p in CheckPlan.from_spec(spec).checks]


def test_the_plan_summarises_every_batch_after_the_schema_check() -> None:
    assert [name for name, _ in planned(["drift.numeric"])] == [
        "schema.columns",
        "data.summary",
        "drift.numeric",
    ]


def test_a_listed_summary_is_planned_once_as_configured() -> None:
    plan = planned(["drift.numeric", {"check": "data.summary", "params": {"top": 3}}])
    assert [name for name, _ in plan] == ["schema.columns", "drift.numeric", "data.summary"]
    assert plan[-1][1]["top"] == 3


def spec_has_summary_switch() -> bool:
    from driftline.tasks.config.spec import MonitorSpec

    return "summary" in MonitorSpec.model_fields


@pytest.mark.skipif(not spec_has_summary_switch(), reason="the spec has no `summary` switch yet")
def test_summary_false_leaves_it_out() -> None:
    assert [name for name, _ in planned(["drift.numeric"], summary=False)] == [
        "schema.columns",
        "drift.numeric",
    ]


@pytest.mark.parametrize("zone", [None, "Europe/Paris"])
def test_a_profile_with_dates_is_stored_as_data_and_reads_back_the_same(zone: str | None) -> None:
    """The profile cache stores a date column's summary (it used to warn 'cannot store a value of type
    pandas.Timestamp' and keep the profile in memory only), zone included."""
    from driftline.checks.profile_format import dump_profile, load_profile

    reference, batch = frame(300, 0), frame(200, 1)
    if zone:
        reference["when"] = reference["when"].dt.tz_localize(zone)
        batch["when"] = batch["when"].dt.tz_localize(zone)
    check = DataSummary()
    profile = check.fit(reference, NO_ROLES)
    stored = load_profile(io.BytesIO(dump_profile(profile, "k")), "k")
    result = by_target(check.evaluate(batch, stored, NO_ROLES))["when"]
    assert result.details["first"] == batch["when"].min().isoformat()
    assert result.details["last"] == batch["when"].max().isoformat()
    assert result.details["reference"]["first"] == reference["when"].min().isoformat()
    assert pd.Timestamp(result.details["reference"]["last"]) == reference["when"].max()
