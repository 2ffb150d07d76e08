"""A monitor reads its reference and batches from S3 (moto's server on 127.0.0.1): whole files and
partition globs give the frames and the stored results the same files give read locally; a missing
object is one line naming its URL; the reference cache's identity follows the object."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from driftline.tasks.run.partitioned import run_partitioned
from driftline.tasks.run.pipeline import run_monitor
from driftline.tasks.sources import FileSource, SourceError, list_batch_ids, load_file_batch, read_table
from tests.scale.conftest import ROLES
from tests.scale.helpers import assert_same_history, mixed_frame, stored
from tests.sources.specs import write_monitor

BATCH = "2024-05-01"
CHECKS = ["drift.numeric", "drift.categorical", "abnormal.nulls", "performance.overall"]


def put_parquet(s3: Any, bucket: str, key: str, frame: pd.DataFrame) -> None:
    """`frame` written as a Parquet object."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    s3.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())


def spec_file(folder: Path, reference: str, batches: str) -> Path:
    """A monitor over `reference` and `batches` (paths or URLs) with its own history in `folder`."""
    sources = {"reference": {"path": reference}, "batches": {"path": batches}}
    return write_monitor(folder, "objects", sources, ROLES, CHECKS)


@pytest.fixture
def stored_data(tmp_path: Path, s3: Any, bucket: str) -> dict[str, Any]:
    """The same reference and batch locally and in the bucket: one file each, and the batch in three
    partitions under `parts/<batch>/` and under hive-style `hive/date=<batch>/`."""
    reference, batch = mixed_frame(3000, seed=21), mixed_frame(2400, seed=22, shift=0.5)
    local = tmp_path / "local"
    (local / "parts" / BATCH).mkdir(parents=True)
    reference.to_parquet(local / "reference.parquet", index=False)
    batch.to_parquet(local / f"{BATCH}.parquet", index=False)
    put_parquet(s3, bucket, "reference.parquet", reference)
    put_parquet(s3, bucket, f"batches/{BATCH}.parquet", batch)
    for i, start in enumerate(range(0, len(batch), 800)):
        part = batch.iloc[start : start + 800]
        part.to_parquet(local / "parts" / BATCH / f"part-{i}.parquet", index=False)
        put_parquet(s3, bucket, f"parts/{BATCH}/part-{i}.parquet", part)
        put_parquet(s3, bucket, f"hive/date={BATCH}/part-{i}.parquet", part)
    s3.put_object(Bucket=bucket, Key="csv/2024-05-02.csv", Body=batch.head(50).to_csv(index=False).encode())
    return {"local": local, "url": f"s3://{bucket}", "reference": reference, "batch": batch}


def test_whole_objects_read_as_the_same_files_read_locally(stored_data: dict[str, Any]) -> None:
    url, local = stored_data["url"], stored_data["local"]
    pd.testing.assert_frame_equal(read_table(f"{url}/reference.parquet"), stored_data["reference"])
    pd.testing.assert_frame_equal(
        load_file_batch(f"{url}/batches/{{batch}}.parquet", None).frame,
        read_table(local / f"{BATCH}.parquet"),
    )
    csv = load_file_batch(f"{url}/csv/{{batch}}.csv", None)
    assert csv.batch_id == "2024-05-02" and len(csv.frame) == 50
    assert csv.frame["x"].tolist() == pytest.approx(stored_data["batch"]["x"].head(50).tolist(), nan_ok=True)


def test_partition_globs_and_hive_folders_list_and_read_the_batch(stored_data: dict[str, Any]) -> None:
    url, batch = stored_data["url"], stored_data["batch"]
    for template in (
        f"{url}/parts/{{batch}}/*.parquet",
        f"{url}/hive/date={{batch}}/",
        f"{url}/parts/{{batch}}/",
    ):
        assert list_batch_ids(template) == [BATCH], template
        loaded = load_file_batch(template, None)
        pd.testing.assert_frame_equal(loaded.frame, batch)


def test_a_monitor_on_s3_stores_what_the_same_files_give_locally(
    stored_data: dict[str, Any], tmp_path: Path
) -> None:
    url, local = stored_data["url"], stored_data["local"]
    on_disk = spec_file(tmp_path / "disk", str(local / "reference.parquet"), str(local / "{batch}.parquet"))
    remote = spec_file(tmp_path / "s3", f"{url}/reference.parquet", f"{url}/batches/{{batch}}.parquet")
    from driftline.tasks.config.spec import load_spec

    for spec_path in (on_disk, remote):
        summary = run_monitor(load_spec(spec_path), BATCH, alerts=False, retrain=False)
        assert summary.status == "failed", summary.to_dict()
    assert_same_history(on_disk, remote, BATCH)
    psi = {r["target"]: r["metrics"]["psi"] for r in stored(remote, BATCH) if r["check"] == "drift.numeric"}
    assert psi["x"] > 0.1  # the batch is shifted: the comparison is not between two empty histories


def test_a_partitioned_run_over_s3_parts_stores_what_the_local_parts_give(
    stored_data: dict[str, Any], tmp_path: Path
) -> None:
    url, local = stored_data["url"], stored_data["local"]
    reference = str(local / "reference.parquet")
    on_disk = spec_file(tmp_path / "disk", reference, str(local / "parts" / "{batch}" / "*.parquet"))
    remote = spec_file(tmp_path / "s3", f"{url}/reference.parquet", f"{url}/parts/{{batch}}/*.parquet")
    from driftline.tasks.config.spec import load_spec

    for spec_path in (on_disk, remote):
        run_partitioned(load_spec(spec_path), BATCH, alerts=False, retrain=False)
    assert_same_history(on_disk, remote, BATCH)


def test_a_missing_object_is_one_line_naming_its_url_and_nothing_is_stored(
    stored_data: dict[str, Any], tmp_path: Path
) -> None:
    url = stored_data["url"]
    with pytest.raises(SourceError) as caught:
        read_table(f"{url}/nowhere/reference.parquet")
    assert str(caught.value) == f"{url}/nowhere/reference.parquet: no such object"
    from driftline.tasks.config.spec import load_spec

    spec_path = spec_file(tmp_path / "m", f"{url}/missing.parquet", f"{url}/batches/{{batch}}.parquet")
    with pytest.raises(SourceError, match=r"^s3://.*/missing\.parquet: no such object$"):
        run_monitor(load_spec(spec_path), BATCH, alerts=False, retrain=False)
    assert not (tmp_path / "m" / "history.db").exists() or stored(spec_path, BATCH) == []


def test_the_cache_identity_changes_with_the_object_and_only_then(
    stored_data: dict[str, Any], s3: Any, bucket: str
) -> None:
    source = FileSource(f"{stored_data['url']}/reference.parquet")
    before = source.identity()
    assert before is not None and before == source.identity()
    put_parquet(s3, bucket, "reference.parquet", stored_data["reference"].assign(x=lambda f: f["x"] + 1))
    assert source.identity() not in (None, before)
    assert FileSource(f"{stored_data['url']}/missing.parquet").identity() is None


def test_the_read_budget_refuses_a_remote_object_on_its_footer(
    stored_data: dict[str, Any], s3: Any, bucket: str
) -> None:
    """A dictionary-encoded column of 200,000 copies of one 2 kB string: a few kilobytes stored, about
    400 MB decoded, past a 64 MB budget."""
    from driftline.tasks.sources.read_limits import ReadLimits

    bomb = pd.DataFrame({"text": ["x" * 2000] * 200_000})
    put_parquet(s3, bucket, "bomb.parquet", bomb)
    with pytest.raises(SourceError, match=r"^s3://.*/bomb\.parquet: decodes to 38\d MB, more than the read"):
        read_table(f"{stored_data['url']}/bomb.parquet", ReadLimits(memory_mb=64))
    s3.put_object(Bucket=bucket, Key="big.csv", Body=b"a\n" + b"1\n" * (2 * 1024 * 1024))
    with pytest.raises(
        SourceError, match=r"^s3://.*/big\.csv: 4 MB to read, more than the read budget of 1 MB"
    ):
        read_table(f"{stored_data['url']}/big.csv", ReadLimits(memory_mb=1))


def test_an_unreachable_endpoint_is_one_line_naming_the_url_and_nothing_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import s3fs

    from driftline.tasks.config.spec import load_spec
    from driftline.tasks.sources import storage
    from tests.sources.conftest import free_port

    closed = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", closed)
    monkeypatch.setattr(storage, "RETRY_DELAYS", (0.01, 0.01, 0.01))  # the retries, without their waits
    s3fs.S3FileSystem.clear_instance_cache()  # the cached filesystem knows the live server

    spec_path = spec_file(tmp_path, "s3://gone/reference.parquet", "s3://gone/{batch}.parquet")
    try:
        with pytest.raises(SourceError) as caught:
            run_monitor(load_spec(spec_path), BATCH, alerts=False, retrain=False)
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    message = str(caught.value)
    assert message.startswith("s3://gone/reference.parquet: cannot reach the object (EndpointConnectionError")
    assert "\n" not in message and "testing-secret" not in message
    assert not (tmp_path / "history.db").exists() or stored(spec_path, BATCH) == []
