"""driftline as users get it: a wheel built from the tracked sources, installed in a fresh virtual
environment inside a project that has its own `flows/` package and `tasks.py`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
MAPPED = {
    "driftline": "driftline",
    "checks": "driftline/checks",
    "tasks": "driftline/tasks",
    "flows": "driftline/flows",
    "data": "driftline/data",
}


def tracked_files() -> list[str]:
    """Every file git tracks (so a stale build/ or a local artefact can never leak into the wheel)."""
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if (ROOT / line).is_file()]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the tracked source tree."""
    source = tmp_path_factory.mktemp("source")
    for name in tracked_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(source)],
        check=True,
    )
    [built] = dist.glob("driftline-*.whl")
    return built


def test_the_wheel_holds_every_module_at_its_driftline_path(wheel: Path) -> None:
    """Every tracked source file of the package folders is in the wheel under `driftline/`, and no
    top-level `checks`, `tasks` or `flows` is installed."""
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for name in tracked_files():
        top, _, rest = name.partition("/")
        if top in MAPPED and rest and (not name.endswith(".md") or name.endswith("SOURCE.md")):
            expected.add(f"{MAPPED[top]}/{rest}")
    assert expected - names == set()
    assert {
        "driftline/tasks/migrations/script.py.mako",
        "driftline/data/acs_employment/monitor.yaml",
    } <= names
    assert not {n for n in names if n.split("/")[0] in ("checks", "tasks", "flows", "data")}


def test_the_package_list_names_every_source_package() -> None:
    """pyproject's `packages` equals the folders with an `__init__.py`, under their installed names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = set()
    for top, installed in MAPPED.items():
        for init in (ROOT / top).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / top)
            on_disk.add(".".join([installed.replace("/", "."), *relative.parts]))
    assert set(config["packages"]) == on_disk


@pytest.fixture(scope="session")
def user_project(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project with its own `flows/` and `tasks.py`, and a fresh venv with the wheel and Prefect."""
    project = tmp_path_factory.mktemp("project")
    (project / "flows").mkdir()
    (project / "flows" / "__init__.py").write_text("")
    (project / "flows" / "my_flow.py").write_text("def my_flow():\n    return 'mine'\n")
    (project / "tasks.py").write_text("def build():\n    return 'invoke task'\n")
    env_dir = project / ".venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", f"{wheel}[prefect]"],
        check=True,
        cwd=project,
    )
    return project, python


def run_in(project: tuple[Path, Path], *args: str) -> subprocess.CompletedProcess[str]:
    """A command of the user's venv, run from the user's project folder."""
    folder, python = project
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PREFECT_API_URL")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env['PATH']}"
    done = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_cli_and_the_api_work_beside_the_users_own_flows_and_tasks(
    user_project: tuple[Path, Path],
) -> None:
    """`driftline checks`, `python -m driftline`, the public API, the monitor flow and the user's own
    `flows` and `tasks` modules all import in one environment."""
    import json

    listed = json.loads(run_in(user_project, "driftline", "checks", "--json").stdout)
    assert len(listed) >= 58 and "drift.numeric" in {c["name"] for c in listed}
    assert "Usage" in run_in(user_project, "python", "-m", "driftline", "--help").stdout
    code = (
        "from driftline import create, run_check, infer_columns, load_spec, run_monitor\n"
        "from driftline.flows.monitor import monitor\n"
        "import flows.my_flow, tasks\n"
        "assert flows.my_flow.my_flow() == 'mine' and tasks.build() == 'invoke task'\n"
        "assert monitor.name == 'driftline-monitor'\n"
    )
    run_in(user_project, "python", "-c", code)


def test_the_installed_demo_data_and_migrations_run_a_monitor(user_project: tuple[Path, Path]) -> None:
    """Package data is read through importlib.resources: the demo data build and the history store's
    migrations work from site-packages, and a monitor run stores its history there."""
    folder, _ = user_project
    code = (
        "from pathlib import Path\n"
        "from driftline.data.demo import build_demo_data\n"
        "from driftline import load_spec, run_monitor\n"
        "spec = build_demo_data(Path('demo'))\n"
        "summary = run_monitor(load_spec(spec), '2016-06')\n"
        "assert summary.status == 'passed', summary.status\n"
        "assert summary.stored.startswith('stored run'), summary.stored\n"
    )
    env_db = f"sqlite:///{folder / 'history.db'}"
    run_in(user_project, "env", f"DRIFTLINE_DATABASE_URL={env_db}", "python", "-c", code)
    assert (folder / "history.db").stat().st_size > 0
    run_in(user_project, "driftline", "site", "--db", env_db, "--out", "site")  # its templates ship too
    assert "acs-employment" in (folder / "site" / "index.html").read_text()
    run_in(user_project, "driftline", "init", "monitoring")  # the deployments file ships in the wheel
    assert {"monitor.yaml", "prefect.yaml", "data"} <= {p.name for p in (folder / "monitoring").iterdir()}
