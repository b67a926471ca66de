"""`docs`: the static site of the mirrored tables — generated from a fresh compile (only the
selected tables' pages with a selection), and found for serving — for `mirrorspec docs
generate|serve` and `Project.docs`. The pages are `mirrorspec/docsite/`'s; serving over HTTP
until Ctrl-C stays with the command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from mirrorspec.base.errors import MirrorspecError

if TYPE_CHECKING:
    from mirrorspec.context.project import ProjectContext


@dataclass(frozen=True)
class DocsSite:
    """A written docs site: its folder, the tables it describes and what it found beside the
    plan (the monitoring JSON, run and test results, Delta tables)."""

    path: Path
    tables: int
    status: bool = False
    run_results: bool = False
    test_results: bool = False
    delta_tables: int = 0

    @property
    def index(self) -> Path:
        """The site's index.html."""
        return self.path / "index.html"


def generate(project: "ProjectContext", select: Sequence[str] = (),
             exclude: Sequence[str] = (), state_path: str | None = None) -> DocsSite:
    """Compile the project and write the site to <target>/docs (only the pages of the tables
    `select`/`exclude` choose, when given)."""
    import dataclasses

    from mirrorspec.docsite.build import write_site

    result = project.compile()
    plan = result.plan
    if select or exclude:
        from mirrorspec.project.selection import select_with_warnings

        plan = dataclasses.replace(plan, tables=select_with_warnings(
            plan, tuple(select), tuple(exclude), state_path=state_path,
            console=project.console))
    out, found = write_site(plan, Path(result.target_dir))
    return DocsSite(out, len(plan.tables), **found)


def site_to_serve(project_dir: str | Path, site_dir: str | Path | None = None) -> Path:
    """The site folder to serve: `site_dir`, else <target-path>/docs of the project; a
    MirrorspecError when no site was generated there."""
    from mirrorspec.docsite.build import DOCS_DIR

    site = Path(site_dir) if site_dir else _target_dir(Path(project_dir)) / DOCS_DIR
    if not (site / "index.html").exists():
        raise MirrorspecError(f"{site}: no docs site there",
                              hint="run `mirrorspec docs generate` first")
    return site


def _target_dir(project_dir: Path) -> Path:
    """The project's target folder: `target-path` of mirrorspec_project.yml, else target/.

    Read without rendering (serve needs no profile); a templated target-path falls back."""
    from mirrorspec.load.project import PROJECT_FILE
    from mirrorspec.load.yaml_doc import load_document

    doc: Any = load_document(project_dir / PROJECT_FILE, []).data  # bounded: a YAML bomb is refused
    value = doc.get("target-path") if isinstance(doc, dict) else None
    if not isinstance(value, str) or not value.strip() or "{" in value:
        value = "target"
    return project_dir / Path(value).expanduser()
