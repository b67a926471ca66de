"""Checks a command makes on its paths before it starts Spark (pure Python): a missing local
folder is said at once, not after a JVM start. URIs (s3a://, abfss://) are left to the
filesystem they need."""

from __future__ import annotations

import os

from mirrorspec.base.errors import LandingZoneError, UsageError


def local_path(path: str | os.PathLike[str]) -> str | None:
    """The local path of `path` (`file:` URIs included), or None for a remote URI."""
    text = os.fspath(path)
    if text.startswith("file:"):
        return text[len("file:"):].replace("///", "/", 1) if text.startswith("file:///") \
            else text[len("file:"):]
    return None if "://" in text else text


def require_landing_zone(path: str | os.PathLike[str], option: str = "--landing-zone") -> None:
    """LandingZoneError (code LandingZoneNotFound) when a local landing zone is not a folder."""
    local = local_path(path)
    if local is not None and not os.path.isdir(local):
        raise LandingZoneError("the landing zone folder does not exist", file=os.fspath(path),
                               code="LandingZoneNotFound",
                               hint=f"check {option}; nothing was started, dropped or applied")


def require_folder(path: str | os.PathLike[str], option: str, what: str) -> None:
    """UsageError when a local folder an option names is not there."""
    local = local_path(path)
    if local is not None and not os.path.isdir(local):
        raise UsageError(f"{option} {os.fspath(path)}: no such folder ({what})",
                         hint=f"check {option}")
