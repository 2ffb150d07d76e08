"""A cached profile file of a few hundred kilobytes whose member inflates to gigabytes (a zip bomb in
a shared cache folder) took 2.2 GB and minutes to read. A profile is written uncompressed and small, so
a file with a compressed member, or declaring more than `MAX_PROFILE_BYTES`, is refitted with a warning
without being inflated."""

from __future__ import annotations

import io
import json
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from driftline.checks import profile_format
from tests.security.test_tampered_profile_cache import ARRAY, cached_file, refits_with_warning

MB = 1024 * 1024


def test_a_compressed_bomb_is_refitted_without_being_inflated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A valid archive under the right key whose profile is one array: 64 MB of zeros deflated to a
    tenth of a megabyte."""
    path = cached_file(tmp_path)
    tree = {"format": "driftline-profile", "version": 1, "key": path.stem, "profile": ARRAY}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bomb:
        buffer = io.BytesIO()
        np.save(buffer, np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8))
        bomb.writestr("tree.npy", buffer.getvalue())
        with bomb.open("a0.npy", "w", force_zip64=True) as member:
            header = {"descr": "|u1", "fortran_order": False, "shape": (64 * MB,)}
            np.lib.format.write_array_header_1_0(member, header)
            for _ in range(64):
                member.write(bytes(MB))
    assert path.stat().st_size < MB
    started = time.perf_counter()
    refits_with_warning(tmp_path, caplog)
    assert time.perf_counter() - started < 5
    assert "compressed archive member" in caplog.text


def test_a_stored_file_past_the_limit_is_refitted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = cached_file(tmp_path)
    monkeypatch.setattr(profile_format, "MAX_PROFILE_BYTES", path.stat().st_size // 2)
    refits_with_warning(tmp_path, caplog)
    assert "more than a profile's" in caplog.text
