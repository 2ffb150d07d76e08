"""The provider's environment: no Prefect anywhere, and Airflow finds the provider by its entry point."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

IMPORTS = (
    "import driftline, driftline.tasks.pipeline, driftline.tasks.driver, driftline.checks.registry;"
    "import driftline_airflow, driftline_airflow.operators, driftline_airflow.get_provider_info;"
    "import driftline_airflow.example_dags.driftline_monitor;"
    "driftline.run_monitor; driftline.load_spec; driftline.run_check;"
)


def test_prefect_is_not_installed() -> None:
    assert importlib.util.find_spec("prefect") is None


def test_importing_driftline_and_the_provider_never_imports_prefect() -> None:
    code = (
        IMPORTS
        + "import sys, json; print(json.dumps(sorted(m for m in sys.modules if m.startswith('prefect'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_provider_info_through_the_entry_point_matches_airflows_schema() -> None:
    import jsonschema

    (entry,) = [
        ep
        for ep in metadata.entry_points(group="apache_airflow_provider")
        if ep.value.startswith("driftline_airflow")
    ]
    info = entry.load()()
    assert info["package-name"] == "driftline-airflow"
    assert info["versions"] == [metadata.version("driftline-airflow")]
    modules = info["operators"][0]["python-modules"]
    assert modules == ["driftline_airflow.operators.monitor", "driftline_airflow.operators.check"]
    for module in modules:
        importlib.import_module(module)
    import airflow

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(info, schema)


def test_airflows_providers_manager_lists_the_provider() -> None:
    code = (
        "from airflow.providers_manager import ProvidersManager;"
        "p = ProvidersManager().providers['driftline-airflow']; print(p.version)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == metadata.version("driftline-airflow")
