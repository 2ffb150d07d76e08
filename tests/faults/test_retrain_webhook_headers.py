"""A retraining webhook's `Idempotency-Key` carries the batch id: an HTTP header is Latin-1, a batch id
any script, so the key is sent percent-encoded (RFC 3986) and the receiver reads it back with one
unquote. Before, every run of a batch such as `партия-3` failed its webhook and never retrained."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest

from driftline.tasks.config.spec import RetrainSpec
from driftline.tasks.retraining.actions import RetrainRequest, trigger_plain
from tests.alerts.slack_server import SlackStandIn


def _request(batch_id: str) -> RetrainRequest:
    return RetrainRequest("churn", batch_id, "0123abcd", "high", [], None)


@pytest.mark.parametrize("batch_id", ["партия-3", "第1批", "2024-05-01 (copy)"])
def test_the_webhook_is_called_whatever_the_script_of_the_batch_id(tmp_path: Path, batch_id: str) -> None:
    request = _request(batch_id)
    with SlackStandIn() as receiver:
        outcome = trigger_plain(RetrainSpec(webhook_url=receiver.webhook_url), request, tmp_path)
        assert outcome == {"webhook": {"status": 200}}
        [received] = receiver.requests
    sent = received.headers["idempotency-key"]
    assert sent.isascii() and unquote(sent) == request.key == f"driftline:churn:{batch_id}:0123abcd"
    assert received.body["batch_id"] == batch_id


def test_a_plain_key_is_sent_as_it_is_and_controls_cannot_start_a_header() -> None:
    from driftline.tasks.tools.safe_text import header_value

    assert header_value("driftline:churn:2024-05-01:0123abcd") == "driftline:churn:2024-05-01:0123abcd"
    assert header_value("a\r\nX-Injected: 1%") == "a%0D%0AX-Injected: 1%25"
