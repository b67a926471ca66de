"""Find a project's files, then load, render and validate each one (stages load → render → validate).

The result is a set of schema-valid documents; every problem found on the way is collected and
raised together as one ProjectError.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from mirrorspec.base.errors import Location, MirrorspecError, ProjectError
from mirrorspec.base.origin import origin_of
from mirrorspec.load.render import Renderer
from mirrorspec.load.secret_names import NOT_SECRET_KEY
from mirrorspec.load.validate import validate_document
from mirrorspec.load.yaml_doc import Document, display_name, load_document

PROJECT_FILE = "mirrorspec_project.yml"
PROFILES_FILE = "profiles.yml"
DEFAULT_TABLE_PATHS = ("tables",)
TABLE_SUFFIXES = (".yml", ".yaml")
PROFILES_DIR_ENV = "MIRRORSPEC_PROFILES_DIR"
PROJECT_DIR_ENV = "MIRRORSPEC_PROJECT_DIR"


@dataclass
class LoadedProject:
    """The schema-valid documents of a project."""

    project_dir: Path
    project: Document
    tables: list[Document]
    profiles: Document | None
    profiles_explicit: bool  # found via --profiles-dir or in the project dir (not ~/.mirrorspec)
    variables: dict[str, Any] = field(default_factory=dict)
    problems: list[MirrorspecError] = field(default_factory=list)  # found so far
    project_ok: bool = True  # the project file is schema-valid
    profiles_ok: bool = True
    bad_tables: set[tuple[str, int]] = field(default_factory=set)  # (file, index); -1: whole file

    def raise_problems(self) -> None:
        """Raise the problems found so far, if any."""
        if self.problems:
            raise ProjectError(self.problems[0].message, problems=self.problems)


def parse_vars(text: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """`--vars '{k: v}'` (YAML or JSON) → dict."""
    if text is None or text == "":
        return {}
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MirrorspecError(f"--vars is not valid YAML: {exc}",
                              hint="pass a mapping, e.g. --vars '{env: prod, days: 3}'") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MirrorspecError(f"--vars must be a mapping, got {type(value).__name__}",
                              hint="pass a mapping, e.g. --vars '{env: prod, days: 3}'")
    return value


def find_project_file(project_dir: Path, origin: str = "--project-dir") -> Path:
    """`mirrorspec_project.yml` (or .yaml) of `project_dir`, or a ProjectError saying what to do
    and where the folder came from (`origin`: `--project-dir`, `MIRRORSPEC_PROJECT_DIR`, …)."""
    for name in (PROJECT_FILE, PROJECT_FILE[:-4] + ".yaml"):
        candidate = project_dir / name
        if candidate.is_file():
            return candidate
    raise ProjectError(f"no {PROJECT_FILE} in {display_name(project_dir)} ({origin})",
                       hint="run mirrorspec in a project folder, pass --project-dir (or set "
                            f"{PROJECT_DIR_ENV}), or create one with `mirrorspec init NAME`")


def profiles_origin(profiles_dir: str | os.PathLike[str] | None) -> str | None:
    """Where the profiles folder comes from: the origin a `Given` value carries (`--profiles-dir`,
    `MIRRORSPEC_PROFILES_DIR`, `Project(profiles_dir=…)`), `profiles_dir` for a plain value, the
    environment variable when only it is set; None: the project folder, then ~/.mirrorspec."""
    if profiles_dir:
        return origin_of(profiles_dir, "profiles_dir")
    return PROFILES_DIR_ENV if os.environ.get(PROFILES_DIR_ENV) else None


def find_profiles(project_dir: Path, profiles_dir: str | os.PathLike[str] | None) -> tuple[Path | None, bool]:
    """profiles.yml: --profiles-dir (or $MIRRORSPEC_PROFILES_DIR), else the project dir, else
    ~/.mirrorspec; (None, False) when there is none (local defaults apply). A folder given
    without a profiles.yml is an error naming where the folder came from."""
    explicit = profiles_dir or os.environ.get(PROFILES_DIR_ENV)
    if explicit:
        path = Path(explicit).expanduser() / PROFILES_FILE
        if not path.is_file():
            origin = profiles_origin(profiles_dir) or PROFILES_DIR_ENV
            if origin == PROFILES_DIR_ENV:
                fix = f"set {PROFILES_DIR_ENV} to the folder holding profiles.yml, or unset it"
            elif origin.startswith("--"):
                fix = f"point {origin} (or {PROFILES_DIR_ENV}) at the folder holding profiles.yml"
            else:
                fix = f"give {origin} the folder holding profiles.yml"
            raise ProjectError(f"no {PROFILES_FILE} in {display_name(Path(explicit))} ({origin})",
                               hint=fix)
        return path, True
    local = project_dir / PROFILES_FILE
    if local.is_file():
        return local, True
    home = Path.home() / ".mirrorspec" / PROFILES_FILE
    if home.is_file():
        return home, False
    return None, False


def find_table_files(project_dir: Path, project: Document,
                     problems: list[MirrorspecError]) -> list[Path]:
    """Every `*.yml`/`*.yaml` under the table paths, sorted; hidden files are skipped."""
    data = project.data if isinstance(project.data, dict) else {}
    configured = "table-paths" in data
    entries = data.get("table-paths") if configured else list(DEFAULT_TABLE_PATHS)
    files: list[Path] = []
    seen: set[Path] = set()
    for index, entry in enumerate(entries or []):
        folder = (project_dir / str(entry)).resolve()
        if not folder.is_dir():
            if configured:
                problems.append(project.problem(
                    ("table-paths", index), f"table path '{entry}' is not a folder of the project"))
            continue
        found = []
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            for name in names:
                if name.endswith(TABLE_SUFFIXES) and not name.startswith((".", "_")):
                    found.append(Path(root) / name)
        for path in sorted(found):
            if path not in seen:
                seen.add(path)
                files.append(path)
    return files


def load_files(project_dir: str | os.PathLike[str], variables: Mapping[str, Any] | None = None,
               profiles_dir: str | os.PathLike[str] | None = None,
               environ: Mapping[str, str] | None = None) -> LoadedProject:
    """Load, render and validate every file of the project.

    A project file that can't be parsed raises at once; every other problem is collected in
    `LoadedProject.problems` so the model stage can add its own before one ProjectError is raised.
    """
    root = Path(project_dir).expanduser().resolve()
    origin = origin_of(project_dir, "project_dir")
    if not root.is_dir():
        raise ProjectError(f"project folder {display_name(Path(project_dir))} does not exist "
                           f"({origin})",
                           hint=f"pass --project-dir (or set {PROJECT_DIR_ENV}) pointing at the "
                                "folder with mirrorspec_project.yml")
    problems: list[MirrorspecError] = []
    project_path = find_project_file(root, origin)
    project = load_document(project_path, problems)
    if problems:
        raise ProjectError(problems[0].message, problems=problems)

    cli_vars = dict(variables or {})
    allowed = project.data.get(NOT_SECRET_KEY) if isinstance(project.data, dict) else None
    renderer = Renderer(cli_vars, environ, [name for name in allowed or () if isinstance(name, str)]
                        if isinstance(allowed, list) else ())
    renderer.render_document(project, problems, only=(("vars",),))
    data = project.data if isinstance(project.data, dict) else {}
    project_vars: dict[str, Any] = data["vars"] if isinstance(data.get("vars"), dict) else {}
    renderer.variables = {**project_vars, **cli_vars}
    renderer.render_document(project, problems, skip=(("vars",),))
    if project.data is None:
        problems.append(MirrorspecError("the project file is empty; it needs at least `name:`",
                                        Location(project.file, 1, 1)))
    else:
        problems.extend(validate_document(project, "project"))
    project_ok = not problems

    tables = []
    bad_tables: set[tuple[str, int]] = set()
    for path in find_table_files(root, project, problems):
        start = len(problems)
        doc = load_document(path, problems)
        if doc.data is None:
            continue  # an empty or unparsable table file declares nothing more
        renderer.render_document(doc, problems)
        problems.extend(validate_document(doc, "tables"))
        for problem in problems[start:]:
            bad_tables.add((doc.file, _table_index(problem)))
        tables.append(doc)

    profiles_path, explicit = find_profiles(root, profiles_dir)
    profiles = None
    start = len(problems)
    if profiles_path is not None:
        profiles = load_document(profiles_path, problems)
        if profiles.data is None:
            profiles.data = {}
        renderer.render_document(profiles, problems)
        if len(problems) == start:
            problems.extend(validate_document(profiles, "profiles"))
    return LoadedProject(root, project, tables, profiles, explicit, dict(renderer.variables),
                         problems, project_ok, len(problems) == start, bad_tables)


def _table_index(problem: MirrorspecError) -> int:
    """The index of the table a problem is about (-1: the whole file)."""
    key_path = problem.location.key_path if problem.location else None
    if key_path and key_path.startswith("tables["):
        return int(key_path[len("tables["):key_path.index("]")])
    return -1
