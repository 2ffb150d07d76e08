"""The `driftline` command line: run, serve and backfill monitors, list and evaluate checks, read history."""

import atexit
import os
import sys
import threading
from typing import NoReturn

from driftline.flows import cli_alerts, cli_export, cli_history, cli_init, cli_report, cli_run, cli_site  # noqa: F401  (each module registers its commands)
from driftline.flows.cli_common import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE, app

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_USAGE", "app", "exit_code", "leave", "main"]

# The interpreter's exit status when standard output cannot be flushed at exit (a closed pipe).
EXIT_UNFLUSHED = 120


def exit_code(exit: SystemExit) -> int:
    """The status a `SystemExit` stands for, as the interpreter maps it: None is 0, a message is 1
    (printed on standard error)."""
    if exit.code is None:
        return 0
    if isinstance(exit.code, int):
        return exit.code
    print(exit.code, file=sys.stderr)
    return 1


def leave(code: int) -> NoReturn:
    """End the process as the interpreter would (other threads joined, exit handlers run, output
    flushed) without tearing down every loaded module one by one, which takes a second once pandas,
    scikit-learn and SQLAlchemy are loaded. The history database is closed by then: every store
    block disposes of its engine when it ends."""
    threading._shutdown()  # type: ignore[attr-defined]  # joins non-daemon threads, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or EXIT_UNFLUSHED
    os._exit(code)


def main() -> NoReturn:
    """Console-script entry point."""
    try:
        app()
    except SystemExit as exit:
        leave(exit_code(exit))
    leave(0)
