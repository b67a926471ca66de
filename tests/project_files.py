"""Writing a throw-away mirrorspec project for tests."""

from __future__ import annotations

from pathlib import Path

import yaml


def write(root: Path, files: dict) -> Path:
    """Write `files` (relative name → text, or data dumped as YAML) below `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str)
                        else yaml.safe_dump(content, sort_keys=False))
    return root
