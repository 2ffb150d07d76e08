"""`expectations.suite` without Great Expectations installed: skipped, naming the install command."""

from __future__ import annotations

import sys

import pandas as pd

from driftline.checks import registry
from driftline.checks.columns import infer_columns
from driftline.checks.runner import run_check


def test_the_suite_is_skipped_with_the_install_command_when_gx_is_missing(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "great_expectations", None)  # `import great_expectations` fails
    frame = pd.DataFrame({"age": [30, 40, 50] * 20})
    not_null = {"type": "expect_column_values_to_not_be_null", "column": "age"}
    check = registry.create("expectations.suite", {"expectations": [not_null]})
    [result] = run_check(check, frame, infer_columns(frame, {}), reference=frame)
    assert result.status == "skipped", result.reason
    assert "pip install 'driftline[expectations]'" in result.reason
