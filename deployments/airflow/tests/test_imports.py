"""The provider's environment: no Prefect anywhere, DAG files that parse without the core's heavy
imports, and Airflow finds the provider by its entry point."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

IMPORTS = (
    "import driftline, driftline.tasks.run.pipeline, driftline.tasks.run.driver, driftline.checks.registry;"
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


# What a DAG file using the provider must not load while it is parsed: the operators import these
# inside `execute`, so the dag-processor stays light (Airflow's own imports may include SQLAlchemy).
HEAVY = ("pandas", "numpy", "scipy", "pyarrow", "sqlalchemy", "alembic", "slack_sdk", "sklearn", "driftline")
AIRFLOW_IMPORTS = (
    "import airflow.sdk, airflow.providers.standard.operators.empty,"
    " airflow.providers.standard.operators.trigger_dagrun"
)


def heavy_modules(code: str) -> list[str]:
    """The top-level packages of HEAVY loaded after running `code` in a fresh interpreter."""
    probe = code + "\nimport sys, json; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    return [name for name in HEAVY if name in loaded]


def test_operators_and_example_dag_import_nothing_heavy() -> None:
    airflows_own = heavy_modules(AIRFLOW_IMPORTS)
    assert "pandas" not in airflows_own and "driftline" not in airflows_own
    for module in (
        "driftline_airflow.operators",
        "driftline_airflow.get_provider_info",
        "driftline_airflow.example_dags.driftline_monitor",
    ):
        assert heavy_modules(f"{AIRFLOW_IMPORTS}; import {module}") == airflows_own, module


def test_fail_on_scale_is_the_cores() -> None:
    from driftline.checks.result import SEVERITIES
    from driftline_airflow.operators import monitor

    assert monitor.SEVERITIES == SEVERITIES


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


def test_airflow_registers_the_connection_type_notifier_and_link() -> None:
    """What the UI builds the connection form from, and what lets the serialized DAG keep the link."""
    code = (
        "import json; from airflow.providers_manager import ProvidersManager as P; p = P();"
        "hook = p.hooks['driftline'];"
        "widgets = {k: w.is_sensitive for k, w in p.connection_form_widgets.items() if '__driftline__' in k};"
        "print(json.dumps({'hook': hook.hook_class_name, 'name': hook.hook_name, 'widgets': widgets,"
        " 'hidden': p.field_behaviours['driftline']['hidden_fields'],"
        " 'notifiers': [str(n) for n in p.notification],"
        " 'links': p.extra_links_class_names}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["hook"] == "driftline_airflow.hooks.driftline.DriftlineHook" and found["name"] == "driftline"
    assert found["widgets"] == {
        "extra__driftline__store_url": False,
        "extra__driftline__slack_channel": False,
        "extra__driftline__slack_token": True,
        "extra__driftline__slack_webhook_url": True,
        "extra__driftline__report_url": False,
    }
    assert set(found["hidden"]) == {"host", "schema", "login", "port"}
    assert "driftline_airflow.notifications.driftline.DriftlineNotifier" in found["notifiers"]
    assert "driftline_airflow.links.DriftlineReportLink" in found["links"]
