"""One engine a run: inside a `store_scope` every store call borrows one engine, opened and migrated
once; a store that cannot be opened fails at the call that needs it and is tried again by the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from driftline.tasks.config.spec import load_spec
from driftline.tasks.history import db
from driftline.tasks.history.db import StoreUnavailable, connected_store, store_scope
from driftline.tasks.run.pipeline import run_monitor
from tests.demo import write_spec


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> list[Engine]:
    """Every engine the history store creates from now on."""
    made: list[Engine] = []
    real = db._create_engine

    def counted(url: str) -> Engine:
        made.append(real(url))
        return made[-1]

    monkeypatch.setattr(db, "_create_engine", counted)
    return made


def _pool_checked_in(engine: Engine) -> int:
    return engine.pool.checkedin()  # type: ignore[attr-defined]


def test_calls_in_a_scope_share_one_engine_and_it_is_disposed_at_the_end(
    database_url: str, engines: list[Engine]
) -> None:
    with store_scope(database_url):
        with connected_store(database_url) as first, first.connect() as conn:
            conn.execute(text("select 1"))
        with (
            connected_store(database_url, create=False) as second,
            store_scope(database_url),
            connected_store(database_url) as third,
        ):
            assert first is second is third
        assert _pool_checked_in(first) >= 1  # the pooled connection survives between calls
    assert len(engines) == 1
    assert _pool_checked_in(engines[0]) == 0  # disposed with the outermost scope
    with connected_store(database_url), connected_store(database_url):
        pass
    assert len(engines) == 3  # outside a scope, each call opens its own


def test_a_store_that_cannot_be_opened_fails_the_call_and_the_next_call_tries_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'later' / 'history.db'}"
    with store_scope(url):
        with pytest.raises(StoreUnavailable), connected_store(url):
            pass
        (tmp_path / "later").mkdir()
        with connected_store(url) as engine, engine.connect() as conn:
            assert conn.execute(text("select count(*) from runs")).scalar_one() == 0


def test_a_monitor_run_opens_the_history_store_once(
    demo_data: Path, tmp_path: Path, database_url: str, engines: list[Engine]
) -> None:
    spec = load_spec(write_spec(demo_data, tmp_path, store_url=database_url))
    summary: Any = run_monitor(spec, "2018-12", retrain=False)
    assert summary.stored.startswith("stored run"), summary.stored
    assert summary.report is not None  # the report read the history through the same engine
    assert len(engines) == 1
