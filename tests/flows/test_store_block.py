"""The history store named by a Prefect Secret block (`store_block`): a run writes where the block
points, and a block that cannot be read is a spec error naming the block, never its value."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from driftline.tasks.config.spec import SpecError, load_spec
from driftline.tasks.run.pipeline import run_monitor
from tests.scale.conftest import BATCH, write_monitor


def _blocked_spec(monitor_data: Path, folder: Path, block: str) -> Path:
    path = write_monitor(monitor_data, folder, str(monitor_data / "single" / "{batch}.parquet"))
    spec = yaml.safe_load(path.read_text())
    del spec["store_url"]
    spec["store_block"] = block
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.usefixtures("prefect_server")
def test_a_run_stores_its_history_where_the_block_points(monitor_data: Path, tmp_path: Path) -> None:
    from prefect.blocks.system import Secret

    database = tmp_path / "elsewhere" / "monitor.db"
    database.parent.mkdir()
    Secret(value=f"sqlite:///{database}").save("monitor-db", overwrite=True)
    spec_path = _blocked_spec(monitor_data, tmp_path / "monitor", "monitor-db")

    summary = run_monitor(load_spec(spec_path), BATCH, alerts=False, retrain=False)

    with sa.create_engine(f"sqlite:///{database}").connect() as conn:
        stored = conn.execute(sa.text("select monitor, batch_id from runs")).all()
    assert stored == [("scale", BATCH)] and summary.batch_id == BATCH
    assert not (spec_path.parent / "driftline.db").exists()  # nothing written beside the spec


@pytest.mark.usefixtures("prefect_server")
def test_an_unreadable_block_is_a_spec_error_naming_it(monitor_data: Path, tmp_path: Path) -> None:
    from prefect.blocks.system import Secret

    Secret(value="mysql://admin:hunter2@db/monitor").save("wrong-db", overwrite=True)
    missing = load_spec(_blocked_spec(monitor_data, tmp_path / "missing", "no-such-block"))
    with pytest.raises(SpecError, match="store_block 'no-such-block': cannot load the Prefect Secret block"):
        missing.database_url()
    wrong = load_spec(_blocked_spec(monitor_data, tmp_path / "wrong", "wrong-db"))
    with pytest.raises(SpecError, match=r"store_block 'wrong-db': .*needs SQLite or PostgreSQL") as error:
        wrong.database_url()
    assert "hunter2" not in str(error.value)


def test_store_url_and_store_block_exclude_each_other(monitor_data: Path, tmp_path: Path) -> None:
    path = write_monitor(monitor_data, tmp_path, str(monitor_data / "single" / "{batch}.parquet"))
    spec = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**spec, "store_block": "monitor-db"}))
    with pytest.raises(SpecError, match="give store_url or store_block, not both"):
        load_spec(path)
