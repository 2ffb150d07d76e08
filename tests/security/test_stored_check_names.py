"""A check name read back from the history is data: whoever can write the history database cannot make
a reader (report, site, runs, history, trend) import a module from the reader's working folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from driftline.flows.cli import app
from driftline.tasks.history.db import connected_store
from driftline.tasks.history.store import record_run

runner = CliRunner()
PLANTED = "evilmod:Evil"
EVIL = """
from pathlib import Path

Path(__file__).with_name("imported.marker").touch()


class Evil:
    name = "evil"
"""


def planted(target: str, severity: str, value: float) -> dict:
    """A result row as someone with write access to the history database could store it."""
    return {
        "check": PLANTED,
        "target": target,
        "status": "ok",
        "severity": severity,
        "metrics": {"psi": value},
        "thresholds": {"psi": [0.1, 0.2, 0.3]},
        "reason": "planted",
        "details": {},
    }


@pytest.fixture
def tampered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A spec whose history holds rows naming `evilmod:Evil`, and an `evilmod.py` that marks its own
    import, importable from the working folder."""
    (tmp_path / "evilmod.py").write_text(EVIL)
    url = f"sqlite:///{tmp_path / 'history.db'}"
    spec = {
        "name": "victim",
        "reference": {"path": "reference.parquet"},
        "batches": {"path": "batches/{batch}.parquet"},
        "checks": ["drift.numeric"],
        "store_url": url,
    }
    (tmp_path / "monitor.yaml").write_text(yaml.safe_dump(spec))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with connected_store(url) as engine:
        for day in range(6):
            severity, value = ("high", 0.9) if day >= 3 else ("none", 0.01)
            record_run(
                engine,
                monitor="victim",
                batch_id=f"b{day}",
                batch_time=start + timedelta(days=day),
                results=[planted("age", severity, value)],
                status="failed" if day >= 3 else "passed",
                worst_severity=severity,
                rows=100,
            )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as when the working folder is on the import path
    yield tmp_path / "monitor.yaml"
    sys.modules.pop("evilmod", None)


@pytest.mark.parametrize(
    "command",
    [
        ["report", "monitor.yaml"],
        ["site", "--spec", "monitor.yaml", "--out", "site"],
        ["runs", "monitor.yaml", "--batch", "latest"],
        ["history", "monitor.yaml"],
        ["trend", "monitor.yaml"],
    ],
    ids=lambda c: c[0],
)
def test_a_reader_never_imports_a_stored_check_name(tampered: Path, command: list[str]) -> None:
    result = runner.invoke(app, command)
    assert result.exit_code in (0, 1), result.output
    assert not (tampered.parent / "imported.marker").exists()
    assert "evilmod" not in sys.modules


def test_the_planted_module_would_mark_its_import(tampered: Path) -> None:
    """The marker is what an import leaves: the readers above are tested against a real trap."""
    __import__("evilmod")
    assert (tampered.parent / "imported.marker").exists()
