"""Waiting for a temporary Prefect server: as long as it makes progress (uses CPU), never for one that
hangs, whatever the machine's load."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from driftline.flows.temporary_server import Progress, cpu_seconds


def test_cpu_seconds_read_from_proc_match_the_process_own_clock() -> None:
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    times = os.times()
    assert cpu_seconds(os.getpid()) == pytest.approx(times.user + times.system, abs=0.05)
    assert cpu_seconds(2**22 + 12345) is None  # no such process


def test_a_process_that_uses_no_cpu_is_given_up_once_stalled() -> None:
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.5)  # let the interpreter finish starting: its start-up is progress
        progress = Progress(idle.pid, stall_s=1.0, cap_s=60.0)
        started = time.monotonic()
        while (why := progress.stalled()) is None:
            assert time.monotonic() - started < 10, "an idle process was waited for past its stall limit"
            time.sleep(0.1)
        assert "made no progress for 1 s" in why
    finally:
        idle.kill()
        idle.wait()


def test_a_busy_process_is_waited_for_until_the_cap() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        progress = Progress(busy.pid, stall_s=1.0, cap_s=2.5)
        time.sleep(1.5)
        assert progress.stalled() is None  # past the stall limit, but it used CPU meanwhile
        time.sleep(1.2)
        assert "did not answer within" in (progress.stalled() or "")
    finally:
        busy.kill()
        busy.wait()
