"""Names shared by every handler: ledger statuses, environment variables, job states."""

from __future__ import annotations

# The outcome statuses the state machine carries, and the report's outcomes, are defined
# with their payloads (contracts/); they are re-exported here under the names the
# handlers use.
from contracts import report as _report
from contracts import state as _state

# Ledger statuses of one ingest and their groups: the lifecycle's (contracts/lifecycle.py),
# re-exported under the names the handlers use.
from contracts.lifecycle import (  # noqa: F401 (re-exported)
    AUDIT_FAILED,
    DISCARDED,
    FAILED_STATUSES,
    HELD,
    JOB_FAILED,
    PENDING_STATUSES,
    PUBLISH_FAILED,
    PUBLISHED,
    QUEUED,
    RECEIVED,
    REJECTED,
    RUNNING,
    SPLIT,
    TERMINAL_STATUSES,
    Status,
)

# Results the state machine branches on (job_status / publish outputs).
JOB_RUNNING = _state.RUNNING
JOB_PASSED = _state.PASSED
# The job ended in an infrastructure error (report outcome `error`, or the run failed):
# the state machine waits `retry_in_seconds` and retries it on the same branch.
JOB_ERROR = _state.JOB_ERROR
PUBLISH_REBASED = _state.REBASED

# EMR Serverless job run states.
EMR_ACTIVE_STATES = frozenset(
    {"SUBMITTED", "PENDING", "SCHEDULED", "RUNNING", "QUEUED", "CANCELLING"}
)
EMR_SUCCESS = "SUCCESS"
EMR_FAILED = "FAILED"
EMR_CANCELLED = "CANCELLED"

# Report outcomes written by the Spark job (docs/contracts.md).
REPORT_PASSED = _report.PASSED
REPORT_FAILED = _report.FAILED
REPORT_REJECTED = _report.REJECTED
REPORT_ERROR = _report.ERROR  # infrastructure, not the input: retried, then JOB_FAILED

MAIN_BRANCH = "main"
# The source of a ledger run that is table maintenance (`wap maintain`), not an upload: it
# holds the table's lock without a Step Functions execution.
MAINTENANCE_SOURCE = "maintenance:compaction"

# The reason code of an upload refused because its table is unknown: no table config and
# no table on main, and the deploy does not create tables from uploads.
UNKNOWN_TABLE = "unknown_table"

# Environment variables (docs/contracts.md).
ENV_LEDGER_TABLE = "WAP_LEDGER_TABLE"
ENV_NESSIE_URI = "WAP_NESSIE_URI"
ENV_NESSIE_UI_URL = "WAP_NESSIE_UI_URL"
# The Secrets Manager secret holding the job's Nessie client credentials, whose ARN (never
# its value) a job run's arguments carry (the functions' own: contracts/catalog_tokens.py).
ENV_JOB_NESSIE_CREDENTIALS_SECRET_ARN = "WAP_JOB_NESSIE_CREDENTIALS_SECRET_ARN"  # noqa: S105
ENV_EMR_APPLICATION_ID = "WAP_EMR_APPLICATION_ID"
ENV_EMR_EXECUTION_ROLE_ARN = "WAP_EMR_EXECUTION_ROLE_ARN"
ENV_JOB_ENTRYPOINT = "WAP_JOB_ENTRYPOINT"
ENV_JOB_PY_FILES = "WAP_JOB_PY_FILES"
ENV_JOB_SPARK_PARAMETERS = "WAP_JOB_SPARK_PARAMETERS"
ENV_ARTIFACTS_BUCKET = "WAP_ARTIFACTS_BUCKET"
ENV_TABLES_CONFIG_PREFIX = "WAP_TABLES_CONFIG_PREFIX"
ENV_REPORTS_PREFIX = "WAP_REPORTS_PREFIX"
ENV_LOGS_PREFIX = "WAP_LOGS_PREFIX"
ENV_STATE_MACHINE_ARN = "WAP_STATE_MACHINE_ARN"
ENV_SLACK_SECRET_ARN = "WAP_SLACK_SECRET_ARN"  # noqa: S105 (a variable name)
ENV_SLACK_CHANNEL = "WAP_SLACK_CHANNEL"
ENV_MAX_PUBLISH_ATTEMPTS = "WAP_MAX_PUBLISH_ATTEMPTS"
ENV_BRANCH_RETENTION_DAYS = "WAP_BRANCH_RETENTION_DAYS"
ENV_JOB_TIMEOUT_MINUTES = "WAP_JOB_TIMEOUT_MINUTES"
ENV_JOB_QUEUE_TIMEOUT_MINUTES = "WAP_JOB_QUEUE_TIMEOUT_MINUTES"
ENV_MAX_JOB_TRIES = "WAP_MAX_JOB_TRIES"
ENV_JOB_RETRY_BASE_SECONDS = "WAP_JOB_RETRY_BASE_SECONDS"
ENV_BLOCKED_START_SECONDS = "WAP_BLOCKED_START_SECONDS"
ENV_CREATE_TABLES_FROM_UPLOADS = "WAP_CREATE_TABLES_FROM_UPLOADS"
# OpenLineage (ingestion/lineage): where events go; unset, nothing is sent.
ENV_LINEAGE_URL = "WAP_LINEAGE_URL"
ENV_LINEAGE_API_KEY_SECRET_ARN = "WAP_LINEAGE_API_KEY_SECRET_ARN"  # noqa: S105 (a name)
ENV_LINEAGE_NAMESPACE = "WAP_LINEAGE_NAMESPACE"
# EMR Serverless prices `vcpu=<usd>,memory=<usd>,storage=<usd>` (contracts/pricing.py);
# unset: the price table's for the function's region (AWS_REGION, set by Lambda).
ENV_EMR_PRICES = "WAP_EMR_PRICES"
ENV_AWS_REGION = "AWS_REGION"
# The maintenance Lambda's own: the lake's warehouse (`s3://<lake>/warehouse/`) and whether
# its garbage collection deletes (the deploy's `-c gcDelete`) or only reports.
ENV_WAREHOUSE_URI = "WAP_WAREHOUSE_URI"
ENV_GC_DELETE = "WAP_GC_DELETE"
