"""Item 1: a cached profile file is data, never code. A tampered, foreign or corrupt file is refitted
with a warning; every check of the catalog gets its profile back from the file exactly as fitted."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

from driftline.checks import registry
from driftline.checks.base import Check
from driftline.checks.columns import Columns
from driftline.checks.errors import NotApplicable
from driftline.checks.fingerprint import frame_fingerprint
from driftline.checks.profile_format import dump_profile, load_profile
from driftline.checks.runner import run_check
from driftline.checks.testing import CONTRACT_COLUMNS, assert_same_results, contract_frame
from driftline.tasks.references.profiles import ProfileCache


@dataclass(kw_only=True)
class MeanCheck(Check):
    """Profiles the mean of `x` (not registered)."""

    name: ClassVar[str] = "test.mean"
    family: ClassVar[str] = "test"
    fits: ClassVar[int] = 0

    def fit(self, reference, columns):
        MeanCheck.fits += 1
        return {"mean": float(reference["x"].mean())}

    def evaluate(self, current, profile, columns):
        return []


REF = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
COLS = Columns(numeric=("x",))
HASH = frame_fingerprint(REF)


class Exploit:
    """Unpickling this runs `os.system`, as a pickle planted in a shared cache folder would."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def cached_file(directory: Path) -> Path:
    """The file the cache keeps MeanCheck's profile of REF in."""
    cache = ProfileCache(directory)
    cache.get_or_fit(MeanCheck(), REF, COLS, HASH)
    [path] = [p for p in directory.iterdir() if not p.name.startswith(".")]
    return path


def refits_with_warning(directory: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A fresh cache over `directory` refits MeanCheck, warns, and gives the right profile."""
    MeanCheck.fits = 0
    with caplog.at_level(logging.WARNING, logger="driftline.tasks.references.profiles"):
        assert ProfileCache(directory).get_or_fit(MeanCheck(), REF, COLS, HASH) == {"mean": 2.0}
    assert MeanCheck.fits == 1
    assert "ignoring unreadable cached profile" in caplog.text


def test_a_planted_pickle_is_never_executed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = cached_file(tmp_path / "profiles")
    marker = tmp_path / "pwned"
    path.write_bytes(pickle.dumps(Exploit(marker)))
    refits_with_warning(tmp_path / "profiles", caplog)
    assert not marker.exists()


def forged(path: Path, edit) -> None:
    """Rewrite the stored structure of the profile file at `path` with `edit(tree)`."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    tree = json.loads(arrays["tree"].tobytes())
    edit(tree)
    arrays["tree"] = np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8)
    with path.open("wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize(
    "edit",
    [
        # a class outside driftline, e.g. one whose construction runs a command
        lambda t: t.update(
            profile={"$": "dataclass", "class": "subprocess:Popen", "version": 1, "fields": {}}
        ),
        # a driftline class that is not a dataclass
        lambda t: t.update(
            profile={"$": "dataclass", "class": "driftline.tasks.tools.files:Path", "version": 1}
        ),
        lambda t: t.update(profile={"$": "pickle", "data": "gASV"}),  # a type the format does not know
        lambda t: t.update(key="0" * 64),  # a file copied from another cache entry
        lambda t: t.update(version=0),  # an older format
    ],
    ids=["foreign class", "not a dataclass", "unknown type", "other key", "other version"],
)
def test_a_forged_or_foreign_file_is_refitted(tmp_path: Path, caplog: pytest.LogCaptureFixture, edit) -> None:
    forged(cached_file(tmp_path), edit)
    refits_with_warning(tmp_path, caplog)


ARRAY = {"$": "array", "array": "a0"}


def test_an_object_array_inside_the_archive_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """NumPy's own pickle path (an object array) is never taken when reading."""
    path = cached_file(tmp_path)
    tree = json.dumps({"format": "driftline-profile", "version": 1, "key": path.stem, "profile": ARRAY})
    with path.open("wb") as fh:
        np.savez(fh, tree=np.frombuffer(tree.encode(), dtype=np.uint8), a0=np.array([Exploit(tmp_path)]))
    refits_with_warning(tmp_path, caplog)


def test_garbage_is_refitted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cached_file(tmp_path).write_bytes(b"garbage")
    refits_with_warning(tmp_path, caplog)


def test_a_profile_the_format_cannot_hold_stays_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Opaque:
        pass

    cache = ProfileCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="driftline.tasks.references.profiles"):
        cache._write("k", MeanCheck(), {"model": Opaque()})
    assert list(tmp_path.iterdir()) == []
    assert "kept in memory only" in caplog.text and "Opaque" in caplog.text


@pytest.mark.parametrize("name", registry.names())
def test_every_catalog_profile_comes_back_from_its_file(name: str) -> None:
    check = registry.create(name)
    try:
        profile = check.fit(contract_frame(400, seed=0), CONTRACT_COLUMNS)
    except NotApplicable:
        pytest.skip("does not apply to the contract frame")
    trusted = (type(check).__module__,)
    restored = load_profile(io.BytesIO(dump_profile(profile, "key", trusted)), "key", trusted)
    current = contract_frame(300, seed=1)
    expected = run_check(check, current, CONTRACT_COLUMNS, profile=profile, strict=True)
    assert_same_results(run_check(check, current, CONTRACT_COLUMNS, profile=restored, strict=True), expected)


def test_pandas_and_numpy_values_keep_their_types() -> None:
    profile = {
        (1, "a"): np.float32(1.5),
        "frame": pd.DataFrame({"c": pd.Categorical(["x", "y"]), "s": pd.Series(["p", None], dtype="str")}),
        "index": pd.Index([("a", "b"), ("c", "d")], dtype=object, tupleize_cols=False),
        "ints": pd.array([1, None], dtype="Int64"),
        "sets": [frozenset({1}), {2}],
        "objects": np.array(["mixed", 1], dtype=object),
        "series": pd.Series([1.0, np.nan], index=pd.Index(["u", "v"], name="k"), name="n"),
    }
    restored = load_profile(io.BytesIO(dump_profile(profile, "k")), "k")
    assert type(restored[(1, "a")]) is np.float32 and restored[(1, "a")] == 1.5
    pd.testing.assert_frame_equal(restored["frame"], profile["frame"])
    pd.testing.assert_index_equal(restored["index"], profile["index"])
    pd.testing.assert_extension_array_equal(restored["ints"], profile["ints"])
    pd.testing.assert_series_equal(restored["series"], profile["series"])
    assert restored["sets"] == [frozenset({1}), {2}]
    assert restored["objects"].tolist() == ["mixed", 1]
