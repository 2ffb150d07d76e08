"""One monitor name per spec file in a folder.

A monitor's `name` keys its history rows, its reports (`.driftline/reports/<name>/`), its spool and its
incidents. Two spec files of one folder that share a name would overwrite each other's reports and mix
their histories, so the first spec file to run under a name claims it in
`.driftline/monitors/<name>.json`, and another spec file of the folder is refused while the claiming
file still exists and still declares that name.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from driftline.tasks.config.spec import MonitorSpec, SpecError
from driftline.tasks.tools.files import write_cache_file


def claim_file(spec: MonitorSpec) -> Path:
    """Where the claim on `spec.name` is kept (the name is validated by the spec's pattern)."""
    return spec.state_dir / "monitors" / f"{spec.name}.json"


def claimant(path: Path) -> str | None:
    """The spec file name a claim names, or None when the claim is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    spec = data.get("spec") if isinstance(data, dict) else None
    return spec if isinstance(spec, str) and Path(spec).name == spec else None


def still_declares(spec_file: Path, name: str) -> bool:
    """Whether `spec_file` exists and its `name:` is still `name` (a renamed monitor frees its claim)."""
    try:
        data = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("name") == name


def claim_name(spec: MonitorSpec) -> None:
    """Claim `spec.name` for the spec's file, or raise `SpecError` naming the other file that has it.
    A spec built in Python (no file) claims nothing."""
    if spec.path is None:
        return
    mine = Path(spec.path).name
    path = claim_file(spec)
    holder = claimant(path)
    if holder == mine:
        return
    if holder is not None and still_declares(spec.base_dir / holder, spec.name):
        raise SpecError(
            f"{spec.path}: name {spec.name!r} is already the monitor of {holder} in the same folder; "
            "a name keys the history, reports and incidents, so give each spec its own name"
        )
    # A claim that cannot be written (a full or read-only disk) is logged, never fatal: the run still
    # has to be stored or printed.
    write_cache_file(path, json.dumps({"spec": mine}).encode("utf-8"))
