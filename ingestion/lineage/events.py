"""The OpenLineage run events of an ingest, built from what the service already records.

One run per ingest (its id derived from the ingest id, so every part of the service and
`wap lineage` name the same run), one job per table in the stack's namespace:

- START when the job run is submitted: the uploaded object versions in, the table out
  (on the ingest's Nessie branch);
- COMPLETE (published), FAIL (audit failed, rejected, job or publish failed) or ABORT (a
  batch split: its branch discarded, its files queued again alone) when the outcome is
  recorded, with the audit report's checks and metrics;
- OTHER when a person publishes or discards the ingest later (`wap publish`/`discard`).

Pure functions of typed values; nothing here reads or sends anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    data_quality_assertions_dataset,
    data_quality_metrics_dataset,
    data_quality_metrics_input_dataset,
    dataset_version_dataset,
    error_message_run,
    job_type_job,
    output_statistics_output_dataset,
    schema_dataset,
)

from contracts.lifecycle import (
    AUDIT_FAILED,
    JOB_FAILED,
    PUBLISH_FAILED,
    PUBLISHED,
    REJECTED,
    SPLIT,
)
from contracts.report import (
    PASSED,
    SOURCE_REJECTED,
    AuditReport,
    CheckResult,
    SourceVerdict,
    TableWrite,
)
from contracts.table_config import quarantine_table_name
from ingestion.lineage.facets import (
    PRODUCER,
    NessieReferenceDatasetFacet,
    WapIngestRunFacet,
)

_RUN_NAMESPACE = uuid.UUID("6f1c3f0e-5a43-4f7e-9d7e-2f0b9c1c7a11")
_EVENT_TYPE = {
    PUBLISHED: RunState.COMPLETE,
    AUDIT_FAILED: RunState.FAIL,
    REJECTED: RunState.FAIL,
    JOB_FAILED: RunState.FAIL,
    PUBLISH_FAILED: RunState.FAIL,
    SPLIT: RunState.ABORT,
}
# Check kinds whose violations count a column's nulls (the `dataQualityMetrics` nullCount).
_NULL_COUNTING = ("not_null",)


def run_id(ingest_id: str) -> str:
    """The OpenLineage run id of an ingest: a UUID derived from the ingest id (a retried
    Lambda or a rebase sends the same run again, never a new one)."""
    return str(uuid.uuid5(_RUN_NAMESPACE, ingest_id))


INGEST, COMPACTION = "ingest", "compaction"  # the jobs of a table: its ingests, its upkeep


def job_name(table: str, kind: str = INGEST) -> str:
    """The job of a table's ingests (or of its compactions: `kind`)."""
    return f"{kind}.{table}"


def catalog_namespace(namespace: str) -> str:
    """The namespace of the Iceberg tables the stack's Nessie catalog holds."""
    return f"nessie://{namespace}"


@dataclass(frozen=True)
class LineageInput:
    """One uploaded object version the run reads (`s3://bucket/key?versionId=V`)."""

    uri: str
    rows: int | None = None  # what the audit report counted for this source


@dataclass(frozen=True)
class Outcome:
    """What the ledger recorded as an ingest's outcome (or a person's decision)."""

    status: str
    reason: str | None = None
    reason_code: str | None = None
    reference: str | None = None  # the Nessie reference holding the rows (main when published)
    hash: str | None = None
    snapshot_id: str | None = None
    review_branch: str | None = None  # the branch left open for review
    attempt: int | None = None
    report_uri: str | None = None
    reviewer: str | None = None
    review_reason: str | None = None


def start_event(
    *,
    namespace: str,
    ingest_id: str,
    table: str,
    inputs: Sequence[LineageInput],
    branch: str,
    attempt: int,
    at: datetime,
    kind: str = INGEST,
    tables: Sequence[str] = (),
) -> RunEvent:
    """START: the job run was submitted; it writes `table` (a multi-table dataset: each of
    `tables`) on `branch`."""
    facet = WapIngestRunFacet(
        ingestId=ingest_id, table=table, attempt=attempt, files=len(inputs), producer=PRODUCER
    )
    return _event(
        RunState.START,
        namespace=namespace,
        ingest_id=ingest_id,
        table=table,
        at=at,
        kind=kind,
        run_facets={"wap_ingest": facet},
        inputs=[_input(i) for i in inputs],
        outputs=[
            _output(
                namespace, name, NessieReferenceDatasetFacet(reference=branch, producer=PRODUCER)
            )
            for name in tables or (table,)
        ],
    )


def outcome_event(
    *,
    namespace: str,
    ingest_id: str,
    table: str,
    inputs: Sequence[LineageInput],
    outcome: Outcome,
    report: AuditReport | None,
    at: datetime,
    kind: str = INGEST,
    reviewed: bool = False,
) -> RunEvent:
    """COMPLETE / FAIL / ABORT: the recorded outcome, with every check of `report` (when the
    job wrote one) as an assertion and its counts as metrics.

    `reviewed`: OTHER instead, a person published (or discarded) an ingest after its run
    ended; the outcome names the reviewer and the reason. (A run has one terminal event;
    this one adds to it.)"""
    event_type = RunState.OTHER if reviewed else _EVENT_TYPE.get(outcome.status, RunState.FAIL)
    run_facets: dict = {
        "wap_ingest": WapIngestRunFacet(
            ingestId=ingest_id,
            table=table,
            status=outcome.status,
            reason=outcome.reason,
            reasonCode=outcome.reason_code or (report.reason_code if report else None),
            reviewBranch=outcome.review_branch,
            attempt=outcome.attempt,
            files=len(inputs),
            reportUri=outcome.report_uri,
            reviewer=outcome.reviewer,
            reviewReason=outcome.review_reason,
            producer=PRODUCER,
        )
    }
    if event_type == RunState.FAIL and outcome.reason:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=outcome.reason, programmingLanguage="python", producer=PRODUCER
        )
    if report is not None and len(report.tables) > 1:  # a multi-table dataset: every table
        # The same reference and hash for all (one merge), each its own snapshot and rows.
        outputs = [
            _table_output(
                namespace,
                entry.table,
                outcome,
                report,
                snapshot=None if entry.snapshot_id is None else str(entry.snapshot_id),
                written=entry,
            )
            for entry in report.tables
        ]
        # Each table's quarantine table, with the rows that table set aside.
        outputs += [
            _quarantine_output(namespace, entry.table, outcome, report, entry.quarantined_rows)
            for entry in report.tables
            if entry.quarantined_rows
        ]
    else:
        snapshot_id = outcome.snapshot_id or (
            str(report.snapshot_id) if report and report.snapshot_id is not None else None
        )
        outputs = [
            _table_output(
                namespace,
                table,
                outcome,
                report,
                snapshot=snapshot_id,
                written=report,
                column_metrics=_null_counts(report.checks) if report is not None else None,
                schema=report.table_schema if report is not None else (),
            )
        ]
        if report is not None and report.quarantined_rows:
            outputs.append(
                _quarantine_output(namespace, table, outcome, report, report.quarantined_rows)
            )
    return _event(
        event_type,
        namespace=namespace,
        ingest_id=ingest_id,
        table=table,
        at=at,
        kind=kind,
        run_facets=run_facets,
        inputs=[
            _input(source, report, _verdict(report, index, len(inputs)))
            for index, source in enumerate(inputs)
        ],
        outputs=outputs,
    )


def _table_output(
    namespace: str,
    table: str,
    outcome: Outcome,
    report: AuditReport | None,
    *,
    snapshot: str | None,
    written: AuditReport | TableWrite | None,
    column_metrics: dict | None = None,
    schema: Sequence[Mapping[str, Any]] = (),
) -> OutputDataset:
    """One table the run wrote: its Nessie reference and `snapshot`, its `schema`, and the
    rows and files `written` (the report, or a multi-table dataset's entry for the table)
    with `column_metrics`, when the job reported them."""
    facets: dict = {}
    if outcome.reference:
        facets["wap_nessie"] = NessieReferenceDatasetFacet(
            reference=outcome.reference,
            hash=outcome.hash or (report and report.branch_hash),
            snapshotId=snapshot,
            producer=PRODUCER,
        )
    if snapshot:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
            datasetVersion=snapshot, producer=PRODUCER
        )
    if schema:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(
            fields=[
                schema_dataset.SchemaDatasetFacetFields(
                    name=str(column["name"]), type=str(column["type"])
                )
                for column in schema
            ],
            producer=PRODUCER,
        )
    output_facets: dict = {}
    if written is not None:
        facets["dataQualityMetrics"] = data_quality_metrics_dataset.DataQualityMetricsDatasetFacet(
            rowCount=written.rows_written,
            columnMetrics=column_metrics or {},
            fileCount=len(written.source_uris) or None,
            producer=PRODUCER,
        )
        output_facets["outputStatistics"] = (
            output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=written.rows_written, producer=PRODUCER
            )
        )
    return OutputDataset(
        namespace=catalog_namespace(namespace),
        name=table,
        facets=facets,
        outputFacets=output_facets,
    )


def _quarantine_output(
    namespace: str, table: str, outcome: Outcome, report: AuditReport, rows: int
) -> OutputDataset:
    """The table's quarantine table (issue 40): the `rows` the run set aside in it, written
    by the same commit as the table (published by the same merge, or left on the same
    branch)."""
    facets: dict = {}
    if outcome.reference:
        facets["wap_nessie"] = NessieReferenceDatasetFacet(
            reference=outcome.reference,
            hash=outcome.hash or report.branch_hash,
            producer=PRODUCER,
        )
    return OutputDataset(
        namespace=catalog_namespace(namespace),
        name=quarantine_table_name(table),
        facets=facets,
        outputFacets={
            "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
                rowCount=rows, producer=PRODUCER
            )
        },
    )


def _event(
    event_type: RunState,
    *,
    namespace: str,
    ingest_id: str,
    table: str,
    at: datetime,
    run_facets: dict,
    inputs: list[InputDataset],
    outputs: list[OutputDataset],
    kind: str = INGEST,
) -> RunEvent:
    job_type = job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="WAP", jobType=kind.upper(), producer=PRODUCER
    )
    return RunEvent(
        eventType=event_type,
        eventTime=at.isoformat(),
        run=Run(runId=run_id(ingest_id), facets=run_facets),
        job=Job(namespace=namespace, name=job_name(table, kind), facets={"jobType": job_type}),
        inputs=inputs,
        outputs=outputs,
        producer=PRODUCER,
    )


def _input(
    source: LineageInput, report: AuditReport | None = None, verdict: SourceVerdict | None = None
) -> InputDataset:
    """An S3 object version as OpenLineage names S3 data: namespace `s3://bucket`, name the
    key; the version id as the dataset version. With the audit report: every check as an
    assertion about this input (`dataQualityAssertions` is an input facet) and its counts.

    The audit judges a run's rows together; with several inputs, a check counts as failed
    for an input only when the report's verdict for that source names it.
    """
    parts = urlsplit(source.uri)
    facets: dict = {}
    version = parse_qs(parts.query).get("versionId", [None])[0]
    if version:
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
            datasetVersion=version, producer=PRODUCER
        )
    input_facets: dict = {}
    if report is not None:
        failed_here = (
            set(verdict.failed_checks)
            if verdict is not None and verdict.status != SOURCE_REJECTED
            else None
        )
        input_facets["dataQualityAssertions"] = (
            data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
                assertions=[_assertion(check, failed_here) for check in report.checks],
                producer=PRODUCER,
            )
        )
        single = verdict is None
        rows = (
            source.rows
            if source.rows is not None
            else (verdict.rows if verdict is not None else report.rows_written)
        )
        input_facets["dataQualityMetrics"] = (
            data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet(
                rowCount=rows,
                # Null counts are measured over the run's rows: an input's own only alone.
                columnMetrics=_null_counts(report.checks, input_metrics=True) if single else {},
                producer=PRODUCER,
            )
        )
    return InputDataset(
        namespace=f"s3://{parts.netloc}",
        name=parts.path.lstrip("/"),
        facets=facets,
        inputFacets=input_facets,
    )


def _verdict(report: AuditReport | None, index: int, inputs: int) -> SourceVerdict | None:
    """The report's verdict on the `index`th input: the job is given the staged copies in
    the order of the inputs and reports its sources in that order."""
    if report is None or inputs < 2 or len(report.sources) != inputs:
        return None  # one input: the run's results are its own
    return report.sources[index]


def _output(namespace: str, table: str, nessie: NessieReferenceDatasetFacet) -> OutputDataset:
    return OutputDataset(
        namespace=catalog_namespace(namespace), name=table, facets={"wap_nessie": nessie}
    )


def _assertion(
    check: CheckResult,
    failed_here: set[str] | None = None,
) -> data_quality_assertions_dataset.Assertion:
    """A check as an assertion: its kind, name, columns, severity, and whether it passed
    (a check that could not be evaluated did not pass); `failed_here`: the checks one
    input's own rows failed, when the run had several."""
    passed = check.status == PASSED
    if failed_here is not None and check.blocking:
        passed = check.name not in failed_here
    return data_quality_assertions_dataset.Assertion(
        assertion=check.kind,
        success=passed,
        name=check.name,
        column=",".join(check.columns) or None,
        severity=check.severity,
        expected=None if check.threshold is None else str(check.threshold),
        actual=None if check.violations is None else str(check.violations),
        params={},
    )


def _null_counts(checks: Sequence[CheckResult], *, input_metrics: bool = False) -> dict:
    """Null counts where a check measured them (a not_null check's violations)."""
    metrics = data_quality_metrics_input_dataset if input_metrics else data_quality_metrics_dataset
    return {
        check.columns[0]: metrics.ColumnMetrics(nullCount=check.violations)
        for check in checks
        if check.kind in _NULL_COUNTING and len(check.columns) == 1 and check.violations is not None
    }
