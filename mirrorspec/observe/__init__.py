"""Watching mirrorspec from outside: a Prometheus `/metrics` endpoint (`metrics.py`) and
OpenLineage run events (`lineage.py`), both fed after each pass with `TableSample`s
(`samples.py`). Both libraries are optional extras, imported only when asked for; neither
ever fails a pass.

The commands call `start_observers(...)` once and `Observers.after_pass(...)` after each pass.
"""

from __future__ import annotations

from typing import Iterable

from mirrorspec.console import Console
from mirrorspec.observe.samples import TableSample


class Observers:
    """The observers a command asked for (none: `after_pass` does nothing)."""

    def __init__(self, metrics=None, lineage=None):
        self.metrics = metrics
        self.lineage = lineage

    @property
    def active(self) -> bool:
        return self.metrics is not None or self.lineage is not None

    def after_pass(self, samples: Iterable[TableSample], seconds: float) -> None:
        """Hand one pass's samples to each observer."""
        samples = list(samples)
        if self.metrics is not None:
            self.metrics.observe_pass(samples, seconds)
        if self.lineage is not None:
            self.lineage.emit_pass(samples)

    def close(self) -> None:
        for observer in (self.metrics, self.lineage):
            if observer is not None:
                observer.close()


def start_observers(console: Console, metrics_port: int | None = None,
                    metrics_host: str = "0.0.0.0", openlineage_url: str | None = None,
                    openlineage_namespace: str | None = None) -> Observers:
    """Start what was asked for; a missing library is a SetupError naming the extra."""
    metrics = lineage = None
    if openlineage_url:
        from mirrorspec.observe.lineage import DEFAULT_NAMESPACE, LineageEmitter

        lineage = LineageEmitter(openlineage_url, openlineage_namespace or DEFAULT_NAMESPACE,
                                 console)
    if metrics_port is not None:
        from mirrorspec.observe.metrics import MetricsServer

        metrics = MetricsServer(metrics_port, metrics_host, console)
    return Observers(metrics, lineage)
