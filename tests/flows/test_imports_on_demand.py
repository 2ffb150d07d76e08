"""Imports on demand: the command line's help and argument parsing import no data or storage library,
and a plain run of a drift-only monitor imports no library that only other checks, other engines or
other alert destinations use. Each command runs in a fresh interpreter under `-X importtime`, which
lists every module imported by the process and its forked workers, so an eager import added anywhere
on the path fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.demo import write_spec

ROOT = Path(__file__).parents[2]
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)$", re.MULTILINE)

# What `driftline --help` and the parsing of a command's arguments must not import.
NOT_FOR_HELP = (
    "pandas",
    "numpy",
    "scipy",
    "sklearn",
    "pyarrow",
    "sqlalchemy",
    "alembic",
    "prefect",
    "great_expectations",
    "slack_sdk",
    "jinja2",
    "matplotlib",
)
# What a plain run of drift checks (console alerts, the store up to date) must not import: the
# scikit-learn of model checks, Great Expectations, the Slack client, Prefect, Alembic's migrations,
# and scipy.stats (the KS p-value of a small sample and the t-test of subset trees use scipy.special).
NOT_FOR_A_DRIFT_RUN = (
    "sklearn",
    "great_expectations",
    "slack_sdk",
    "prefect",
    "alembic",
    "matplotlib",
    "scipy.stats",
)


def imported(args: list[str], cwd: Path = ROOT) -> set[str]:
    """The top-level packages a `python -m driftline ARGS` process (its workers included) imports,
    and every module it imports, by its full name."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "driftline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    modules = set(IMPORTED.findall(done.stderr))
    return modules | {name.split(".")[0] for name in modules}


def test_the_parser_finds_imports():
    """The pattern reads `-X importtime` lines: a plain interpreter importing json lists json."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import json"], capture_output=True, text=True, check=True
    )
    assert "json" in {name.split(".")[0] for name in IMPORTED.findall(done.stderr)}


HELP = [["--help"], ["run", "--help"], ["evaluate", "--help"], ["history", "--help"]]


@pytest.mark.parametrize("args", HELP)
def test_help_and_argument_parsing_import_no_heavy_library(args: list[str]):
    assert sorted(imported(args) & set(NOT_FOR_HELP)) == []


def test_a_plain_drift_run_imports_only_what_its_checks_use(demo_data: Path, tmp_path: Path):
    spec = write_spec(
        demo_data,
        tmp_path,
        name="drift-only",
        checks=["drift.numeric", "drift.categorical"],
        retrain=None,
        store_url=f"sqlite:///{tmp_path / 'history.db'}",
    )
    run = ["run", str(spec), "--batch", "2018-12", "--engine", "local", "--json"]
    first = imported(run)  # creates the store (Alembic) and fits the profiles
    assert "alembic" in first and "sklearn" not in first
    again = imported(run)
    # what the run does use: read the files, test, store, write the report
    assert {"pandas", "scipy", "sqlalchemy", "jinja2"} <= again
    assert sorted(again & set(NOT_FOR_A_DRIFT_RUN)) == []
