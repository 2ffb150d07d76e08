"""Console alerts under Prefect: a flow with `log_prints` turns prints into log lines, which a quiet log
level hides (as `make demo` sets it); the console destination still shows every alert."""

from __future__ import annotations

import pytest

from driftline.tasks.alerts.delivery import ConsoleSender


@pytest.mark.usefixtures("prefect_server")
def test_a_console_alert_reaches_standard_error_inside_a_flow_that_logs_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from prefect import flow

    @flow(log_prints=True)
    def alerting() -> None:
        ConsoleSender().send({"text": "driftline: m, batch b: *high* drift.numeric on age", "blocks": []})

    alerting()
    assert "driftline: m, batch b: *high* drift.numeric on age" in capsys.readouterr().err
