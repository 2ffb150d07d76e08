"""The worker image's build context (the repository root, docker/compose.yaml) as Docker sends it:
`.dockerignore` read by docker-py's own implementation of its rules, so a virtual environment or
build folder at any depth never ships into the image."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from docker.utils.build import exclude_paths

ROOT = Path(__file__).parents[2]
LEFT_OUT = (".venv", "venv", "build", "dist", "node_modules", "__pycache__", ".driftline", ".git")


def context_files(root: Path) -> set[str]:
    """The files Docker would send for a build of `root` with its `.dockerignore`."""
    patterns = (root / ".dockerignore").read_text().splitlines()
    patterns = [p.strip() for p in patterns if p.strip() and not p.startswith("#")]
    return {p for p in exclude_paths(str(root), patterns) if (root / p).is_file()}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the repository's `.dockerignore` over a small tree with environments and build output
    at several depths beside the folders the Dockerfile copies."""
    shutil.copy(ROOT / ".dockerignore", tmp_path / ".dockerignore")
    files = [
        "pyproject.toml",
        "checks/drift.py",
        "deployments/airflow/driftline_airflow/operators.py",
        "data/adult/adult.parquet",
        ".venv/lib/site.py",
        ".venv-prefect-next/lib/site.py",
        "deployments/airflow/.venv/lib/python3.11/site-packages/airflow/__init__.py",
        "deployments/airflow/build/lib/driftline_airflow/__init__.py",
        "deployments/airflow/driftline_airflow.egg-info/PKG-INFO",
        "build/lib/driftline/checks/drift.py",
        "dist/driftline-0.1.0-py3-none-any.whl",
        "checks/__pycache__/drift.cpython-311.pyc",
        "demo/.driftline/spool/run.json",
        "demo/driftline.db",
        "tests/test_x.py",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    return tmp_path


def test_the_context_leaves_out_environments_and_build_output_at_any_depth(tree: Path) -> None:
    sent = context_files(tree)
    assert sent == {
        ".dockerignore",
        "pyproject.toml",
        "checks/drift.py",
        "deployments/airflow/driftline_airflow/operators.py",
        "data/adult/adult.parquet",
    }


def test_the_repository_context_holds_what_the_dockerfile_copies_and_no_environment() -> None:
    sent = context_files(ROOT)
    for folder in ("checks", "tasks", "flows", "driftline", "data", "deployments"):
        assert any(p.startswith(f"{folder}/") for p in sent), folder
    assert {"pyproject.toml", "README.md"} <= sent
    assert not [p for p in sent if set(Path(p).parts) & set(LEFT_OUT) or ".egg-info" in p or ".venv" in p]


def test_every_path_the_dockerfile_copies_is_in_the_context() -> None:
    sent = context_files(ROOT)
    copied = [
        line.split()[1]
        for line in (ROOT / "docker" / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ")
    ]
    for source in copied:
        assert source in sent or any(p.startswith(f"{source}/") for p in sent), source
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    contexts = {s["build"]["context"] for s in compose["services"].values() if "build" in s}
    assert contexts == {".."}
