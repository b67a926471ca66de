"""mirrorspec: declarative Fabric open-mirroring pipelines on Spark and Delta Lake.

The package is built in floors of rooms (docs/architecture.md, held by `make lint`): a room
imports only the floors below it; only `commands` cross the JVM line into `spark`. This top
floor holds only the entry points: `cli`, `api` and `__main__`."""

from importlib.metadata import PackageNotFoundError, version

try:
    # The version lives once, in pyproject.toml; the installed metadata carries it.
    __version__ = version("mirrorspec")
except PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
