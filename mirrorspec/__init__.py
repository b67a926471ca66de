"""mirrorspec: declarative Fabric open-mirroring pipelines on Spark and Delta Lake."""

__version__ = "0.1.0"

__all__ = ["__version__"]
