"""OpenLineage run events per table (the optional `mirrorspec[openlineage]` extra: the
openlineage-python client, imported only when asked for).

A table that applied files or whose outcome changed gets one run: a START and a COMPLETE (or
FAIL) event. The input dataset is the feed (Kafka topics, the feed folder) or the landing
folder; the output is the Delta table with the schema facet (read with delta-rs, no JVM) and the
outputStatistics facet (rows and files applied). A failure carries the errorMessage facet.
A collector that can't be reached is a warning, once: lineage never stops a run.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from mirrorspec import __version__
from mirrorspec.console import Console
from mirrorspec.observe.samples import TableSample, dataset_for_path, require

PRODUCER = "https://github.com/mirrorspec/mirrorspec"
API_KEY_ENV = "OPENLINEAGE_API_KEY"  # the client's own variable; never printed
DEFAULT_NAMESPACE = "mirrorspec"


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


def _redacted(url: str) -> str:
    """`url` without a user:password@ part (secrets never reach the log)."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}"


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00",
                                                                                       "Z")


class LineageEmitter:
    """Sends each pass's run events to an OpenLineage HTTP collector."""

    def __init__(self, url: str, namespace: str, console: Console, timeout: float = 5.0):
        client_class = _openlineage()
        from openlineage.client.transport.http import (ApiKeyTokenProvider, HttpConfig,
                                                       HttpTransport, TokenProvider)

        api_key = os.environ.get(API_KEY_ENV)
        auth = ApiKeyTokenProvider({"apiKey": api_key}) if api_key else TokenProvider({})
        # no retries: a pass must not wait on a collector that is down (next pass tries again)
        config = HttpConfig(url=url, timeout=timeout, auth=auth,
                            retry={"total": 0, "connect": 0, "read": 0})
        self.client = client_class(transport=HttpTransport(config))
        self.url, self.namespace, self.console = url, namespace, console
        self.warned = False
        self._last: dict[str, tuple] = {}

    def emit_pass(self, samples: Iterable[TableSample],
                  ended: datetime | None = None) -> int:
        """Events for the tables that applied files or changed outcome; returns how many
        events the collector accepted."""
        ended = ended or datetime.now(timezone.utc)
        sent = 0
        for sample in samples:
            outcome = (sample.status, sample.error)
            if not sample.files_applied and self._last.get(sample.table) == outcome:
                continue
            schema = None if sample.status == "NotStarted" else delta_schema(sample.delta_path)
            for event in run_events(sample, self.namespace, ended, schema):
                if not self._send(event):
                    return sent  # the collector is down: the rest of the pass would wait too
                sent += 1
            self._last[sample.table] = outcome
        return sent

    def _send(self, event: Any) -> bool:
        try:
            self.client.emit(event)
            return True
        except Exception as exc:  # noqa: BLE001 - lineage never stops a run
            if not self.warned:
                self.warned = True
                self.console.warning(f"OpenLineage: can't send events to {_redacted(self.url)} "
                                     f"({type(exc).__name__}); the run goes on without lineage "
                                     "(warned once)")
            return False

    def close(self) -> None:
        try:
            self.client.close(timeout=1.0)
        except Exception:  # noqa: BLE001, S110 - closing at exit: nothing left to report to
            pass
