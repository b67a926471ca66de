"""OpenLineage run events per table (the optional `mirrorspec[openlineage]` extra: the
openlineage-python client, imported only when asked for).

A table that applied files or whose outcome changed gets one run: a START and a COMPLETE (or
FAIL) event. The input dataset is the feed (Kafka topics, the feed folder) or the landing
folder; the output is the Delta table with the schema facet (read with delta-rs, no JVM) and the
outputStatistics facet (rows and files applied). A failure carries the errorMessage facet.

Lineage never stops or slows a run: the pass only queues its events (`delivery.BackgroundSender`,
bounded: a full queue drops events, counted and warned once), one background thread sends them,
each within a total deadline (`delivery.post`: a collector that drips its answer is cut off),
and at exit the queue gets a bounded wait. A collector that can't be reached is a warning,
once; the URL is shown without credentials or query values.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable
from urllib.parse import urljoin

from mirrorspec import __version__
from mirrorspec.base.console import Console
from mirrorspec.security.jdbc_urls import shown_url
from mirrorspec.observe.delivery import BackgroundSender, post
from mirrorspec.observe.samples import TableSample, dataset_for_path, require

PRODUCER = "https://github.com/mirrorspec/mirrorspec"
API_KEY_ENV = "OPENLINEAGE_API_KEY"  # the client's own variable; never printed
DEFAULT_NAMESPACE = "mirrorspec"
ENDPOINT = "api/v1/lineage"  # the collector's path (the openlineage-python HTTP transport's)


def _openlineage() -> Any:
    return require("openlineage.client", "--openlineage-url", "openlineage").OpenLineageClient


def delta_schema(path: str) -> list[tuple[str, str]] | None:
    """(name, type) of the Delta table's columns, read with delta-rs; None if it can't be."""
    from mirrorspec.readers.delta import open_table

    try:
        schema = open_table(path, path).schema()
        # a primitive type's name ("long"), else the complex type's kind ("struct", "array")
        return [(f.name, str(getattr(f.type, "type", f.type))) for f in schema.fields]
    except Exception:  # noqa: BLE001 - a facet left out is better than an event lost
        return None


def run_events(sample: TableSample, namespace: str, ended: datetime,
               schema: list[tuple[str, str]] | None = None) -> list[Any]:
    """The START and COMPLETE/FAIL events of one table's pass (client objects)."""
    from openlineage.client.event_v2 import (InputDataset, Job, OutputDataset, Run, RunEvent,
                                             RunState)
    from openlineage.client.facet_v2 import (error_message_run, job_type_job,
                                             output_statistics_output_dataset,
                                             processing_engine_run, schema_dataset)
    from openlineage.client.uuid import generate_new_uuid

    started = ended - timedelta(seconds=max(sample.seconds, 0.0))
    run_id = str(generate_new_uuid(started))
    job = Job(namespace=namespace, name=sample.table, facets={
        "jobType": job_type_job.JobTypeJobFacet(processingType="BATCH", integration="MIRRORSPEC",
                                                jobType="MIRROR")})
    inputs = [InputDataset(namespace=d.namespace, name=d.name) for d in sample.inputs]
    out = dataset_for_path(sample.delta_path)
    facets: dict[str, Any] = {"outputStatistics":
                              output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                                  rowCount=sample.rows_applied, fileCount=sample.files_applied)}
    if schema is not None:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(fields=[
            schema_dataset.SchemaDatasetFacetFields(name=name, type=kind)
            for name, kind in schema])
    outputs = [OutputDataset(namespace=out.namespace, name=out.name, outputFacets={
        "outputStatistics": facets.pop("outputStatistics")}, facets=facets)]
    start = RunEvent(eventType=RunState.START, eventTime=_iso(started), run=Run(runId=run_id),
                     job=job, inputs=inputs, outputs=[OutputDataset(namespace=out.namespace,
                                                                    name=out.name)],
                     producer=PRODUCER)
    engine = processing_engine_run.ProcessingEngineRunFacet(version=__version__,
                                                            name="mirrorspec")
    run_facets: dict[str, Any] = {"processing_engine": engine}
    if sample.failed:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=sample.error or "the table failed", programmingLanguage="python")
    end = RunEvent(eventType=RunState.FAIL if sample.failed else RunState.COMPLETE,
                   eventTime=_iso(ended), run=Run(runId=run_id, facets=run_facets), job=job,
                   inputs=inputs, outputs=outputs, producer=PRODUCER)
    return [start, end]


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00",
                                                                                       "Z")


class LineageEmitter:
    """Sends each pass's run events to an OpenLineage HTTP collector, off the pass's path."""

    def __init__(self, url: str, namespace: str, console: Console, timeout: float = 5.0,
                 queue_size: int = 1000, flush_seconds: float = 5.0):
        client_class = _openlineage()
        from openlineage.client.serde import Serde
        from openlineage.client.transport.transport import Transport

        headers = {"Content-Type": "application/json"}
        api_key = os.environ.get(API_KEY_ENV)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        endpoint = urljoin(url, ENDPOINT)  # as the client's HttpTransport joins them

        class _DeadlineTransport(Transport):
            """The client's transport: one POST per event, bounded in total time."""

            kind = "mirrorspec-http"

            def emit(self, event: Any) -> Any:
                return post(endpoint, Serde.to_json(event).encode("utf-8"), headers, timeout)

        self.client = client_class(transport=_DeadlineTransport())
        self.url, self.namespace, self.console = url, namespace, console
        self.flush_seconds = flush_seconds
        self.warned = False
        self._last: dict[str, tuple] = {}
        self.sender = BackgroundSender(self.client.emit, queue_size, self._failed, self._dropped)

    def emit_pass(self, samples: Iterable[TableSample],
                  ended: datetime | None = None) -> int:
        """Queue the events of the tables that applied files or changed outcome; returns how
        many were queued (never waits for the collector)."""
        ended = ended or datetime.now(timezone.utc)
        queued = 0
        for sample in samples:
            outcome = (sample.status, sample.error)
            if not sample.files_applied and self._last.get(sample.table) == outcome:
                continue
            schema = None if sample.status == "NotStarted" else delta_schema(sample.delta_path)
            for event in run_events(sample, self.namespace, ended, schema):
                queued += self.sender.put(event)
            self._last[sample.table] = outcome
        return queued

    def flush(self, seconds: float | None = None) -> bool:
        """Wait (at most `seconds`, default flush_seconds) until the queued events are sent."""
        return self.sender.flush(self.flush_seconds if seconds is None else seconds)

    def _failed(self, exc: BaseException) -> None:
        if not self.warned:
            self.warned = True
            self.console.warning(f"OpenLineage: can't send events to {shown_url(self.url)} "
                                 f"({type(exc).__name__}); the run goes on without lineage "
                                 "(warned once)")

    def _dropped(self, count: int) -> None:
        self.console.warning(f"OpenLineage: the collector at {shown_url(self.url)} takes "
                             "events slower than the passes make them; events are dropped "
                             "while its queue is full (counted at exit; warned once)")

    def close(self) -> None:
        """Wait at most flush_seconds for the queued events, then give up on the rest."""
        left = self.sender.close(self.flush_seconds)
        dropped = self.sender.dropped
        if left or dropped:
            self.console.warning(f"OpenLineage: {left + dropped} event(s) not sent to "
                                 f"{shown_url(self.url)} ({dropped} dropped from a full "
                                 f"queue, {left} still queued at exit)")
