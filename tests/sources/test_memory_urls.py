"""URLs without a server: `memory://` objects listed, read and identified (the store keeps no ETag, so
its identity adds a content signature), and `file://` read as the local path it names."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import fsspec
import pandas as pd

from driftline.tasks.sources import FileSource, list_batch_ids, load_file_batch, read_table


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def test_memory_objects_are_listed_and_read_and_a_rewritten_one_gets_a_new_identity() -> None:
    fs, root = fsspec.filesystem("memory"), f"t{uuid.uuid4().hex[:8]}"
    for day, value in (("2024-05-02", 2.0), ("2024-05-10", 10.0), ("2024-05-01", 1.0)):
        fs.pipe(f"/{root}/{day}.parquet", parquet_bytes(pd.DataFrame({"v": [value]})))
    template = f"memory://{root}/{{batch}}.parquet"
    assert list_batch_ids(template) == ["2024-05-01", "2024-05-02", "2024-05-10"]
    assert load_file_batch(template, None).frame["v"].tolist() == [10.0]
    source = FileSource(f"memory://{root}/2024-05-01.parquet")
    before = source.identity()
    assert before is not None and before == source.identity()
    fs.pipe(f"/{root}/2024-05-01.parquet", parquet_bytes(pd.DataFrame({"v": [7.0]})))  # the same size
    assert fs.info(f"/{root}/2024-05-01.parquet")["size"] == len(parquet_bytes(pd.DataFrame({"v": [1.0]})))
    assert source.identity() not in (None, before)


def test_a_file_url_is_the_local_path(tmp_path: Path) -> None:
    pd.DataFrame({"a": [1, 2]}).to_csv(tmp_path / "f.csv", index=False)
    assert read_table(f"file://{tmp_path / 'f.csv'}")["a"].tolist() == [1, 2]
