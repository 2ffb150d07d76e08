"""The `driftline` command line: run, serve and backfill monitors, list and evaluate checks, read history."""

from driftline.flows import cli_alerts, cli_export, cli_history, cli_init, cli_report, cli_run  # noqa: F401  (each module registers its commands)
from driftline.flows.cli_common import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE, app

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_USAGE", "app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()
