"""An S3-protocol server on 127.0.0.1 (moto's server mode) for the object-storage tests, with the
environment pointing boto and s3fs at it, and a fresh bucket for each test."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

moto_server = pytest.importorskip("moto.server", reason="the object-storage tests need moto[server]")
pytest.importorskip("s3fs", reason="the object-storage tests need driftline[s3]")

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing-key",
    "AWS_SECRET_ACCESS_KEY": "testing-secret",
    "AWS_SESSION_TOKEN": "testing-token",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_MAX_ATTEMPTS": "1",
}


def free_port() -> int:
    """A port nothing listens on at the moment."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The server's URL, with AWS_ENDPOINT_URL and test credentials in the environment for the session."""
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {key: os.environ.get(key) for key in [*S3_ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update(S3_ENV, AWS_ENDPOINT_URL=endpoint)
    try:
        yield endpoint
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    """A new, empty bucket's name."""
    import boto3

    name = f"driftline-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3(s3_endpoint: str) -> Any:
    """A boto3 S3 client on the server, to write objects the way another system would."""
    import boto3

    return boto3.client("s3", endpoint_url=s3_endpoint)
