"""The reference-profile cache (content-hash keys, disk persistence) and the run spool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd
import pytest

from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.fingerprint import frame_fingerprint
from driftline.tasks.references.profiles import SUFFIX, ProfileCache
from driftline.tasks.run.spool import pending, replay_spool, spool_run

STORE = "sqlite:///history.db"


@dataclass(kw_only=True)
class CountingCheck(Check):
    """Counts its fits (not registered)."""

    name: ClassVar[str] = "test.counting"
    family: ClassVar[str] = "test"
    bins: int = 10
    fits: ClassVar[int] = 0

    def fit(self, reference, columns):
        CountingCheck.fits += 1
        return {"mean": float(reference["x"].mean()), "bins": self.bins}

    def evaluate(self, current, profile, columns):
        return []


COLS = Columns(numeric=("x",))


def test_profile_fitted_once_per_content_and_params(tmp_path) -> None:
    CountingCheck.fits = 0
    ref = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    cache = ProfileCache(tmp_path)
    key = frame_fingerprint(ref)
    assert cache.get_or_fit(CountingCheck(), ref, COLS, key) == {"mean": 2.0, "bins": 10}
    cache.get_or_fit(CountingCheck(), ref.copy(), COLS, frame_fingerprint(ref.copy()))
    assert CountingCheck.fits == 1
    cache.get_or_fit(CountingCheck(bins=5), ref, COLS, key)
    changed = ref.assign(x=[1.0, 2.0, 4.0])
    cache.get_or_fit(CountingCheck(), changed, COLS, frame_fingerprint(changed))
    assert CountingCheck.fits == 3
    # a new process reads the profile from disk instead of refitting
    assert ProfileCache(tmp_path).get_or_fit(CountingCheck(), ref, COLS, key)["mean"] == 2.0
    assert CountingCheck.fits == 3


def test_corrupt_cache_entry_is_refitted(tmp_path) -> None:
    CountingCheck.fits = 0
    ref = pd.DataFrame({"x": [1.0]})
    cache = ProfileCache(tmp_path)
    key = cache.key(CountingCheck(), COLS, frame_fingerprint(ref))
    (tmp_path / f"{key}{SUFFIX}").write_bytes(b"garbage")
    assert (
        ProfileCache(tmp_path).get_or_fit(CountingCheck(), ref, COLS, frame_fingerprint(ref))["mean"] == 1.0
    )
    assert CountingCheck.fits == 1


def test_fingerprint_ignores_index_but_not_values_or_dtypes() -> None:
    a = pd.DataFrame({"x": [1, 2]})
    assert frame_fingerprint(a) == frame_fingerprint(a.set_axis([5, 6]))
    assert frame_fingerprint(a) != frame_fingerprint(a.astype(float))
    assert frame_fingerprint(a) != frame_fingerprint(a.assign(x=[1, 3]))


def test_spool_keeps_records_until_written(tmp_path) -> None:
    spool_run({"monitor": "m", "batch_id": "2024/05", "value": 1}, tmp_path, STORE)
    spool_run({"monitor": "m", "batch_id": "b2", "value": 2}, tmp_path, STORE)

    def failing(record):
        raise ConnectionError("database down")

    with pytest.raises(ConnectionError):
        replay_spool(failing, tmp_path, STORE, transient=lambda exc: isinstance(exc, ConnectionError))
    assert len(list(tmp_path.glob("*.json"))) == 2
    written = []
    assert replay_spool(written.append, tmp_path, STORE) == 2
    assert sorted(r["value"] for r in written) == [1, 2]
    assert all("spooled_for" not in r for r in written)
    assert not list(tmp_path.glob("*.json"))


def test_a_record_that_cannot_be_written_is_set_aside(tmp_path) -> None:
    spool_run({"monitor": "m", "batch_id": "bad", "value": "x"}, tmp_path, STORE)
    spool_run({"monitor": "m", "batch_id": "good", "value": 2}, tmp_path, STORE)

    def write(record):
        if record["value"] == "x":
            raise ValueError("metric value 'x' is not a number")
        written.append(record)

    written: list = []
    assert replay_spool(write, tmp_path, STORE, transient=lambda exc: isinstance(exc, ConnectionError)) == 1
    assert [r["batch_id"] for r in written] == ["good"]
    [rejected] = tmp_path.iterdir()
    assert rejected.name.startswith("m__bad__") and rejected.suffix == ".rejected"


def test_batch_ids_that_sanitise_alike_do_not_overwrite_each_other(tmp_path) -> None:
    first = spool_run({"monitor": "m", "batch_id": "2024/05"}, tmp_path, STORE)
    second = spool_run({"monitor": "m", "batch_id": "2024_05"}, tmp_path, STORE)
    assert first != second and len(list(tmp_path.glob("*.json"))) == 2


def test_records_are_replayed_only_into_the_store_they_were_meant_for(tmp_path) -> None:
    """A run spooled for an unreachable PostgreSQL is not written into another store; the spool
    listing names where each record waits to go, with the password masked."""
    postgres = "postgresql+psycopg://user:secret@db.internal:5432/history"
    spool_run({"monitor": "m", "batch_id": "b1", "alerts_due": True}, tmp_path, postgres)
    written: list = []
    assert replay_spool(written.append, tmp_path, "sqlite:///other.db") == 0
    assert written == [] and len(list(tmp_path.glob("*.json"))) == 1
    [waiting] = pending(tmp_path)
    assert (waiting["monitor"], waiting["batch_id"], waiting["alerts_due"]) == ("m", "b1", True)
    assert waiting["store"] == "postgresql+psycopg://user:***@db.internal:5432/history"
    assert "secret" not in next(tmp_path.glob("*.json")).read_text()
    assert replay_spool(written.append, tmp_path, postgres) == 1
    assert [r["batch_id"] for r in written] == ["b1"] and pending(tmp_path) == []
