"""The generated reference pages of the documentation site (docs/_hooks/) list what the code accepts:
every spec key pydantic's own JSON schema lists, and every command and option of the `driftline` app."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
import typer

from driftline.flows.cli import app
from driftline.tasks.alerts.channels.registry import BUILT_IN, channel_class
from driftline.tasks.config.spec import MonitorSpec

pytest.importorskip("mkdocs", reason="the docs extra is not installed")
HOOKS = Path(__file__).resolve().parents[2] / "docs" / "_hooks"


def hook(name: str) -> ModuleType:
    """A hook module loaded from its file, as mkdocs loads it."""
    spec = importlib.util.spec_from_file_location(name, HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page_rows(page: str) -> dict[str, dict[str, list[str]]]:
    """Each section's anchor with its table rows, keyed by the key in the first cell."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in page.splitlines():
        heading = re.match(r"^## .* \{#(\w+)\}$", line)
        if heading:
            current = sections.setdefault(heading.group(1), {})
        row = re.match(r"^\| `(\w+)` \| (.*) \|$", line)
        if row and current is not None:
            current[row.group(1)] = [cell.strip() for cell in re.split(r"(?<!\\)\|", row.group(2))]
    return sections


def test_the_spec_page_lists_every_key_of_pydantics_json_schema() -> None:
    schema = MonitorSpec.model_json_schema(mode="serialization")  # leaves out what load_spec sets itself
    expected = {"monitorspec": set(schema["properties"])} | {
        name.lower(): set(definition["properties"]) for name, definition in schema["$defs"].items()
    }
    for kind in BUILT_IN:  # an `alerts.channels` entry is validated by its kind's model, not in the schema
        model = channel_class(kind).config_model
        expected[model.__name__.lower()] = set(model.model_json_schema(mode="serialization")["properties"])
    sections = page_rows(hook("spec_reference").render())
    assert {anchor: set(rows) for anchor, rows in sections.items()} == expected
    assert "from" in sections["emailconfig"] and "sender" not in sections["emailconfig"]


@pytest.mark.parametrize(
    "anchor",
    ["source", "sqlsource", "alertconfig", "channelconfig", "route", "alertrule", "sustainedconfig"]
    + [f"{channel_class(kind).config_model.__name__.lower()}" for kind in BUILT_IN],
)
def test_every_key_of_the_sources_and_alerts_is_described(anchor: str) -> None:
    rows = page_rows(hook("spec_reference").render())[anchor]
    assert rows and not [key for key, cells in rows.items() if not cells[2]]


def test_the_channel_kinds_have_sections_that_name_their_entry() -> None:
    page = hook("spec_reference").render()
    assert "## `alerts.channels[kind: pagerduty]` {#pagerdutyconfig}" in page
    assert "## `alerts.slack`, `alerts.channels[kind: slack]` {#slackconfig}" in page
    assert page_rows(page)["sqlsource"]["query"][1] == "required"


def test_the_spec_page_states_defaults_bounds_and_links_that_resolve() -> None:
    page = hook("spec_reference").render()
    sections = page_rows(page)
    assert sections["executionspec"]["timeout_s"][:2] == ["float (> 0)", "`600.0`"]
    assert sections["monitorspec"]["checks"][1] == "required"
    assert sections["monitorspec"]["labels"][0] == "[Source](#source) \\| null"
    assert set(re.findall(r"\]\(#(\w+)\)", page)) <= set(sections)


def test_the_cli_page_has_every_command_and_option() -> None:
    page = hook("cli_reference").render()
    group = typer.main.get_command(app)
    assert re.findall(r"^## `driftline ([\w-]+)`$", page, flags=re.M) == sorted(group.commands)
    run = page.split("## `driftline run`")[1].split("\n## ")[0]
    assert "driftline run [OPTIONS] SPEC_PATH" in run
    for option in ("--batch", "--engine", "--json", "--partitioned", "--dask-address"):
        assert option in run
