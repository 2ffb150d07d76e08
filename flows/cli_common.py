"""What every `driftline` command shares: the app, consoles, exit codes, and how errors are reported.

An expected error (bad spec, missing file, unknown check) is one line on standard error and exit 2;
with `--json` it is also a JSON object on standard output. Only `--debug` shows a traceback. A run
that neither the history database nor the spool could take exits 4 with its summary on standard
output, so its verdict is not lost.
"""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from driftline.flows.render import make_console, plain

if TYPE_CHECKING:
    from driftline.tasks.run.persist import RunNotKept

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Continuous monitoring of deployed ML models."
)
console = make_console()
errors = make_console(stderr=True)

EXIT_FAILED = 1  # a check reached the spec's `fail_on` severity
EXIT_USAGE = 2  # bad spec, bad arguments, unreadable data
EXIT_INTERNAL = 3  # an unexpected failure (a bug or an environment problem), never a verdict on the model
EXIT_NOT_KEPT = 4  # the run's verdict was reached but neither the database nor the spool could keep it

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON on standard output.")]


@dataclass
class Output:
    """How this invocation reports: JSON on stdout (`--json`), tracebacks (`--debug`)."""

    json: bool = False
    debug: bool = False


OUTPUT = Output()


@app.callback()
def options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an error.")] = False,
) -> None:
    """Continuous monitoring of deployed ML models."""
    OUTPUT.debug = debug


def json_mode(enabled: bool) -> None:
    """Errors of this command are also printed as a JSON object on standard output."""
    OUTPUT.json = enabled


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")


def _report(message: str, kind: str, code: int, **extra: Any) -> NoReturn:
    errors.print(
        f"[bold red]{'internal error' if code == EXIT_INTERNAL else 'error'}:[/] {plain(message)}",
        highlight=False,
        soft_wrap=True,
    )
    if OUTPUT.json:
        print_json({"error": message, "kind": kind, "exit_code": code, **extra})
    raise typer.Exit(code)


def fail(message: str, kind: str = "usage") -> NoReturn:
    """A user mistake (spec, file, argument, data): one line naming it, exit 2."""
    if OUTPUT.debug:
        traceback.print_exc()
    _report(message, kind, EXIT_USAGE)


def not_kept(exc: RunNotKept) -> NoReturn:
    """A run neither stored nor spooled: its summary as JSON on standard output (inside the error
    object with --json), one line naming both failures, exit 4."""
    if not OUTPUT.json:
        print_json(exc.summary)
    _report(str(exc), "not-kept", EXIT_NOT_KEPT, run=exc.summary)


def crash(exc: BaseException) -> NoReturn:
    """An unexpected failure: one line (the traceback with --debug), exit 3; a run that could not be
    kept is `not_kept`."""
    from driftline.tasks.run.persist import RunNotKept

    if isinstance(exc, RunNotKept):
        not_kept(exc)
    if OUTPUT.debug:
        traceback.print_exception(exc)
    else:
        errors.print("(run with --debug for the traceback)")
    _report(f"{type(exc).__name__}: {exc}", "internal", EXIT_INTERNAL)
