"""`mirrorspec init NAME`: a new project folder that compiles as is.

The JSON Schemas are copied into `<project>/.mirrorspec/schemas/` and every YAML file starts with
`# yaml-language-server: $schema=<relative path>` to them, so editors check and complete the files
offline and the schemas travel with the project (commit the folder). `.vscode/settings.json` maps
the same schemas by glob, which also covers table files added later in sub-folders.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.load.validate import SCHEMA_FILES, schema_text

SCHEMA_FOLDER = ".mirrorspec/schemas"
SCHEMA_HINT = f"{SCHEMA_FOLDER}/*.schema.json (relative paths)"
PLACEHOLDER = "__PROJECT_NAME__"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
# template file name → name in the project (package data can't ship dot-files reliably)
_RENAMES = {"gitignore": ".gitignore", "vscode": ".vscode"}


def scaffold_project(destination: str | Path, force: bool = False) -> Path:
    """Create the project folder `destination` (its last part is the project name)."""
    folder = Path(destination).expanduser()
    name = folder.resolve().name
    if not _NAME.match(name):
        raise MirrorspecError(f"'{name}' is not a usable project name",
                              hint="use letters, digits, '_', '.' and '-', e.g. sales_mirror")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())) and not force:
        raise MirrorspecError(f"{folder} already exists and is not empty",
                              hint="choose another name, or pass --force to write into it")
    templates = resources.files("mirrorspec").joinpath("templates").joinpath("project")
    for relative, text in sorted(_template_files(templates, "").items()):
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace(PLACEHOLDER, name), encoding="utf-8")
    schemas = folder / SCHEMA_FOLDER
    schemas.mkdir(parents=True, exist_ok=True)
    for kind, file_name in SCHEMA_FILES.items():
        (schemas / file_name).write_text(schema_text(kind), encoding="utf-8")
    return folder


def _template_files(node, prefix: str) -> dict[str, str]:
    files = {}
    for child in node.iterdir():
        if child.name.startswith("__pycache__"):
            continue
        name = _RENAMES.get(child.name, child.name)
        relative = f"{prefix}{name}"
        if child.is_dir():
            files.update(_template_files(child, relative + "/"))
        else:
            files[relative] = child.read_text(encoding="utf-8")
    return files
