"""`mirrorspec clean`: delete from the target folder only what mirrorspec wrote there.

That is compile's artifacts (plan.json, the `_metadata.json` / `_partnerEvents.json` copies under
landing_zone/, each only while its text is what compile wrote), the results `run`, `test` and
`--watch` leave (run_results.json, test_results.json, heartbeat.json) and the docs site
(docs/). The target is checked first with compile's own rule (`artifacts.own_plan`: another
project's plan.json stops it), and a target holding the project or any of its sources (table
YAML, feed folders, profiles, the landing zone, the warehouse, the publisher state) is refused
whole: nothing is deleted.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from mirrorspec.openmirroring import mirroring
from mirrorspec.compile.artifacts import LANDING_FOLDER, PLAN_FILE, previous_files, read_text
from mirrorspec.base.errors import MirrorspecError

# what `run`/`build` (run_results), `test` (test_results) and `--watch` (heartbeat) write
RESULT_FILES = ("run_results.json", "test_results.json", "heartbeat.json")
DOCS_SITE = "docs"  # docsite.build.DOCS_DIR: written (and replaced) whole by `docs generate`


@dataclass(frozen=True)
class Cleaned:
    """What `clean_target` deleted, and the files it left because mirrorspec didn't write them."""

    deleted: tuple[Path, ...]
    left: tuple[Path, ...]


def clean_target(target: Path, project_name: str, files: dict[str, str],
                 sources: Iterable[tuple[str, str]]) -> Cleaned:
    """Delete what mirrorspec wrote in `target` (see the module). `files`: what compile writes
    now (relative path → text); `sources`: (what, local path or URI) that must not be inside."""
    target = target.resolve()
    _refuse_sources(target, sources)
    if not target.is_dir():
        return Cleaned((), ())
    previous = previous_files(target, project_name, files)  # compile's check, shared
    written = {relative: [text] for relative, text in files.items()}
    for relative, obj in previous.items():
        written.setdefault(relative, []).append(mirroring.dumps_json(obj))
    deleted: list[Path] = []
    for relative, texts in sorted(written.items()):
        path = target / relative
        if _is_file(path) and _inside(path, target) and read_text(path) in texts:
            deleted.append(_unlink(path))
    for name in RESULT_FILES:
        if _is_json_object(target / name):  # _is_file: not a link
            deleted.append(_unlink(target / name))
    site = target / DOCS_SITE
    if _is_docs_site(site):
        shutil.rmtree(site)
        deleted.append(site)
    if _is_file(target / PLAN_FILE):  # last: it says what compile wrote
        deleted.append(_unlink(target / PLAN_FILE))
    _remove_empty_folders(target / LANDING_FOLDER)
    left = tuple(sorted(p for p in target.rglob("*") if not p.is_dir()))
    if not left and not any(target.iterdir()):
        target.rmdir()
    return Cleaned(tuple(deleted), left)


def _refuse_sources(target: Path, sources: Iterable[tuple[str, str]]) -> None:
    for what, where in sources:
        local = where[len("file:"):] if where.startswith("file:") else where
        if not local or "://" in local:
            continue
        path = Path(os.path.realpath(local))
        if path == target or target in path.parents:
            raise MirrorspecError(f"the {what} {where} is inside the target folder {target}; "
                                  "the target folder is not deleted",
                                  hint="point target-path at a folder of its own "
                                       "(mirrorspec_project.yml)")


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _inside(path: Path, target: Path) -> bool:
    """Whether `path` is in `target` without a link on the way (never delete through one)."""
    return target in path.resolve().parents


def _is_json_object(path: Path) -> bool:
    if not _is_file(path):
        return False
    try:
        return isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


def _is_docs_site(site: Path) -> bool:
    if site.is_symlink() or not (site / "index.html").is_file():
        return False
    try:
        catalog = json.loads((site / "catalog.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(catalog, dict) and "tables" in catalog


def _unlink(path: Path) -> Path:
    try:
        path.unlink()
    except OSError as exc:
        raise MirrorspecError(f"cannot delete {path}: {exc.strerror}",
                              hint="check the permissions of the target folder") from None
    return path


def _remove_empty_folders(root: Path) -> None:
    if not root.is_dir() or root.is_symlink():
        return
    for folder, _dirs, _files in sorted(os.walk(root), key=lambda w: -len(w[0])):
        try:
            os.rmdir(folder)  # only succeeds when empty
        except OSError:
            continue
