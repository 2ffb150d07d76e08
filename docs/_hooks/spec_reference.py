"""mkdocs hook: the spec reference page, generated at build time from the pydantic models of a monitor spec.

It walks `MonitorSpec` and every model its fields use, and writes one table per section of the YAML
file: each key with its type (and bounds), its default and its description, so the page says what
`load_spec` accepts and nothing else.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

from mkdocs.structure.files import File, Files
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

PAGE = "reference/spec.md"
BOUNDS = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤", "min_length": "length ≥", "max_length": "length ≤"}


def type_name(annotation: Any) -> str:
    """A type as a YAML author reads it: `int`, `list[str]`, `"process" | "thread"`, a section's name."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join("null" if arg is type(None) else type_name(arg) for arg in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(type_name(arg) for arg in args)}]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{anchor(annotation)})"
    if annotation is SecretStr:
        return "str (secret)"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def anchor(model: type[BaseModel]) -> str:
    """The heading id of a model's section."""
    return model.__name__.lower()


def bounds(field: FieldInfo) -> str:
    """The field's numeric and length bounds, and its pattern, in words."""
    found = []
    for item in field.metadata:
        for attribute, symbol in BOUNDS.items():
            value = getattr(item, attribute, None)
            if value is not None:
                found.append(f"{symbol} {value}")
        pattern = getattr(item, "pattern", None)
        if pattern:
            found.append(f"matches `{pattern}`")
    return f" ({', '.join(found)})" if found else ""


def default(field: FieldInfo) -> str:
    """The value a key takes when the spec leaves it out."""
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "its keys' defaults"
    return f"`{json.dumps(value, default=str)}`"


def cell(text: str) -> str:
    """Text that stays in one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The models a field's type refers to, at any depth (a list of rules, an optional section)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in nested_models(arg)]


def sections(
    root: type[BaseModel], at: str = "", paths: dict[type[BaseModel], list[str]] | None = None
) -> dict[type[BaseModel], list[str]]:
    """Every model reachable from the root (found at key path `at`) with the key paths that reach it, in
    reading order, added to `paths` (the spec's models nest without cycles)."""
    paths = {} if paths is None else paths
    queue: list[tuple[str, type[BaseModel]]] = [(at, root)]
    while queue:
        path, model = queue.pop(0)
        paths.setdefault(model, []).append(path)
        for key, field in model.model_fields.items():
            if not field.exclude:
                queue.extend(
                    (f"{path}.{key}".lstrip("."), child) for child in nested_models(field.annotation)
                )
    return paths


def row(key: str, field: FieldInfo) -> str:
    """One key of a section: its name as the YAML spells it (`from`, not `sender`), type with bounds,
    default and description."""
    kind = f"{type_name(field.annotation)}{bounds(field)}"
    return f"| `{field.alias or key}` | {kind} | {default(field)} | {cell(field.description or '')} |"


def every_section() -> dict[type[BaseModel], list[str]]:
    """The sections of `MonitorSpec`, then the entry model of every built-in alert channel kind (an
    `alerts.channels` entry is validated by the model its `kind` registers, which the spec's types
    cannot show)."""
    from driftline.tasks.alerts.channels.registry import BUILT_IN, channel_class
    from driftline.tasks.config.spec import MonitorSpec

    found = sections(MonitorSpec)
    for kind in BUILT_IN:
        sections(channel_class(kind).config_model, f"alerts.channels[kind: {kind}]", found)
    return found


def section(paths: list[str], model: type[BaseModel]) -> str:
    """One model as a heading, its docstring and a table of its keys."""
    doc = " ".join((model.__doc__ or "").split())
    rows = [row(key, field) for key, field in model.model_fields.items() if not field.exclude]
    title = ", ".join(f"`{path}`" for path in paths) if paths != [""] else "the top level"
    return "\n".join(
        [
            f"## {title} {{#{anchor(model)}}}",
            "",
            f"{doc} (`{model.__name__}`)",
            "",
            "| key | type | default | description |",
            "| --- | --- | --- | --- |",
            *rows,
            "",
        ]
    )


def render() -> str:
    """The whole page, from `MonitorSpec` down."""
    intro = [
        "# Spec reference",
        "",
        "Every key of a monitor spec, generated at build time from the pydantic models `load_spec`",
        "validates against. A key not listed here is an error naming it. How the keys work together:",
        "[A monitor in one YAML file](../spec.md).",
        "",
    ]
    return "\n".join(intro + [section(paths, model) for model, paths in every_section().items()])


def on_files(files: Files, config: Any) -> Files:
    """Add the generated page to the site."""
    files.append(File.generated(config, PAGE, content=render()))
    return files
