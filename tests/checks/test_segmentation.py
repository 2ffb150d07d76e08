"""Honest decision-tree slicing: rule text, honest estimates, t-test flags, and model comparison."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from driftline.checks.errors import CheckInputError
from driftline.checks.segmentation import compare_models, segment, two_sample_ttest
from tests.golden import golden_cases

RELATIONSHIPS = ["Husband", "Wife", "Own-child", "Unmarried", "Not-in-family"]


def _labels(column: pd.Series) -> pd.Series:
    return column.astype(str).where(column.notna(), "<missing>")


def _rule_mask(rule: str, frame: pd.DataFrame) -> np.ndarray:
    """Evaluate a rule's text with pandas, independently of the code that wrote it."""
    mask = np.ones(len(frame), dtype=bool)
    if rule == "all data":
        return mask
    for part in re.split(r", (?![^{]*})", rule):
        missing_ok = part.endswith(" or missing")
        part = part.removesuffix(" or missing")
        if m := re.fullmatch(r"(\S+) (not in|in) \{(.*)\}", part):
            inside = _labels(frame[m[1]]).isin(m[3].split(", ")).to_numpy()
            mask &= ~inside if m[2] == "not in" else inside
            continue
        if m := re.fullmatch(r"(\S+) (==|!=) (.*)", part):
            equal = (_labels(frame[m[1]]) == m[3]).to_numpy()
            mask &= equal if m[2] == "==" else ~equal
            continue
        m = re.fullmatch(r"(?:(\S+) < )?(\S+) (<=|>) (\S+)", part)
        values = frame[m[2]].to_numpy(dtype=float)
        low, high = (float(m[1]) if m[1] else -np.inf), float(m[4])
        inside = (values > low) & (values <= high) if m[3] == "<=" else values > high
        mask &= inside | (np.isnan(values) if missing_ok else False)
    return mask


def _splitmix64(x: int) -> int:
    """splitmix64's finaliser in plain Python integers (the published constants)."""
    mask = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def documented_split(
    dimensions: pd.DataFrame, values: np.ndarray, fraction: float, seed: int, ids: pd.Series | None = None
) -> np.ndarray:
    """The growing rows as the segmentation module documents them, rebuilt from pandas' row hashes."""
    contents = [int(h) for h in pd.util.hash_pandas_object(dimensions, index=False)]
    keys = contents if ids is None else [int(h) for h in pd.util.hash_pandas_object(ids, index=False)]
    ties = [int(h) for h in pd.util.hash_array(np.asarray(values, dtype=float))]
    seen: dict[int, int] = {}
    occurrence = [0] * len(keys)
    for i in sorted(range(len(keys)), key=lambda i: (keys[i], contents[i], ties[i])):
        occurrence[i] = seen.get(keys[i], 0)
        seen[keys[i]] = occurrence[i] + 1
    salt, mask = _splitmix64(seed), (1 << 64) - 1
    mixed = [_splitmix64((_splitmix64(k ^ salt) + o) & mask) for k, o in zip(keys, occurrence, strict=True)]
    ranked = sorted(range(len(keys)), key=lambda i: (mixed[i], contents[i], ties[i]))
    grow = np.zeros(len(keys), dtype=bool)
    grow[ranked[: round(fraction * len(keys))]] = True
    return grow


def _planted(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "relationship": pd.Categorical(rng.choice(RELATIONSHIPS, n)),
            "marital-status": rng.choice(["Married", "Never-married", "Divorced"], n),
            "education-num": rng.integers(1, 17, n),
            "noise": rng.normal(size=n),
        }
    )
    couple = frame["relationship"].isin(["Husband", "Wife"]).to_numpy()
    values = 0.4 + 0.06 * couple - 0.04 * (frame["education-num"] > 10).to_numpy() + rng.normal(0, 0.05, n)
    return frame, values


# --- the t-test -------------------------------------------------------------------------------------


@pytest.mark.parametrize("equal_var", [True, False])
def test_ttest_matches_the_golden_case_and_scipy(equal_var: bool) -> None:
    (case,) = golden_cases("ttest_two_sample")
    a, b = np.asarray(case["inputs"]["sample_a"]), np.asarray(case["inputs"]["sample_b"])
    t, p = two_sample_ttest(len(a), a.mean(), a.var(ddof=1), len(b), b.mean(), b.var(ddof=1), equal_var)
    prefix = "student" if equal_var else "welch"
    assert t[0] == pytest.approx(case["expected"][f"{prefix}_t"], abs=case["tolerance"])
    assert p[0] == pytest.approx(case["expected"][f"{prefix}_p"], abs=case["tolerance"])
    expected = stats.ttest_ind(a, b, equal_var=equal_var)
    assert p[0] == pytest.approx(expected.pvalue, rel=1e-12)


def test_ttest_edge_cases() -> None:
    t, p = two_sample_ttest(
        [1, 5, 4, 3], [0.2, 0.3, 0.3, 0.3], [0, 0.1, 0, 0], [5, 1, 4, 3], [0.2, 0.3, 0.3, 0.4], [0.1, 0, 0, 0]
    )
    assert np.isnan(p[0]) and np.isnan(p[1])  # a side with one row cannot be tested
    assert p[2] == 1.0 and t[2] == 0.0  # two constant samples, same value
    assert p[3] == 0.0 and t[3] == -np.inf  # two constant samples, different values


# --- rules read in the original categories ---------------------------------------------------------


def test_categorical_rules_read_as_category_sets() -> None:
    frame, values = _planted(4000, 0)
    seg = segment(frame[["relationship"]], values, max_depth=1)
    assert [s.rule for s in seg.slices] == [
        "relationship not in {Husband, Wife}",
        "relationship in {Husband, Wife}",
    ]


def test_a_single_category_reads_as_equality() -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"marital-status": rng.choice(["Married", "Never-married", "Divorced"], 3000)})
    values = np.where(frame["marital-status"] == "Married", 0.41, 0.47) + rng.normal(0, 0.02, 3000)
    seg = segment(frame, values, max_depth=1)
    assert {s.rule for s in seg.slices} == {"marital-status == Married", "marital-status != Married"}
    married = next(s for s in seg.slices if s.rule == "marital-status == Married")
    assert married.delta < -0.02 and not married.false_discovery


def test_numeric_conditions_merge_into_intervals() -> None:
    rng = np.random.default_rng(2)
    rate = rng.uniform(5, 25, 5000)
    values = np.select([rate <= 12.5, rate <= 15.4], [0.41, 0.33], 0.29) + rng.normal(0, 0.01, 5000)
    seg = segment(pd.DataFrame({"int_rate": rate}), values, max_depth=2)
    rules = [s.rule for s in seg.slices]
    assert any(re.fullmatch(r"1[23]\.\d+ < int_rate <= 1[56]\.\d+", r) for r in rules), rules


@pytest.mark.parametrize("seed", [0, 1])
def test_slices_partition_the_rows_exactly_as_their_rules_read(seed: int) -> None:
    frame, values = _planted(3000, seed)
    frame["hours"] = np.random.default_rng(seed).integers(1, 80, 3000).astype(float)
    frame.loc[frame.index % 9 == 0, "hours"] = np.nan
    frame.loc[frame.index % 50 == 0, "hours"] = np.inf
    values = values + 0.05 * np.isnan(frame["hours"].to_numpy())
    seg = segment(frame, values, max_depth=3, min_leaf_size=40)
    covered = np.zeros(len(frame), dtype=int)
    for s in seg.slices:
        mask = _rule_mask(s.rule, frame)
        np.testing.assert_array_equal(mask, seg.mask(s, frame))
        np.testing.assert_array_equal(mask, seg.leaves == s.node)
        assert s.rows == mask.sum() == s.fit_rows + s.estimate_rows
        assert s.fit_rows >= 40
        covered += mask
    assert (covered == 1).all()


def test_categories_only_in_the_held_out_part_still_belong_to_a_slice() -> None:
    frame, values = _planted(2000, 3)
    frame["relationship"] = frame["relationship"].astype(str)
    frame.loc[[5, 17], "relationship"] = "Other-relative"
    frame.loc[[8], "relationship"] = None
    seg = segment(frame[["relationship"]], values, max_depth=2, min_leaf_size=20)
    covered = sum(_rule_mask(s.rule, frame).astype(int) for s in seg.slices)
    assert (covered == 1).all()


# --- honest estimates ---------------------------------------------------------------------------------


def test_honest_means_are_the_held_out_means_and_less_optimistic() -> None:
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({f"d{i}": rng.normal(size=2000) for i in range(5)})
    values = rng.normal(0.4, 0.05, 2000)  # pure noise: every slice is a false lead
    seg = segment(frame, values, max_depth=3, min_leaf_size=30, seed=7)
    grow = documented_split(frame, values, 0.5, seed=7)
    fit_gap = honest_gap = 0.0
    for s in seg.slices:
        mask = _rule_mask(s.rule, frame)
        assert s.mean == pytest.approx(values[mask & ~grow].mean(), abs=1e-12)
        assert s.fit_mean == pytest.approx(values[mask & grow].mean(), abs=1e-12)
        p = stats.ttest_ind(values[mask & grow], values[mask & ~grow], equal_var=False).pvalue
        assert s.p_value == pytest.approx(p, rel=1e-9)
        assert s.false_discovery == (p < 0.05)
        fit_gap += abs(s.fit_mean - seg.overall) * s.rows
        honest_gap += abs(s.mean - seg.overall) * s.rows
    assert seg.overall == pytest.approx(values.mean())
    assert honest_gap < fit_gap


def test_split_fraction_sets_the_growing_share() -> None:
    frame, values = _planted(1000, 5)
    seg = segment(frame, values, split_fraction=0.7, max_depth=1)
    assert sum(s.fit_rows for s in seg.slices) == 700


def test_tree_details_describe_every_node() -> None:
    frame, values = _planted(3000, 6)
    details = segment(frame, values, max_depth=2).to_details()
    nodes = details["nodes"]
    assert nodes[0]["rule"] == "all data" and nodes[0]["rows"] == 3000
    for node in nodes:
        left, right = node["children"]
        if left >= 0:
            assert nodes[left]["rows"] + nodes[right]["rows"] == node["rows"]
            assert nodes[left]["rule"].endswith(nodes[left]["condition"])
    assert details["settings"]["max_depth"] == 2


# --- model comparison ---------------------------------------------------------------------------------


def test_compare_models_mean_difference_is_half_the_auc_gain() -> None:
    frame, _ = _planted(4000, 8)
    rng = np.random.default_rng(8)
    signal = rng.normal(size=4000)
    label = (signal + rng.normal(0, 0.5, 4000) > 0).astype(int)
    couple = frame["relationship"].isin(["Husband", "Wife"]).to_numpy()
    baseline = signal + rng.normal(size=4000) * np.where(couple, 2.0, 0.5)
    candidate = signal + rng.normal(size=4000) * 0.5
    result = compare_models(label, baseline, candidate, frame[["relationship", "noise"]], max_depth=1)
    gain = roc_auc_score(label, candidate) - roc_auc_score(label, baseline)
    assert result.auc_gain == pytest.approx(gain, abs=1e-12)
    assert result.segmentation.overall == pytest.approx(gain / 2, abs=1e-12)
    by_rule = {s.rule: s for s in result.segmentation.slices}
    # the candidate gains most where the baseline was noisy (the rest gains through cross-slice pairs)
    couples, others = (
        by_rule["relationship in {Husband, Wife}"],
        by_rule["relationship not in {Husband, Wife}"],
    )
    assert couples.mean > others.mean + 0.03 and couples.delta > 0.015


# --- bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dims", "values", "settings", "message"),
    [
        (pd.DataFrame({"a": [1, 2, 3]}), [0.1, np.nan, 0.2], {}, "NaN"),
        (pd.DataFrame({"a": [1, 2, 3]}), [0.1, 0.2], {}, "2 values for 3 rows"),
        (pd.DataFrame(index=range(3)), [0.1, 0.2, 0.3], {}, "no dimension"),
        (pd.DataFrame({"a": [1]}), [0.1], {}, "at least 2 rows"),
        (pd.DataFrame({"a": [1, 2]}), [0.1, 0.2], {"split_fraction": 0}, "split_fraction"),
        (pd.DataFrame({"a": [1, 2]}), [0.1, 0.2], {"min_leaf_size": 0}, "min_leaf_size"),
    ],
)
def test_bad_input_is_refused(dims: pd.DataFrame, values: list, settings: dict, message: str) -> None:
    with pytest.raises(CheckInputError, match=message):
        segment(dims, values, **settings)


def test_tiny_and_constant_inputs_give_one_slice() -> None:
    seg = segment(pd.DataFrame({"a": ["x", "y", "x"]}), [0.3, 0.3, 0.3])
    assert [s.rule for s in seg.slices] == ["all data"]
    assert seg.slices[0].rows == 3 and seg.slices[0].mean == 0.3


# --- the split follows the rows, not their positions -----------------------------------------------


def test_shuffled_rows_give_the_same_slices_and_numbers() -> None:
    frame, values = _planted(3000, 9)
    seg = segment(frame, values, max_depth=2)
    order = np.random.default_rng(1).permutation(3000)
    moved = segment(frame.iloc[order], values[order], max_depth=2)
    assert [s.rule for s in moved.slices] == [s.rule for s in seg.slices]
    for a, b in zip(seg.slices, moved.slices, strict=True):
        assert (a.rows, a.fit_rows, a.false_discovery) == (b.rows, b.fit_rows, b.false_discovery)
        assert b.mean == pytest.approx(a.mean, rel=1e-12) and b.p_value == pytest.approx(a.p_value, rel=1e-9)
    np.testing.assert_array_equal(moved.leaves, seg.leaves[order])
    np.testing.assert_array_equal(moved.grow, seg.grow[order])


def test_row_ids_key_the_split() -> None:
    frame, values = _planted(2000, 10)
    ids = pd.Series(np.arange(2000) * 7 + 3)
    seg = segment(frame, values, ids=ids, max_depth=1, seed=3)
    np.testing.assert_array_equal(seg.grow, documented_split(frame, values, 0.5, seed=3, ids=ids))
    assert not np.array_equal(seg.grow, segment(frame, values, max_depth=1, seed=3).grow)
    with pytest.raises(CheckInputError, match="row ids"):
        segment(frame, values, ids=ids[:10])
