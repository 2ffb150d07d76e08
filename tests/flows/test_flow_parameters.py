"""A monitor flow run's parameters are stored as FastAPI's encoder stores them, without importing
FastAPI for plain JSON values (its import was a fifth of a small run's CPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fastapi.encoders import jsonable_encoder

JSON_PARAMETERS = {
    "spec_path": "/srv/monitor.yaml",
    "batch_id": None,
    "alerts": True,
    "retrain": "always",
    "fail_flow_run": False,
    "batch_ids": ["2018-06", "2018-12"],
    "limits": {"rows": 1000, "share": 0.5},
}


def test_json_parameters_are_stored_as_fastapis_encoder_stores_them() -> None:
    from driftline.flows.monitor import monitor

    assert monitor.serialize_parameters(JSON_PARAMETERS) == jsonable_encoder(JSON_PARAMETERS)


def test_other_values_are_left_to_prefects_encoder() -> None:
    from driftline.flows.monitor import monitor

    parameters = {"spec_path": Path("/srv/monitor.yaml"), "batch_ids": ("a", 1), "keys": {1: "x"}}
    assert monitor.serialize_parameters(parameters) == jsonable_encoder(parameters)


def test_serializing_json_parameters_imports_no_fastapi() -> None:
    code = (
        "import sys\n"
        "from driftline.flows.monitor import monitor\n"
        f"monitor.serialize_parameters({JSON_PARAMETERS!r})\n"
        "print('fastapi' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.strip() == "False", done.stderr[-2000:]
