"""A spec nested 50,000 levels deep (lists or mappings) exhausted the YAML reader's recursion and ended
with a traceback and exit 1; it is a one-line spec error (exit 2). A `--param` value nested as deep is
taken as text."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from driftline.flows.cli import EXIT_USAGE, app
from driftline.flows.cli_run import _parse_params

runner = CliRunner()
DEPTH = 50_000


@pytest.mark.parametrize(
    "document",
    [
        "name: m\nchecks: " + "[" * DEPTH + "]" * DEPTH,
        "name: m\ncolumns: " + "{a: " * DEPTH + "1" + "}" * DEPTH,
    ],
)
def test_a_deeply_nested_spec_is_one_error_line(tmp_path: Path, document: str) -> None:
    spec = tmp_path / "deep.yaml"
    spec.write_text(document)
    result = runner.invoke(app, ["run", str(spec), "--engine", "local"])
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stderr == f"error: {spec}: the spec nests lists or mappings too deeply to read\n"


def test_a_deeply_nested_param_is_taken_as_text() -> None:
    value = "[" * DEPTH + "]" * DEPTH
    assert _parse_params([f"bins={value}"]) == {"bins": value}
