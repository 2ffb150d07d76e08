"""A column named with bidi overrides or zero-width characters reached the report's and the site's
titles and headings raw, where it reorders or hides the text around it. Pages show those characters as
visible escapes (`\\u202e`), as the terminal does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from driftline.flows.cli import app
from driftline.tasks.tools.safe_text import CONTROL
from tests.faults.small_monitor import write_monitor

runner = CliRunner()
HOSTILE = "salary\u202e\u200bdlo"


def test_report_and_site_show_invisible_characters_as_escapes(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    shifted = pd.DataFrame({"age": rng.normal(40, 10, 300), HOSTILE: rng.normal(9, 1, 300)})
    spec = write_monitor(tmp_path, {"2024-05-01": shifted})
    reference = pd.read_parquet(tmp_path / "reference.parquet").rename(columns={"income": HOSTILE})
    reference.to_parquet(tmp_path / "reference.parquet")
    result = runner.invoke(app, ["run", str(spec), "--engine", "local", "--json"])
    assert result.exit_code == 1, result.output
    report = Path(json.loads(result.stdout)["report"]).read_text()
    site = tmp_path / "site"
    built = runner.invoke(app, ["site", "--spec", str(spec), "--out", str(site)])
    assert built.exit_code == 0, built.output
    pages = [report, *(page.read_text() for page in site.rglob("*.html"))]
    assert all(CONTROL.search(page) is None for page in pages)
    assert "salary\\u202e\\u200bdlo" in report
