"""The contract every check keeps, as a battery that any test runner can call (like scikit-learn's
`check_estimator`): `check_contract(check)` runs every case and reports all that fail at once;
`contract_cases(check)` gives the cases one by one, so a test suite can run each as a test of its own.

A check must answer bad input (an empty batch, missing columns, all-NaN and infinite values, one class,
changed dtypes, one row, a one-class reference) with well-formed results, `skipped` or `error` ones
giving a reason, never with an unexpected exception; give the same results for the same rows in any
order, from a profile stored as the cache stores it, from a second fit and, when it merges, from
partitions of the batch; leave its inputs unmodified; and declare its name, family, summary and
thresholds soundly.
"""

from __future__ import annotations

import copy
import functools
import io
import itertools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.mergeable import merge_methods, merge_obstacle
from driftline.checks.profile_format import dump_profile, load_profile
from driftline.checks.result import SEVERITIES, STATUSES, CheckResult
from driftline.checks.runner import run_check

# The roles of `contract_frame`: every role a check may need is filled.
CONTRACT_COLUMNS = Columns(
    id="id",
    label="label",
    prediction="prediction",
    score="score",
    query_id="query",
    numeric=("x1", "x2", "age"),
    categorical=("color", "city", "sex"),
    text=("review",),
    protected=("sex",),
    class_scores=("p0", "p1"),
    task="binary",
)
_WORDS = np.array(["good", "bad", "film", "the", "plot", "was", "not", "great", "she", "he", "Paris", "!"])

# Floats from sums taken in another order (partitions, shuffled rows) differ in their last bits.
REL_TOLERANCE = 1e-9
ABS_TOLERANCE = 1e-12

# What a mergeable check defines (`checks.mergeable`; a class may also set `mergeable = True` itself).
MERGE_METHODS = ("partial", "merge", "finish", "merge_limit")

# Details listing rows or values in order of appearance: compared as collections when rows are shuffled.
APPEARANCE_ORDER = frozenset({"failing_ids", "unseen_examples"})


def contract_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """A frame with every role of `CONTRACT_COLUMNS` filled, with realistic dtypes (str, category, int,
    float) and ties: the battery's default reference (400 rows, seed 0) and batch (300 rows, seed 1)."""
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    score = 1 / (1 + np.exp(-(x1 + rng.normal(size=n))))
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "x1": x1,
            "x2": rng.exponential(size=n).round(1),
            "age": rng.integers(18, 90, size=n),
            "color": pd.Series(rng.choice(["red", "green", "blue", "Red"], size=n), dtype="str"),
            "city": pd.Categorical(rng.choice(["Paris", "Oslo", "Lima"], size=n)),
            "sex": rng.choice(["F", "M"], size=n),
            "label": (rng.random(n) < score).astype(np.int64),
            "prediction": (score >= 0.5).astype(np.int64),
            "score": score.round(2),
            "p0": 1 - score,
            "p1": score,
            "query": rng.integers(0, 20, size=n),
            "review": pd.Series(
                [" ".join(rng.choice(_WORDS, size=rng.integers(0, 9))) for _ in range(n)], dtype="str"
            ),
        }
    )


# --- comparisons ------------------------------------------------------------------------------------


def assert_same(actual: Any, expected: Any, path: str = "") -> None:
    """Equal structures: mapping keys and sequence lengths equal, integers and strings exactly, floats
    within `REL_TOLERANCE` relative (NaN equal to NaN); an `AssertionError` names the first difference."""
    if isinstance(expected, Mapping):
        _expect(isinstance(actual, Mapping) and set(actual) == set(expected), f"{path}: keys differ")
        for key in expected:
            assert_same(actual[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list | tuple):
        _expect(isinstance(actual, list | tuple) and len(actual) == len(expected), f"{path}: lengths differ")
        for i, (a, b) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, b, f"{path}[{i}]")
    elif _is_float(actual) or _is_float(expected):
        _expect(_close(actual, expected), f"{path}: {actual!r} != {expected!r}")
    else:
        _expect(actual == expected, f"{path}: {actual!r} != {expected!r}")


def assert_same_results(
    actual: list[CheckResult], expected: list[CheckResult], *, shuffled: bool = False
) -> None:
    """The same results in any order, one per (check, target), compared with `assert_same`; with
    `shuffled` (the batch's rows were reordered), details listed in order of appearance compare as sets."""
    got, want = _by_target(actual, shuffled), _by_target(expected, shuffled)
    _expect(sorted(got) == sorted(want), f"targets differ: {sorted(got)} != {sorted(want)}")
    for (check, target), result in want.items():
        assert_same(got[check, target], result, f"{check}[{target}]")


def _is_float(value: Any) -> bool:
    return isinstance(value, float | np.floating)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool | np.bool_)


def _close(actual: Any, expected: Any) -> bool:
    """Both numbers, equal within the tolerances, or both NaN."""
    if not (_is_number(actual) and _is_number(expected)):
        return False
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    return math.isclose(actual, expected, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)


def _by_target(results: list[CheckResult], shuffled: bool) -> dict[tuple[str, str], dict]:
    """Results as plain dicts keyed by (check, target); a target given twice is a contract failure."""
    keyed = {(r.check, r.target): _in_any_order(r.to_dict()) if shuffled else r.to_dict() for r in results}
    _expect(len(keyed) == len(results), "two results for one (check, target)")
    return keyed


def _in_any_order(result: dict) -> dict:
    """A result with order-of-appearance listings as sorted collections (truncated ones by size only)."""
    details = dict(result["details"])
    for key in APPEARANCE_ORDER & details.keys():
        values = details[key]
        total = details.get(f"{key}_total", len(values))
        details[key] = len(values) if total > len(values) else sorted(map(repr, values))
    return {**result, "details": details}


def _expect(condition: bool, message: str) -> None:
    """An `AssertionError` with `message` unless `condition` (plain `assert` vanishes under -O)."""
    if not condition:
        raise AssertionError(message)


# --- bad input --------------------------------------------------------------------------------------

BadInput = Callable[[pd.DataFrame, Columns], pd.DataFrame]


def _present(frame: pd.DataFrame, *names: str | None) -> list[str]:
    return [n for n in names if n and n in frame.columns]


def _first(names: tuple[str, ...]) -> str | None:
    return names[0] if names else None


def _drop_columns(f: pd.DataFrame, c: Columns) -> pd.DataFrame:
    """Without the first numeric and categorical features and the label."""
    return f.drop(columns=_present(f, _first(c.numeric), _first(c.categorical), c.label))


def _all_nan(f: pd.DataFrame, c: Columns) -> pd.DataFrame:
    """The first numeric feature and the score all NaN."""
    return f.assign(**dict.fromkeys(_present(f, _first(c.numeric), c.score), np.nan))


def _with_inf(f: pd.DataFrame, c: Columns) -> pd.DataFrame:
    """+inf and -inf in every seventh row of the last float feature, +inf in every eleventh score."""
    floats = [n for n in c.numeric if n in f.columns and pd.api.types.is_float_dtype(f[n])]
    changed = {name: _every(f[name], 7, (np.inf, -np.inf)) for name in floats[-1:]}
    changed |= {name: _every(f[name], 11, (np.inf,)) for name in _present(f, c.score)}
    return f.assign(**changed)


def _every(values: pd.Series, step: int, fills: tuple[float, ...]) -> np.ndarray:
    """The values as floats with `fills[k]` in rows k, k + step, k + 2 step, ..."""
    out = values.to_numpy(dtype=float, na_value=np.nan, copy=True)
    for start, value in enumerate(fills):
        out[start::step] = value
    return out


def _single_class(f: pd.DataFrame, c: Columns) -> pd.DataFrame:
    """One class only: the label and the prediction set to their largest value."""
    return f.assign(**{n: f[n].max() for n in _present(f, c.label, c.prediction)})


def _changed_dtypes(f: pd.DataFrame, c: Columns) -> pd.DataFrame:
    """The first numeric feature as text, the first categorical one as integers, a numeric label as float."""
    changed: dict[str, Any] = {}
    for name in _present(f, _first(c.numeric)):
        changed[name] = f[name].round(3).astype(str)
    for name in _present(f, _first(c.categorical)):
        changed[name] = np.arange(len(f))
    for name in _present(f, c.label):
        if pd.api.types.is_numeric_dtype(f[name]):
            changed[name] = f[name].astype(float)
    return f.assign(**changed)


BAD_INPUTS: dict[str, BadInput] = {
    "valid": lambda f, c: f,
    "empty_batch": lambda f, c: f.iloc[:0],
    "missing_columns": _drop_columns,
    "all_nan_column": _all_nan,
    "inf_values": _with_inf,
    "single_class_batch": _single_class,
    "changed_dtypes": _changed_dtypes,
    "one_row": lambda f, c: f.iloc[:1],
}


# --- the cases --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One case of the contract for one check: `run()` returns, or raises an `AssertionError` whose
    message names the check and the case (an unexpected exception from the check included)."""

    check: str
    name: str
    body: Callable[[], None] = field(repr=False)

    def run(self) -> None:
        """Run the case."""
        try:
            self.body()
        except Exception as exc:
            detail = str(exc) if isinstance(exc, AssertionError) else f"{type(exc).__name__}: {exc}"
            raise AssertionError(f"{self.check}: case {self.name!r}: {detail}") from exc


@dataclass
class _Battery:
    """The check under test, its data and roles, and what several cases compare against (computed once,
    when a case first needs it). Every run gets a fresh copy of the check and of the frames."""

    check: Check
    columns: Columns
    given_reference: pd.DataFrame | None
    given_batch: pd.DataFrame | None
    _expected: dict[str, list[CheckResult]] = field(default_factory=dict)

    @cached_property
    def reference(self) -> pd.DataFrame:
        return contract_frame(400, seed=0) if self.given_reference is None else self.given_reference

    @cached_property
    def batch(self) -> pd.DataFrame:
        return contract_frame(300, seed=1) if self.given_batch is None else self.given_batch

    @cached_property
    def profile(self) -> Any:
        """The check's profile of the reference."""
        return self.fresh().fit(self.reference.copy(), self.columns)

    def fresh(self) -> Check:
        return copy.deepcopy(self.check)

    def bad(self, name: str) -> pd.DataFrame:
        """The batch with one kind of bad input (`BAD_INPUTS`)."""
        return BAD_INPUTS[name](self.batch, self.columns)

    def run(
        self,
        batch: pd.DataFrame,
        *,
        reference: pd.DataFrame | None = None,
        profile: Any = None,
        check: Check | None = None,
    ) -> list[CheckResult]:
        """`run_check` in strict mode (an unexpected exception is a failure) on copies of the frames,
        its results checked well-formed."""
        check = self.fresh() if check is None else check
        reference = None if reference is None else reference.copy()
        results = run_check(
            check, batch.copy(), self.columns, reference=reference, profile=profile, strict=True
        )
        _assert_well_formed(results, check.name)
        return results

    def expected(self, name: str) -> list[CheckResult]:
        """The results of one bad-input batch (`valid`, `inf_values`) from `profile`."""
        if name not in self._expected:
            self._expected[name] = self.run(self.bad(name), profile=self.profile)
        return self._expected[name]


def _assert_well_formed(results: list[CheckResult], name: str) -> None:
    """At least one result, each naming the check, with a known status and severity, a reason unless
    `ok`, and plain JSON (no NaN or inf)."""
    _expect(bool(results), "no result")
    for r in results:
        where = f"result for target {r.target!r}"
        _expect(r.check == name, f"{where} names the check {r.check!r}")
        _expect(r.status in STATUSES, f"{where}: unknown status {r.status!r}")
        _expect(r.severity in SEVERITIES, f"{where}: unknown severity {r.severity!r}")
        has_reason = isinstance(r.reason, str) and bool(r.reason.strip())
        _expect(r.status == "ok" or has_reason, f"{where}: status {r.status!r} without a reason")
        try:
            json.dumps(r.to_dict(), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise AssertionError(f"{where} is not plain JSON: {exc}") from exc


def _compared(label: str, actual: list[CheckResult], expected: list[CheckResult], **how: bool) -> None:
    """`assert_same_results`, its failure prefixed with what was compared."""
    try:
        assert_same_results(actual, expected, **how)
    except AssertionError as exc:
        raise AssertionError(f"{label}: {exc}") from exc


def _bad_input(b: _Battery, name: str) -> None:
    """Well-formed results for the batch with one kind of bad input."""
    b.run(b.bad(name), reference=b.reference)


def _valid(b: _Battery) -> None:
    """Valid data gives no `error` result."""
    errors = [r.reason for r in b.run(b.batch, reference=b.reference) if r.status == "error"]
    _expect(not errors, f"valid data gave error result(s): {errors}")


def _empty_batch(b: _Battery) -> None:
    """An empty batch is skipped, saying so."""
    results = b.run(b.bad("empty_batch"), reference=b.reference)
    others = [
        f"{r.status}: {r.reason}" for r in results if r.status != "skipped" or "empty" not in (r.reason or "")
    ]
    _expect(not others, f"an empty batch must be skipped naming 'empty', got {others}")


def _single_class_reference(b: _Battery) -> None:
    """Well-formed results against a reference with one class of label and prediction."""
    b.run(b.batch, reference=_single_class(b.reference, b.columns))


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The same rows (index labels kept) in another order."""
    return frame.iloc[np.random.default_rng(seed).permutation(len(frame))]


def _row_order(b: _Battery) -> None:
    """The same results for the same rows in other orders (valid and infinite values)."""
    for name in ("valid", "inf_values"):
        for seed in (1, 2):
            shuffled = b.run(_shuffled(b.bad(name), seed), profile=b.profile)
            _compared(f"{name} batch shuffled (seed {seed})", shuffled, b.expected(name), shuffled=True)


def _stored_profile(b: _Battery) -> None:
    """The profile survives the profile cache's data-only format (a run stores it on disk and reads it
    back without pickle), its classes trusted only from driftline and the check's own module."""
    trusted = (type(b.check).__module__,)
    restored = load_profile(io.BytesIO(dump_profile(b.profile, "contract", trusted)), "contract", trusted)
    _compared("from the stored profile", b.run(b.batch, profile=restored), b.expected("valid"))


def _second_fit(b: _Battery) -> None:
    """Fitting again on the same reference gives the same results."""
    again = b.fresh().fit(b.reference.copy(), b.columns)
    _compared("from a second fit", b.run(b.batch, profile=again), b.expected("valid"))


def _inputs_unmodified(b: _Battery) -> None:
    """Fit and evaluate leave the reference and the batch as they were."""
    for name in ("valid", "inf_values", "missing_columns"):
        reference, batch = b.reference.copy(), b.bad(name)
        passed = batch.copy()
        run_check(b.fresh(), passed, b.columns, reference=reference, strict=True)
        for label, before, after in (("reference", b.reference, reference), ("batch", batch, passed)):
            try:
                pd.testing.assert_frame_equal(after, before)
            except AssertionError as exc:
                raise AssertionError(f"the {label} was modified ({name} batch): {exc}") from exc


def _metadata(b: _Battery) -> None:
    """A dotted name starting with the family, a docstring summary, one to three thresholds per
    graded metric ordered from low to high severity, the merge methods of a mergeable check."""
    problems = _identity_problems(type(b.check)) + _threshold_problems(b.check) + _merge_problems(b.check)
    _expect(not problems, "; ".join(problems))


def _identity_problems(cls: type[Check]) -> list[str]:
    name, family = getattr(cls, "name", None), getattr(cls, "family", None)
    problems = []
    if not (isinstance(name, str) and isinstance(family, str) and name and family):
        problems.append("needs a `name` and a `family`")
    elif name.split(".")[0] != family:
        problems.append(f"name {name!r} must be '<family>.<name>' with family {family!r}")
    summary = cls.summary()
    if not summary or summary.startswith(f"{cls.__name__}("):  # dataclasses make up a docstring
        problems.append("needs a docstring whose first paragraph sums the check up")
    return problems


def _threshold_problems(check: Check) -> list[str]:
    problems = []
    for metric, values in check.effective_thresholds().items():
        higher_is_worse = metric not in check.lower_is_worse
        if not 1 <= len(values) <= 3:
            problems.append(f"thresholds.{metric} {values}: one to three thresholds")
        elif list(values) != sorted(values, reverse=not higher_is_worse):
            order = "ascending" if higher_is_worse else "descending (lower is worse)"
            problems.append(f"thresholds.{metric} {values} must be {order}")
    return problems


def _merge_problems(check: Check) -> list[str]:
    absent = [m for m in MERGE_METHODS if not callable(getattr(check, m, None))]
    if getattr(check, "mergeable", False) and absent:
        return [f"a mergeable check defines {', '.join(MERGE_METHODS)}; missing: {', '.join(absent)}"]
    return []


def _partitions(frame: pd.DataFrame) -> list[pd.DataFrame]:
    """Uneven consecutive partitions of a frame, the second one empty (35%, 0, 45%, 20% of the rows)."""
    bounds = [0, *(round(len(frame) * share) for share in (0.35, 0.35, 0.8)), len(frame)]
    return [frame.iloc[a:z] for a, z in itertools.pairwise(bounds)]


def _partitioned(check: Check) -> Check:
    """A copy of the check whose `evaluate` is `finish(merge([partial(p) for p in partitions]))`, so
    that `run_check` screens, converts errors and grades both paths alike."""
    merged, methods = copy.copy(check), merge_methods(check)

    def evaluate(current: pd.DataFrame, profile: Any, columns: Columns) -> list[CheckResult]:
        states = [methods.partial(part, profile, columns) for part in _partitions(current)]
        return methods.finish(methods.merge(states), profile, columns)

    merged.evaluate = evaluate  # type: ignore[method-assign]
    return merged


def _merge(b: _Battery) -> None:
    """Evaluated in partitions and merged, the batch gives the results `evaluate` gives (counts exactly,
    floats within `REL_TOLERANCE`)."""
    for name in ("valid", "inf_values"):
        merged = b.run(b.bad(name), profile=b.profile, check=_partitioned(b.fresh()))
        _compared(f"{name} batch in partitions", merged, b.expected(name))


def _merges(check: Check) -> bool:
    """Whether the check, as configured, is evaluated partition by partition and merged (a missing
    `merge_limit` is the `metadata` case's to report)."""
    return callable(getattr(check, "merge_limit", None)) and merge_obstacle(check) is None


_CASES: dict[str, Callable[[_Battery], None]] = {
    "valid": _valid,
    "empty_batch": _empty_batch,
    **{
        name: functools.partial(_bad_input, name=name)
        for name in BAD_INPUTS
        if name not in ("valid", "empty_batch")
    },
    "single_class_reference": _single_class_reference,
    "row_order": _row_order,
    "stored_profile": _stored_profile,
    "second_fit": _second_fit,
    "inputs_unmodified": _inputs_unmodified,
    "metadata": _metadata,
    "merge": _merge,
}


def contract_cases(
    check: Check | type[Check],
    *,
    reference: pd.DataFrame | None = None,
    batch: pd.DataFrame | None = None,
    columns: Columns | None = None,
) -> list[Case]:
    """The contract's cases for one check (a class, configured with its defaults, or an instance), each
    run by `Case.run()`; `merge` only for a check that merges. Nothing is computed until a case runs.

    `reference` and `batch` default to `contract_frame(400, seed=0)` and `contract_frame(300, seed=1)`,
    `columns` to `CONTRACT_COLUMNS`; with frames of your own, give their roles. The bad inputs are
    derived from the batch through the roles: `missing_columns` drops the label and the first numeric
    and categorical features, `all_nan_column` empties the first numeric feature and the score,
    `inf_values` puts infinities in the last float feature and the score, `single_class_batch` sets the
    label and prediction to one value, `changed_dtypes` turns the first numeric feature into text, the
    first categorical one into integers and a numeric label into floats.
    """
    instance = check if isinstance(check, Check) else check()
    battery = _Battery(instance, columns or CONTRACT_COLUMNS, reference, batch)
    return [
        Case(instance.name, name, functools.partial(body, battery))
        for name, body in _CASES.items()
        if name != "merge" or _merges(instance)
    ]


def check_contract(
    check: Check | type[Check],
    *,
    reference: pd.DataFrame | None = None,
    batch: pd.DataFrame | None = None,
    columns: Columns | None = None,
) -> None:
    """Run every case of the contract on one check (see `contract_cases` for the data); an
    `AssertionError` lists every case that failed, each naming the check and the case."""
    failures = []
    for case in contract_cases(check, reference=reference, batch=batch, columns=columns):
        try:
            case.run()
        except AssertionError as exc:
            failures.append(str(exc))
    _expect(not failures, f"{len(failures)} contract case(s) failed:\n" + "\n".join(failures))
