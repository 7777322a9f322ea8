"""Compaction as Write-Audit-Publish: rewrite a table's small data files on its own branch,
then prove the content did not change.

The caller creates the branch from main (so the table on it is main's at the branch
point), runs `compact` on it, and merges the branch's audited head into main through the
same publish path as ingests only when `CompactionResult.passed`; otherwise the branch
stays for inspection and the caller alerts.

The rewrite is Iceberg's `rewrite_data_files` procedure through the run's Nessie catalog
(`<run catalog>.system.rewrite_data_files`, binpack toward `target-file-size-bytes`, only
where a partition has `min-input-files` files). The audit reads the table as of the
snapshot before the rewrite and as of the one after, and compares the row count and an
order-independent digest of every row: the sum, over rows, of `xxhash64` of all columns
(a decimal sum: no overflow; duplicates count, unlike an XOR) and of Spark's 32-bit
`hash` as a second, independent one. Python 3.9, pyspark only, like the rest of the job.

On EMR Serverless the same function runs as a mode of the job's entry point
(`wap_job.py --compact --table T --branch B --run-id R --report-uri U`, `run_job`): the
maintenance Lambda created the branch and publishes from the report (contracts/compaction.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contracts.compaction import REPORT_KIND, REPORT_VERSION
from contracts.job_args import CompactionArgs
from spark_jobs.catalog import catalog_conf, configure_run_catalog, nessie_branch_hash
from spark_jobs.identifiers import (
    quote,
    quote_parts,
    split_table_name,
    validate_branch,
    validate_identifier,
    validate_ingest_id,
)
from spark_jobs.report import write_report

# rewrite_data_files(table, options): what Iceberg's procedure does; tests hand in a faulty
# one. Returns the procedure's result row as a dict.
Rewrite = Callable[[Any, str, str, dict], dict]


@dataclass(frozen=True)
class Content:
    """What the audit compares: rows, two order-independent digests, data files."""

    snapshot_id: int | None
    rows: int
    xxhash64_sum: str  # decimal text: exact whatever the size
    hash32_sum: str
    data_files: int


@dataclass(frozen=True)
class CompactionResult:
    """Before and after the rewrite on the branch, and the verdict."""

    table: str
    branch: str
    before: Content
    after: Content
    rewritten_files: int
    added_files: int

    @property
    def changed(self) -> bool:
        """Whether the rewrite committed a new snapshot at all (nothing to publish if not)."""
        return self.after.snapshot_id != self.before.snapshot_id

    @property
    def passed(self) -> bool:
        """Same rows, same digests: the content is unchanged."""
        return (self.before.rows, self.before.xxhash64_sum, self.before.hash32_sum) == (
            self.after.rows,
            self.after.xxhash64_sum,
            self.after.hash32_sum,
        )

    @property
    def reason(self) -> str | None:
        """Why the audit failed, for the alert; None when it passed."""
        if self.passed:
            return None
        if self.before.rows != self.after.rows:
            return (
                f"compaction changed the row count of {self.table}: "
                f"{self.before.rows} before, {self.after.rows} after"
            )
        return (
            f"compaction changed the content of {self.table} (same {self.after.rows} "
            "rows, different row digest)"
        )

    def to_dict(self) -> dict:
        """The result as JSON-ready data (the maintenance run's report)."""
        from dataclasses import asdict

        return {
            **asdict(self),
            "passed": self.passed,
            "changed": self.changed,
            "reason": self.reason,
        }


def iceberg_rewrite(spark: Any, catalog: str, table: str, options: dict) -> dict:
    """Iceberg's `rewrite_data_files` (binpack) on `catalog`.`table`."""
    namespace, name = split_table_name(table)
    validate_identifier(catalog, "catalog")
    pairs = ", ".join(f"'{k}', '{int(v)}'" for k, v in sorted(options.items()))
    row = spark.sql(
        f"CALL {quote(catalog)}.system.rewrite_data_files("
        f"table => '{namespace}.{name}', options => map({pairs}))"
    ).collect()[0]
    return row.asDict()


def content(spark: Any, catalog: str, table: str, snapshot_id: int | None) -> Content:
    """Rows, digests and data files of `table` as of `snapshot_id` (None: an empty table)."""
    namespace, name = split_table_name(table)
    if snapshot_id is None:
        return Content(None, 0, "0", "0", 0)
    frame = spark.read.option("snapshot-id", str(snapshot_id)).table(
        quote_parts(catalog, namespace, name)
    )
    columns = ", ".join(_hashable(field) for field in frame.schema.fields)
    frame.createOrReplaceTempView("_wap_compaction_audit")
    row = spark.sql(
        f"SELECT count(*) AS n, "  # noqa: S608 (quoted column names)
        f"CAST(coalesce(sum(CAST(xxhash64({columns}) AS DECIMAL(20, 0))), 0) AS STRING) AS x, "
        f"CAST(coalesce(sum(CAST(hash({columns}) AS BIGINT)), 0) AS STRING) AS h "
        f"FROM _wap_compaction_audit"
    ).collect()[0]
    files = spark.sql(
        f"SELECT count(*) FROM {quote_parts(catalog, namespace, name)}.files "  # noqa: S608
        f"VERSION AS OF {int(snapshot_id)}"
    ).collect()[0][0]
    return Content(snapshot_id, int(row["n"]), row["x"], row["h"], int(files))


def _hashable(field: Any) -> str:
    """A column as Spark's hash functions take it: maps (which they refuse) as JSON."""
    from pyspark.sql.types import MapType

    column = quote(field.name)
    return f"to_json({column})" if isinstance(field.dataType, MapType) else column


def current_snapshot(spark: Any, catalog: str, table: str) -> int | None:
    """The table's current snapshot id on the catalog's ref (None: no snapshot yet)."""
    namespace, name = split_table_name(table)
    rows = spark.sql(
        f"SELECT snapshot_id FROM {quote_parts(catalog, namespace, name)}.history "  # noqa: S608
        "WHERE is_current_ancestor ORDER BY made_current_at DESC LIMIT 1"
    ).collect()
    return int(rows[0][0]) if rows else None


def compact(
    spark: Any,
    *,
    template: str,
    run_catalog: str,
    table: str,
    branch: str,
    target_file_size: int,
    min_files: int,
    rewrite: Rewrite = iceberg_rewrite,
) -> CompactionResult:
    """Rewrite `table`'s small files on `branch` (a fresh branch from main) and audit it.

    `run_catalog` is configured as a copy of `template` at `branch`
    (`spark_jobs.catalog.configure_run_catalog`); nothing touches main.
    """
    configure_run_catalog(spark, template, run_catalog, branch)
    before_id = current_snapshot(spark, run_catalog, table)
    before = content(spark, run_catalog, table, before_id)
    answer = rewrite(
        spark,
        run_catalog,
        table,
        {
            "target-file-size-bytes": target_file_size,
            "min-input-files": min_files,
        },
    )
    after = content(spark, run_catalog, table, current_snapshot(spark, run_catalog, table))
    return CompactionResult(
        table=table,
        branch=branch,
        before=before,
        after=after,
        rewritten_files=int(answer.get("rewritten_data_files_count") or 0),
        added_files=int(answer.get("added_data_files_count") or 0),
    )


def check_job_args(args: CompactionArgs) -> CompactionArgs:
    """`args` (contracts/job_args.py) if its names are valid; InvalidArgumentError before
    Spark starts if not."""
    split_table_name(args.table)
    validate_branch(args.branch)
    validate_ingest_id(args.run_id)
    validate_identifier(args.catalog, "catalog")
    return args


def run_job(spark: Any, args: CompactionArgs) -> dict:
    """Compact on the branch and write the result to `--report-uri` (ReportWriteError when
    that fails); any other failure propagates, so the run ends FAILED with its reason."""
    result = compact(
        spark,
        template=args.catalog,
        run_catalog=f"wap_{args.run_id[:8]}",
        table=args.table,
        branch=args.branch,
        target_file_size=args.target_file_size,
        min_files=args.min_files,
        # Looked up when called, not bound at import: a test may replace it.
        rewrite=iceberg_rewrite,
    )
    # What the publisher merges: exactly the head this job audited, never a newer one.
    head = nessie_branch_hash(catalog_conf(spark, args.catalog), args.catalog, args.branch)
    report = {
        "report_version": REPORT_VERSION,
        "kind": REPORT_KIND,
        "run_id": args.run_id,
        "head_hash": head,
        **result.to_dict(),
    }
    write_report(spark, args.report_uri, report)
    return report
