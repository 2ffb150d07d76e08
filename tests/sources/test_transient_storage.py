"""Object storage that fails for a moment: a read from `s3://` (moto's server behind a proxy that injects
faults) is tried again on a connection reset, a 5xx or throttling, and succeeds once the store answers;
a store that keeps failing is one line naming the URL and the attempts; a missing object is not
tried again."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from driftline.tasks.sources import SourceError, load_file_batch, read_table, storage
from tests.sources.fault_proxy import Fault, FaultProxy

BATCH = "2024-05-01"
FAULTS = {
    "500 InternalError": Fault.error(500, "InternalError"),
    "503 ServiceUnavailable": Fault.error(503, "ServiceUnavailable"),
    "503 SlowDown (throttling)": Fault.error(503, "SlowDown"),
    "connection reset": Fault.reset(),
}


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"x": [0.5, 1.5, 2.5, 3.5], "city": ["a", "b", "a", "c"], "y": [0, 1, 1, 0]})


@pytest.fixture
def url(s3: Any, bucket: str, frame: pd.DataFrame) -> str:
    """The bucket, holding `frame` as `data.parquet` and as two partitions of batch `BATCH`."""
    for key, part in [
        ("data.parquet", frame),
        *((f"parts/{BATCH}/p{i}.parquet", frame.iloc[i * 2 : i * 2 + 2]) for i in (0, 1)),
    ]:
        buffer = io.BytesIO()
        part.to_parquet(buffer, index=False)
        s3.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())
    return f"s3://{bucket}"


@pytest.fixture
def proxy(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """The fault proxy in front of the server, the environment pointing s3fs at it, and short waits
    between attempts (their number is what is tested, not their length)."""
    import s3fs

    monkeypatch.setattr(storage, "RETRY_DELAYS", (0.01, 0.01, 0.01))
    with FaultProxy(s3_endpoint) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        s3fs.S3FileSystem.clear_instance_cache()  # a cached filesystem knows the server's own URL
        try:
            yield proxy
        finally:
            s3fs.S3FileSystem.clear_instance_cache()


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
def test_a_read_that_fails_transiently_is_tried_again_and_gives_the_object(
    proxy: FaultProxy, url: str, frame: pd.DataFrame, fault: Fault
) -> None:
    proxy.script(*[fault] * len(storage.RETRY_DELAYS))  # one fewer than the attempts
    pd.testing.assert_frame_equal(read_table(f"{url}/data.parquet"), frame)
    assert proxy.faults_left() == 0
    assert Counter(s.outcome for s in proxy.seen)[fault.label] == len(storage.RETRY_DELAYS)


def test_a_partitioned_batch_is_read_through_faults_in_listing_and_reading(
    proxy: FaultProxy, url: str, frame: pd.DataFrame
) -> None:
    proxy.script(Fault.error(500, "InternalError"), Fault.reset(), Fault.error(503, "SlowDown"))
    batch = load_file_batch(f"{url}/parts/{{batch}}/*.parquet", BATCH)
    assert batch.batch_id == BATCH and proxy.faults_left() == 0
    pd.testing.assert_frame_equal(batch.frame, frame)


def test_a_store_that_keeps_failing_is_one_line_naming_the_url_and_the_attempts(
    proxy: FaultProxy, url: str
) -> None:
    proxy.always = Fault.error(500, "InternalError")
    with pytest.raises(SourceError) as caught:
        read_table(f"{url}/data.parquet")
    message = str(caught.value)
    assert message.startswith(f"{url}/data.parquet: ") and "\n" not in message
    assert message == f"{url}/data.parquet: the store answered HTTP 500; gave up after 4 attempts"
    requests = Counter((s.method, s.path) for s in proxy.seen)
    assert set(requests.values()) == {4}  # each request of an attempt, made once an attempt


def test_a_missing_object_is_not_tried_again(proxy: FaultProxy, url: str) -> None:
    with pytest.raises(SourceError) as caught:
        read_table(f"{url}/nowhere.parquet")
    assert str(caught.value) == f"{url}/nowhere.parquet: no such object"
    requests = Counter((s.method, s.path) for s in proxy.seen)
    assert requests and set(requests.values()) == {1}


def test_an_answer_with_a_body_names_its_code(proxy: FaultProxy, url: str) -> None:
    proxy.always = Fault.error(503, "ServiceUnavailable")
    with pytest.raises(
        SourceError, match=r": the store answered HTTP 503 ServiceUnavailable; gave up after 4 attempts$"
    ):
        storage.glob(f"{url}/parts/*/*.parquet")


def test_what_counts_as_transient() -> None:
    class ClientError(Exception):
        def __init__(self, status: int, code: str) -> None:
            self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}

    def raised_from(cause: BaseException) -> Exception:
        try:
            raise cause
        except BaseException as exc:
            try:
                raise OSError("wrapped") from exc
            except OSError as wrapped:
                return wrapped

    transient = [ConnectionResetError(), TimeoutError(), ClientError(500, "InternalError")]
    transient += [ClientError(503, "SlowDown"), ClientError(400, "RequestTimeout"), ClientError(429, "Other")]
    assert all(storage.is_transient(e) and storage.is_transient(raised_from(e)) for e in transient)
    lasting = [
        FileNotFoundError(),
        PermissionError(),
        ClientError(404, "NoSuchKey"),
        ClientError(403, "AccessDenied"),
    ]
    lasting += [ValueError("bad parquet"), raised_from(ClientError(400, "InvalidArgument"))]
    assert not any(storage.is_transient(e) for e in lasting)
