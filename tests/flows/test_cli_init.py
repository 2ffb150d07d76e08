"""`driftline init`: a project folder with the demo spec, its data and a prefect.yaml, runnable as is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from driftline.data.demo import BATCHES
from driftline.flows.cli import EXIT_USAGE, app
from driftline.tasks.config.spec import load_spec

runner = CliRunner()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder made by `driftline init` (the folder itself created by the command)."""
    folder = tmp_path_factory.mktemp("init") / "project"
    done = runner.invoke(app, ["init", str(folder)])
    assert done.exit_code == 0, done.output
    return folder


def test_init_writes_a_spec_its_data_and_the_deployments(project: Path) -> None:
    """The spec loads and points at the written data; prefect.yaml deploys it by absolute path with
    module entrypoints and no pull step."""
    spec = load_spec(project / "monitor.yaml")
    assert spec.name == "acs-employment"
    assert (project / "data" / "reference.parquet").is_file()
    assert sorted(p.stem for p in (project / "data" / "batches").glob("*.parquet")) == [b[0] for b in BATCHES]

    deployments = yaml.safe_load((project / "prefect.yaml").read_text())
    assert deployments["pull"] == []
    monitor, retrain = deployments["deployments"]
    assert monitor["name"] == spec.name and monitor["entrypoint"] == "driftline.flows.monitor:monitor"
    assert monitor["parameters"]["spec_path"] == str((project / "monitor.yaml").resolve())
    assert retrain["entrypoint"] == "driftline.flows.retrain:retrain"


def test_the_written_spec_runs_from_another_folder(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`driftline run` on the written spec passes its first batch, wherever it is started from."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    done = runner.invoke(
        app, ["run", str(project / "monitor.yaml"), "--batch", "2016-06", "--engine", "local", "--json"]
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["status"] == "passed" and summary["batch_id"] == "2016-06"
    assert list(tmp_path.iterdir()) == []  # nothing lands in the working directory


def test_init_writes_only_into_a_folder_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a folder, init writes ./driftline-demo and nothing beside it: the spec, prefect.yaml, the
    reference and the six batches, and no other file."""
    (tmp_path / "data" / "batches").mkdir(parents=True)
    (tmp_path / "data" / "batches" / "2020-01.parquet").write_bytes(b"a user's batch")
    before = sorted(tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["init"])
    assert done.exit_code == 0, done.output

    demo = tmp_path / "driftline-demo"
    assert sorted(p for p in tmp_path.rglob("*") if demo not in p.parents and p != demo) == before
    written = sorted(str(p.relative_to(demo)) for p in demo.rglob("*") if p.is_file())
    batches = [f"data/batches/{batch_id}.parquet" for batch_id, _, _ in BATCHES]
    assert written == sorted(["monitor.yaml", "prefect.yaml", "data/reference.parquet", *batches])
    assert "driftline run driftline-demo/monitor.yaml" in done.output


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_folder_whose_data_holds_a_users_batches_is_refused(tmp_path: Path, force: list[str]) -> None:
    """A user's batch under data/ is named and kept, with or without --force; nothing is written, so
    `backfill` of the user's spec still finds only the user's batches."""
    user_batch = tmp_path / "data" / "batches" / "2020-01.parquet"
    user_batch.parent.mkdir(parents=True)
    user_batch.write_bytes(b"a user's batch")
    refused = runner.invoke(app, ["init", str(tmp_path), *force])
    assert refused.exit_code == EXIT_USAGE
    assert f"{tmp_path / 'data'}: holds 1 file(s) the demo does not write ({user_batch})" in refused.stderr
    assert "driftline backfill" in refused.stderr and "driftline init driftline-demo" in refused.stderr
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == [user_batch]


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    """An existing file is named and kept; --force writes the project over it."""
    (tmp_path / "monitor.yaml").write_text("name: mine\n")
    refused = runner.invoke(app, ["init", str(tmp_path)])
    assert refused.exit_code == EXIT_USAGE
    assert "monitor.yaml" in refused.output and "--force" in refused.output
    assert (tmp_path / "monitor.yaml").read_text() == "name: mine\n"
    assert not (tmp_path / "data").exists() and not (tmp_path / "prefect.yaml").exists()

    forced = runner.invoke(app, ["init", str(tmp_path), "--force"])
    assert forced.exit_code == 0, forced.output
    assert load_spec(tmp_path / "monitor.yaml").name == "acs-employment"


def prefect(folder: Path, *args: str) -> None:
    """One `prefect` CLI command run from `folder` against the test server, failing with its output."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "prefect"), *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@pytest.mark.prefect
@pytest.mark.usefixtures("prefect_server")
def test_prefect_deploys_the_written_project(project: Path) -> None:
    """`prefect deploy --all` from the folder registers both deployments, the monitor's reading the
    written spec and neither depending on a working directory."""
    from prefect.client.orchestration import get_client

    prefect(project, "work-pool", "create", "driftline", "--type", "process", "--overwrite")
    prefect(project, "--no-prompt", "deploy", "--all")
    with get_client(sync_client=True) as client:
        monitor = client.read_deployment_by_name("driftline-monitor/acs-employment")
        retrain = client.read_deployment_by_name("driftline-retrain/retrain-on-failure")
    assert monitor.parameters == {"spec_path": str((project / "monitor.yaml").resolve())}
    assert monitor.pull_steps in (None, []) and retrain.pull_steps in (None, [])
    assert monitor.work_pool_name == retrain.work_pool_name == "driftline"
