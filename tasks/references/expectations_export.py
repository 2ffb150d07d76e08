"""Export what the reference profiles know as a Great Expectations 1.x ExpectationSuite (JSON).

The suite is built from the same cached profiles the abnormal-input checks fit: closed numeric ranges
(`abnormal.out_of_range`), category vocabularies (`abnormal.unseen_categorical`), null rates
(`abnormal.nulls`) and characters every value has (`abnormal.required_characters`), plus the label
and model-output domains. Every expectation holds on the reference itself, so the suite validates the
reference with 100 % success and flags a batch that leaves it. With `model:` the reference is scored
first, as a run scores it: the suite then describes the model's output columns too, so it validates
frames scored by the model (the suite's meta lists those columns). Writing the JSON needs no GX import;
`validate_suite` loads it with GX (lazily imported) to prove it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from driftline.checks.abnormal import NullRate
from driftline.checks.abnormal_categories import UnseenCategorical
from driftline.checks.abnormal_strings import RequiredCharacters
from driftline.checks.abnormal_values import OutOfRange
from driftline.checks.base import Check
from driftline.checks.columns import Columns, infer_task
from driftline.checks.fingerprint import frame_fingerprint
from driftline.checks.result import json_safe
from driftline.tasks.config.spec import MonitorSpec
from driftline.tasks.references.profiles import ProfileCache

MAX_CATEGORIES = 1000
# A column whose distinct values exceed this share of its rows is an identifier or free text: no value set.
MAX_DISTINCT_SHARE = 0.5
MOSTLY_DIGITS = 4


def _floor(share: float) -> float:
    """A `mostly` the reference itself reaches: the share rounded down to MOSTLY_DIGITS decimals."""
    scale = 10**MOSTLY_DIGITS
    return math.floor(share * scale + 1e-9) / scale


def _expectation(kind: str, column: str, source: str, **kwargs: Any) -> dict[str, Any]:
    """One expectation in GX 1.x's serialised form, noting which profile it comes from."""
    return {
        "type": kind,
        "kwargs": {"column": column, **json_safe(kwargs)},
        "meta": {"driftline": {"source": source}},
    }


def _targets(check: Check, reference: pd.DataFrame, columns: Columns, fit: Any) -> dict[str, Any]:
    """The per-column profiles of one abnormal check (columns it cannot profile are left out)."""
    return fit(check, reference, columns)["targets"]


def _output_expectations(reference: pd.DataFrame, columns: Columns) -> list[dict[str, Any]]:
    """Domains of the label, prediction and score: classes seen in the reference, scores in [0, 1]."""
    out = []
    label_column, prediction, score_column = (
        c if c in reference.columns else None for c in (columns.label, columns.prediction, columns.score)
    )
    label = reference[label_column] if label_column is not None else None
    classification = label is not None and (columns.task or infer_task(label)) != "regression"
    classes = set(label.dropna().unique().tolist()) if label is not None and classification else set()
    if label_column is not None and classes:
        out.append(
            _expectation(
                "expect_column_values_to_be_in_set",
                label_column,
                "label",
                value_set=sorted(classes, key=str),
            )
        )
    if prediction is not None and (classification or label is None):
        predicted = set(reference[prediction].dropna().unique().tolist()) | classes
        if len(predicted) <= MAX_CATEGORIES:
            out.append(
                _expectation(
                    "expect_column_values_to_be_in_set",
                    prediction,
                    "prediction",
                    value_set=sorted(predicted, key=str),
                )
            )
    if score_column is not None and pd.api.types.is_numeric_dtype(reference[score_column]):
        score = reference[score_column]
        if score.between(0, 1).sum() == score.notna().sum():
            out.append(
                _expectation(
                    "expect_column_values_to_be_between", score_column, "score", min_value=0.0, max_value=1.0
                )
            )
    return out


def build_suite(
    reference: pd.DataFrame,
    columns: Columns,
    name: str,
    *,
    cache: ProfileCache | None = None,
    reference_hash: str | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ExpectationSuite (GX 1.x JSON form) of one reference and its column roles."""
    cache = cache or ProfileCache(directory=None)
    reference_hash = reference_hash or frame_fingerprint(reference)

    def fit(check: Check, frame: pd.DataFrame, roles: Columns) -> Any:
        return cache.get_or_fit(check, frame, roles, reference_hash)

    used = [c for c in columns.all_columns() if c in reference.columns]
    expectations = [
        {
            "type": "expect_column_to_exist",
            "kwargs": {"column": c},
            "meta": {"driftline": {"source": "schema"}},
        }
        for c in used
    ]
    nulls = _targets(NullRate(), reference, columns, fit) if columns.features else {}
    for column, rates in nulls.items():
        non_null = 1.0 - rates["null_rate"]
        if non_null > 0:
            mostly = {"mostly": _floor(non_null)} if rates["null_rate"] > 0 else {}
            expectations.append(
                _expectation("expect_column_values_to_not_be_null", column, "abnormal.nulls", **mostly)
            )
    if columns.numeric:
        for column, bounds in _targets(OutOfRange(), reference, columns, fit).items():
            rates = nulls.get(column, {"null_rate": 0.0, "inf_rate": 0.0})
            finite = 1.0 - rates["inf_rate"] / max(1.0 - rates["null_rate"], 1e-12)
            mostly = {"mostly": _floor(finite)} if finite < 1 else {}
            expectations.append(
                _expectation(
                    "expect_column_values_to_be_between",
                    column,
                    "abnormal.out_of_range",
                    min_value=bounds["lower"],
                    max_value=bounds["upper"],
                    **mostly,
                )
            )
    skipped = {}
    if columns.categorical:
        for column, profile in _targets(UnseenCategorical(), reference, columns, fit).items():
            vocabulary = profile["values"]
            filled = int(reference[column].notna().sum())
            if len(vocabulary) > MAX_CATEGORIES or len(vocabulary) > MAX_DISTINCT_SHARE * filled:
                skipped[column] = (
                    f"value set: {len(vocabulary)} distinct values in {filled} rows "
                    f"(more than {MAX_CATEGORIES} or {MAX_DISTINCT_SHARE:.0%} of them: an identifier or text)"
                )
                continue
            expectations.append(
                _expectation(
                    "expect_column_values_to_be_in_set",
                    column,
                    "abnormal.unseen_categorical",
                    value_set=sorted(vocabulary.tolist(), key=str),
                )
            )
        for column, found in _targets(RequiredCharacters(), reference, columns, fit).items():
            pattern = "[" + "".join(re.escape(c) for c in found["required"]) + "]"
            expectations.append(
                _expectation(
                    "expect_column_values_to_match_regex",
                    column,
                    "abnormal.required_characters",
                    regex=pattern,
                )
            )
    expectations.extend(_output_expectations(reference, columns))
    info = {"reference_rows": len(reference), "reference_hash": reference_hash, **(meta or {})}
    if skipped:
        info["not_exported"] = skipped
    return {"name": name, "expectations": expectations, "meta": {"driftline": info}, "notes": None}


@dataclass(frozen=True)
class ReferenceSuite:
    """A monitor's suite and the reference frame it was built from (scored when the spec has a model),
    the frame `--verify` validates."""

    suite: dict[str, Any]
    reference: pd.DataFrame


def export_from_spec(spec: MonitorSpec, name: str | None = None) -> ReferenceSuite:
    """The suite of a monitor's reference: loaded, scored (when the spec has a model) and profiled with
    the monitor's profile cache, like a run does; with the frame it describes."""
    from driftline.tasks.references.model import load_model
    from driftline.tasks.references.reference import inferred_roles, scored
    from driftline.tasks.sources import open_source

    model = load_model(spec.model, spec.base_dir) if spec.model else None
    loaded = open_source(spec, spec.reference, "reference").read(spec.execution.read_limits)
    reference, columns = scored(model, loaded, inferred_roles(spec, loaded))
    cache = ProfileCache(spec.state_dir / "profiles")
    source = spec.reference.path or spec.reference.kind or "sql"
    meta: dict[str, Any] = {"monitor": spec.name, "reference": source}
    if model is not None:
        added = [str(c) for c in reference.columns.difference(loaded.columns, sort=False)]
        meta["model"] = {"import_path": spec.model, "columns": added}
    suite = build_suite(reference, columns, name or f"{spec.name}.reference", cache=cache, meta=meta)
    return ReferenceSuite(suite, reference)


def validate_suite(suite: dict[str, Any], frame: pd.DataFrame) -> dict[str, Any]:
    """Load the suite JSON with GX 1.x (ephemeral context) and validate `frame`: success, counts and
    the failed expectations with their unexpected share."""
    import logging

    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    loaded = gx.ExpectationSuite(**suite)
    batch = (
        context.data_sources.add_pandas("driftline_export")
        .add_dataframe_asset("frame")
        .add_batch_definition_whole_dataframe("whole")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    outcome = batch.validate(loaded)
    failed = [
        {
            "type": config.type,
            "column": config.kwargs.get("column"),
            "unexpected_percent": r.result.get("unexpected_percent"),
        }
        for r in outcome.results
        if not r.success and (config := r.expectation_config) is not None  # a suite's results carry theirs
    ]
    return {
        "success": bool(outcome.success),
        "evaluated": len(outcome.results),
        "successful": len(outcome.results) - len(failed),
        "failed": failed,
    }
