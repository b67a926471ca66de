"""The release a user installs: the wheel built from this tree, installed into a fresh venv outside
the repository, runs the README's loop (`init`, `compile`, `build` = run + data tests, `docs
generate`, `serve --help`) from a folder of its own, and leaves there only what the docs say.

The venv gets mirrorspec from the wheel alone (`--no-deps`); its dependencies come from the
project's .venv through a `.pth` line, which adds that folder to `sys.path` without processing
the editable install's own `.pth` (so this tree's sources are never importable from it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
# What a project folder holds after init + compile + run + test + docs (docs/getting-started.md)
PROJECT_ENTRIES = {".gitignore", ".mirrorspec", ".vscode", "README.md", "feeds", "landing_zone",
                   "mirrorspec_project.yml", "profiles.yml", "tables", "target", "warehouse"}


def _build_wheel(out: Path) -> Path:
    """A wheel built from a copy of the sources (the build leaves build/ and *.egg-info beside
    them, never in the repository)."""
    source = out / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "mirrorspec", source / "mirrorspec",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                           "--outdir", str(out / "dist"), str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (out / "dist").glob("mirrorspec-*.whl")
    return wheel


def _fresh_venv(root: Path, wheel: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return root / "bin"


@pytest.mark.extra
def test_the_wheel_installs_and_runs_the_loop_outside_the_repository(tmp_path):
    wheel = _build_wheel(tmp_path)
    bin_dir = _fresh_venv(tmp_path / "venv", wheel)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(MIRRORSPEC_LOG_DIR=str(tmp_path / "logs"), COLUMNS="100")

    def ms(*args: str, cwd: Path) -> str:
        done = subprocess.run([str(bin_dir / "mirrorspec"), *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"mirrorspec {' '.join(args)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        return done.stdout

    where = subprocess.run([str(bin_dir / "python"), "-c", "import mirrorspec; print(mirrorspec.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    assert Path(where.strip()).is_relative_to(tmp_path / "venv"), where  # the wheel, not this tree

    version = ms("--version", cwd=work)
    assert wheel.name.split("-")[1] in version and "Spark " in version and "Delta Lake " in version

    ms("init", "shop", cwd=work)
    shop = work / "shop"
    ms("compile", cwd=shop)
    built = ms("build", cwd=shop)  # run (publish + mirror) then the data tests, one Spark start
    assert "2 OK" in built, built
    results = json.loads((shop / "target" / "run_results.json").read_text())
    assert {r["status"] for r in results["results"]} == {"success"}
    assert (shop / "target" / "test_results.json").is_file()
    ms("docs", "generate", cwd=shop)
    assert (shop / "target" / "docs" / "index.html").is_file()  # the site's templates shipped
    assert "--landing-zone" in ms("serve", "--help", cwd=shop)

    # Nothing beside the project in the working folder, nothing undocumented in the project:
    # no spark-warehouse/, metastore_db/ or derby.log from Spark's catalog.
    assert sorted(p.name for p in work.iterdir()) == ["shop"]
    assert sorted(p.name for p in shop.iterdir()) == sorted(PROJECT_ENTRIES)
