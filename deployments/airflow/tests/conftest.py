"""A throw-away Airflow installation for the tests: its own AIRFLOW_HOME with a SQLite metadata
database, the provider's example DAGs as the DAG folder, the demo data and the driftline history in
the same temporary folder, the history database given as the `driftline_db` connection.

Airflow reads its configuration when first imported, so the environment is set here, before any
test module imports it.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(tempfile.mkdtemp(prefix="driftline-airflow-tests-"))
atexit.register(shutil.rmtree, ROOT, True)
HISTORY = ROOT / "history.db"
EXAMPLE_DAGS = Path(importlib.util.find_spec("driftline_airflow.example_dags").submodule_search_locations[0])

os.environ.update(
    {
        "AIRFLOW_HOME": str(ROOT / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLE_DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "DRIFTLINE_DEMO_DIR": str(ROOT / "demo"),
        "AIRFLOW_CONN_DRIFTLINE_DB": f'{{"conn_type": "sqlite", "host": "{HISTORY}"}}',
    }
)
for name in (
    "DRIFTLINE_DATABASE_URL",
    "DRIFTLINE_SPEC_PATH",
    "SLACK_BOT_TOKEN",
    "AIRFLOW_CONN_DRIFTLINE_SLACK",
):
    os.environ.pop(name, None)


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[Path]:
    """`airflow db migrate` once per session (the temporary folder goes when the session ends)."""
    airflow = Path(sys.executable).with_name("airflow")
    done = subprocess.run([str(airflow), "db", "migrate"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    yield ROOT


@pytest.fixture(scope="session")
def history_url() -> str:
    """The driftline history database the example DAG writes to (through the connection)."""
    return f"sqlite:///{HISTORY}"
