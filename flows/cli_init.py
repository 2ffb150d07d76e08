"""`driftline init`: a project folder with what a deployment needs, no checkout of the repository.

It writes the demo's monitor spec, its data (a reference and six census batches, scored by the demo
model's shipped scores: nothing is trained) and a `prefect.yaml` whose monitor deployment reads that
spec by absolute path, into a folder of its own (`driftline-demo` unless named): a folder whose
`data/` holds other files is refused, so the demo's batches never join a user's.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from driftline.flows.cli_common import app, console, fail
from driftline.tasks.tools.files import private_folder, write_private_file

PREFECT_TEMPLATE = resources.files("driftline.flows") / "templates" / "prefect.yaml"
SPEC = "monitor.yaml"
PREFECT_FILE = "prefect.yaml"
DEFAULT_FOLDER = Path("driftline-demo")


def planned_files(folder: Path) -> list[Path]:
    """Every file `init` writes into `folder`."""
    from driftline.data.demo import demo_files

    return [*demo_files(folder), folder / PREFECT_FILE]


def prefect_yaml(spec_path: Path) -> str:
    """The deployments file, its monitor deployment named after the spec and reading it by absolute
    path (a JSON string is a valid YAML scalar, whatever the path holds)."""
    import yaml

    monitor = yaml.safe_load(spec_path.read_text())["name"]
    text = PREFECT_TEMPLATE.read_text()
    return text.replace("@MONITOR@", monitor).replace("@SPEC_PATH@", json.dumps(str(spec_path.resolve())))


def _under(folder: Path, files: list[Path]) -> list[Path]:
    """`files` and the folders between them and `folder` (which itself may be a link)."""
    folders = {parent for path in files for parent in path.parents if folder in parent.parents}
    return sorted(folders) + files


@app.command()
def init(
    folder: Annotated[
        Path, typer.Argument(help="Project folder (created if missing); its data/ must hold no other files.")
    ] = DEFAULT_FOLDER,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that already exist.")] = False,
) -> None:
    """Write an example monitor spec, the demo data and a prefect.yaml into a project folder of their own
    (./driftline-demo by default), in about a second."""
    from driftline.data.demo import DemoFolderError, build_demo_data, check_demo_folder

    planned = planned_files(folder)
    links = [path for path in _under(folder, planned) if path.is_symlink()]
    if links:
        fail(f"{links[0]}: is a symbolic link; init never writes through one (remove it first)")
    try:
        check_demo_folder(folder)
    except DemoFolderError as exc:
        fail(f"{exc}; give init a folder of its own, e.g. driftline init {DEFAULT_FOLDER}")
    existing = [path for path in planned if path.exists()]
    if existing and not force:
        names = ", ".join(str(path) for path in existing)
        fail(f"{names}: already exist{'s' if len(existing) == 1 else ''} (--force overwrites)")
    try:
        private_folder(folder)
        spec_path = build_demo_data(folder)
        write_private_file(folder / PREFECT_FILE, prefect_yaml(spec_path).encode())
    except OSError as exc:
        fail(f"{folder}: cannot write the project ({exc.strerror or exc})")
    console.print(
        f"wrote {spec_path}, its data under {folder / 'data'} and {folder / PREFECT_FILE}\n"
        f"try: driftline run {spec_path}",
        highlight=False,
        soft_wrap=True,
    )
