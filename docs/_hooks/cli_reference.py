"""mkdocs hook: the command-line reference page, rendered at build time from the typer app itself.

Each command gets its help text, its usage line and a table of its arguments and options as
`driftline COMMAND --help` states them, so the page cannot drift from the code.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.structure.files import File, Files

PAGE = "reference/cli.md"
ARGUMENT = re.compile(r"\{(\w+)\}")  # typer writes an argument `{spec_path}` in a usage line


def command_section(name: str, command: Any, context_type: type) -> str:
    """One command: heading, help, usage and a table of its parameters."""
    context = context_type(command, info_name=f"driftline {name}")
    pieces = [
        ARGUMENT.sub(lambda m: m.group(1).upper(), piece) for piece in command.collect_usage_pieces(context)
    ]
    usage = " ".join(["driftline", name, *pieces])
    rows = []
    for param in command.params:
        record = param.get_help_record(context) if not getattr(param, "hidden", False) else None
        if record is None and param.param_type_name == "argument":
            record = (param.make_metavar(context), getattr(param, "help", None) or "")
        if record is not None:
            names, text = record
            rows.append(f"| `{names}` | {cell(text)} |")
    table = ["| argument or option | meaning |", "| --- | --- |", *rows] if rows else []
    help_text = (command.help or "").strip()
    return "\n".join([f"## `driftline {name}`", "", help_text, "", "```", usage, "```", "", *table, ""])


def cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The whole page: the group's options, then every command in alphabetical order."""
    import typer

    from driftline.flows.cli import app

    group = typer.main.get_command(app)
    context_type = type(group.make_context("driftline", [], resilient_parsing=True))
    sections = [command_section(name, group.commands[name], context_type) for name in sorted(group.commands)]
    intro = [
        "# Command line",
        "",
        "Generated from the `driftline` command itself at build time (`driftline COMMAND --help` prints",
        "the same). Exit codes, `--json` and the engines are explained in [Running](../running.md).",
        "",
        "```",
        "driftline [--debug] COMMAND [ARGS]...",
        "```",
        "",
        "`--debug` shows the traceback of an error. `python -m driftline` is the same command.",
        "",
    ]
    return "\n".join(intro + sections)


def on_files(files: Files, config: Any) -> Files:
    """Add the generated page to the site."""
    files.append(File.generated(config, PAGE, content=render()))
    return files
