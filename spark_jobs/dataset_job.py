"""A multi-table dataset's run (docs/datasets.md): every table written on one branch, each
audited by its own checks, then the checks between tables on the branch, one report.

The job gets every source with its table (`--source-table`) and the dataset's config
(`--dataset-config-uri`). Each table is written and audited exactly as a single-table
run does it (`wap_job._run`), in the dataset's table order, all on the same branch; a
source that cannot be used rejects the whole dataset (all or nothing). The report's
`branch_hash` is the branch after the last write: the one commit publish verifies for
every table's snapshot and merges.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import yaml

from contracts.dataset_config import DatasetConfig, parse_dataset_config_bytes
from contracts.report import TableWrite
from contracts.table_config import MAX_CONFIG_BYTES
from spark_jobs import hadoop_fs
from spark_jobs.catalog import configure_run_catalog, nessie_branch_hash
from spark_jobs.errors import TableConfigError
from spark_jobs.identifiers import split_table_name
from spark_jobs.relations import evaluate_relations
from spark_jobs.report import Report
from spark_jobs.writer import CatalogTable, create_namespace, load_table, rows_added


def load_dataset_config(spark, uri: str) -> DatasetConfig:
    """The dataset's config at `uri`; TableConfigError when it is missing or invalid."""
    data = hadoop_fs.read_config(
        spark, uri, "dataset config", f"{uri} is larger than {MAX_CONFIG_BYTES} bytes"
    )
    if data is None:
        raise TableConfigError(f"no dataset config at {uri}")
    return parse_dataset_config_bytes(data, uri, yaml=yaml)


def run_dataset(spark, args, report: Report, run_table: Callable) -> None:
    """Write and audit a multi-table dataset into `report` (`wap_job.run_ingest` reports
    it, and an exception: one marked by `_on_table` names its table in the reason).

    `run_table(spark, args, report)` writes and audits one table as a single-table run
    does (returning its table ref and write): `spark_jobs.wap_job`'s, passed in so the
    modules do not import each other."""
    config = load_dataset_config(spark, args.dataset_config_uri)
    if args.table != config.tables[0]:
        raise TableConfigError(
            f"--table must be the dataset's first table {config.tables[0]}, not {args.table}"
        )
    unknown = sorted(set(args.source_tables) - set(config.tables))
    if unknown:
        raise TableConfigError(
            f"dataset {config.name} has no table {', '.join(unknown)} "
            f"(its tables: {', '.join(config.tables)})"
        )
    conf = configure_run_catalog(spark, args.catalog, args.run_catalog, args.branch)
    chosen = {
        table: [i for i, owner in enumerate(args.source_tables) if owner == table]
        for table in config.tables
    }
    refs = {
        table: CatalogTable(args.run_catalog, *split_table_name(table)) for table in config.tables
    }
    for table in config.tables:
        if not chosen[table] and load_table(spark, refs[table]) is None:
            raise _on_table(
                TableConfigError(f"the drop brings no files for {table}, which does not exist yet"),
                table,
            )
    # Namespaces first, one after another: the tables' writes then touch different keys
    # only, which Nessie commits side by side on one branch.
    for namespace in dict.fromkeys(split_table_name(t)[0] for t in config.tables if chosen[t]):
        create_namespace(spark, CatalogTable(args.run_catalog, namespace, "_"))
    writes = {
        table: (
            sub_args,
            Report(
                ingest_id=args.ingest_id,
                table=table,
                source_uris=sub_args.sources,
                branch=args.branch,
            ),
        )
        for table, indexes in chosen.items()
        if indexes
        for sub_args in [_table_args(args, table, indexes)]
    }
    # Each table is written and audited in its own thread: Spark runs their jobs side by
    # side, so the dataset takes about as long as its largest table, not their sum.
    writes_started = time.perf_counter()
    with ThreadPoolExecutor(
        max_workers=max(1, len(writes)), thread_name_prefix="dataset-table"
    ) as pool:
        futures = {
            table: pool.submit(_timed_run, run_table, spark, sub_args, sub)
            for table, (sub_args, sub) in writes.items()
        }
        results = {}
        for table, future in futures.items():
            try:
                results[table] = future.result()
            except Exception as exc:
                _on_table(exc, table)
                raise
    parts, new_rows, earlier_rows, added, verdicts = [], {}, {}, {}, {}
    for table in config.tables:
        ref = refs[table]
        if table not in writes:  # no new rows for this table: relations still see it
            earlier_rows[table] = spark.table(ref.sql)
            new_rows[table], added[table] = earlier_rows[table].limit(0), 0
            parts.append(TableWrite(table=table))
            continue
        (sub_args, sub), (ref, written) = writes[table], results[table]
        report.checks += [replace(check, name=f"{table}: {check.name}") for check in sub.checks]
        verdicts.update((verdict.uri, verdict) for verdict in sub.sources)
        report.quarantined_rows += sub.quarantined_rows  # each table's own quarantine table
        report.schema_changes += [{"table": table, **change} for change in sub.schema_changes]
        report.timings.update({f"{table}.{key}": value for key, value in sub.timings.items()})
        # The table as this run left it (its snapshot), whatever the other thread committed.
        new_rows[table] = rows_added(spark, ref, written)
        earlier_rows[table] = (
            None
            if written.parent_id is None
            # a new table
            else spark.read.format("iceberg").option("snapshot-id", written.parent_id).load(ref.sql)
        )
        added[table] = written.rows_written
        parts.append(
            TableWrite(
                table=table,
                snapshot_id=written.snapshot_id,
                rows_written=written.rows_written,
                source_uris=tuple(sub_args.sources),
                schema_changes=tuple(sub.schema_changes),
                quarantined_rows=sub.quarantined_rows,
            )
        )
    report.timed("tables_s", writes_started)
    start = time.perf_counter()
    report.checks += evaluate_relations(spark, config, new_rows, earlier_rows, added)
    report.timed("relations_s", start)
    report.tables = parts
    first = next((part for part in parts if part.snapshot_id is not None), None)
    report.snapshot_id = first.snapshot_id if first else None
    report.rows_written = sum(part.rows_written for part in parts)
    report.branch_hash = nessie_branch_hash(conf, args.run_catalog, args.branch)
    report.settle()
    report.judge(verdicts)


def _timed_run(run_table: Callable, spark, args, report: Report):
    """`run_table`, its own seconds in `report.timings["total_s"]` (the tables overlap)."""
    start = time.perf_counter()
    try:
        return run_table(spark, args, report)
    finally:
        report.timed("total_s", start)


def _table_args(args, table: str, indexes: list[int]):
    """The single-table arguments of one table of the dataset (its sources, in order)."""
    return replace(
        args,
        table=table,
        sources=[args.sources[i] for i in indexes],
        source_origins=tuple(args.source_origins[i] for i in indexes)
        if args.source_origins
        else (),
        all_or_nothing=True,
        dataset_config_uri=None,
        source_tables=(),
    )


def _on_table(exc: Exception, table: str) -> Exception:
    """`exc`, marked with the table it happened on (the report's reason names it)."""
    exc.dataset_table = table  # type: ignore[attr-defined]
    return exc
