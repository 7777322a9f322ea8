"""Names and sizes of the deployed service, in one place.

Per-environment values (channel, endpoints, capacities) come from CDK context and
are validated in `infra.settings`; everything here is the same in every environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from contracts.layout import REPORTS_PREFIX, STAGING_PREFIX
from contracts.layout import TABLES_PREFIX as TABLES_CONFIG_PREFIX

__all__ = ["REPORTS_PREFIX", "STAGING_PREFIX", "TABLES_CONFIG_PREFIX"]  # contracts/layout.py

REPO_ROOT = Path(__file__).resolve().parent.parent
# Built Lambda code, dependency layer and job package (gitignored, reused across synths).
BUILD_DIR = REPO_ROOT / "build"


@dataclass(frozen=True)
class SourceTree:
    """Where the deployed code lives: the repository by default."""

    root: Path = REPO_ROOT

    @property
    def lambdas_dir(self) -> Path:
        return self.root / "lambdas"

    @property
    def spark_jobs_dir(self) -> Path:
        return self.root / "spark_jobs"

    @property
    def tables_dir(self) -> Path:
        return self.root / "tables"

    @property
    def state_machine_file(self) -> Path:
        return self.root / "statemachine" / "ingest.asl.json"

    @property
    def lambda_requirements(self) -> Path:
        return self.root / "requirements-lambda.txt"

    @property
    def iceberg_lambda_requirements(self) -> Path:
        """What a Lambda that reads Iceberg metadata adds (`FunctionSpec.reads_iceberg`)."""
        return self.root / "requirements-lambda-maintenance.txt"

    def dependency_layers(self) -> dict[str, tuple[Path, ...]]:
        """The Lambda dependency layers by construct id (under `Pipeline`) and the
        requirement files each resolves together: infra/pipeline.py builds them, the local
        stack finds each function's layers (its zone data) by them."""
        return {
            "Dependencies": (self.lambda_requirements,),
            "IcebergDependencies": (self.lambda_requirements, self.iceberg_lambda_requirements),
        }


STACK_NAME = "WapIngest"
DEFAULT_REGION = "eu-west-1"

# --- Catalog (Nessie) --------------------------------------------------------
NESSIE_IMAGE = "ghcr.io/projectnessie/nessie"
NESSIE_IMAGE_TAG = "0.107.3"
NESSIE_API_PORT = 19120
NESSIE_MANAGEMENT_PORT = 9000
NESSIE_HEALTH_PATH = "/q/health/ready"
NESSIE_LISTENER_PORT = 80
NESSIE_CPU = 1024
NESSIE_MEMORY_MIB = 2048
# Nessie's dynamodb2 persistence names its tables "<prefix>_refs" and "<prefix>_objs",
# both hash-keyed on the string attribute "k" (DynamoDB2Backend / DynamoDB2Constants).
NESSIE_TABLE_SUFFIXES = ("refs", "objs")
NESSIE_TABLE_KEY = "k"
# Who may do what in the catalog: contracts/catalog_authorization.properties, deployed
# verbatim. The Cognito resource server whose scopes `wap/<role>` name a machine client's
# role (infra/token_roles.py turns them into the `roles` claim).
CATALOG_RESOURCE_SERVER = "wap"
# The Nessie UI's login (Quarkus OIDC tenant `ui-app`, Nessie's docs): the UI's pages.
NESSIE_UI_TENANT_PATHS = "/,/tree*,/content*,/notfound*,/commits*"
# Where operators open the UI without `-c nessieUiUrl`: the SSM port forward (docs/deploy.md).
# Cognito accepts plain http callbacks for localhost only.
NESSIE_LOCAL_UI_URL = "http://localhost:19120"
# `wap --aws login`: the public client's localhost redirects (Cognito matches them exactly,
# port included, so the CLI tries these ports in order).
CLI_LOGIN_PORTS = (8765, 8766, 8767)
CLI_LOGIN_PATH = "/callback"

# --- Storage -----------------------------------------------------------------
JOB_CODE_PREFIX = "jobs/"
EMR_LOGS_PREFIX = "emr-logs/"
WAREHOUSE_PREFIX = "warehouse/"
REPORT_RETENTION_DAYS = 400
EMR_LOG_RETENTION_DAYS = 30
ACCESS_LOG_RETENTION_DAYS = 90
# How long a lake file that garbage collection deleted (`wap gc --delete`) stays
# recoverable as a noncurrent version before S3 frees its bytes. Iceberg never
# overwrites a file, so the lake's noncurrent versions are exactly what GC deleted.
LAKE_DELETED_FILE_RETENTION_DAYS = 30

# --- Compute (EMR Serverless) ---------------------------------------------------
EMR_RELEASE_LABEL = "emr-7.12.0"
EMR_IDLE_TIMEOUT_MINUTES = 15
EMR_MAX_CPU = "32 vCPU"
EMR_MAX_MEMORY = "128 GB"
EMR_MAX_DISK = "1000 GB"
# The Iceberg runtime the job runs with on EMR is the upstream jar the tests run with,
# taken from this wheel (requirements.txt) and uploaded as an asset; EMR's own Iceberg
# build is not known to contain NessieCatalog. 1.0.3's jar is broken (shaded Jackson missing).
ICEBERG_RUNTIME_WHEEL = "snowpark-connect-deps-iceberg==1.0.2"
ICEBERG_RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"

# --- Pipeline ------------------------------------------------------------------
LAMBDA_MEMORY_MIB = 512
LAMBDA_TIMEOUT_SECONDS = 60
TRIGGER_TIMEOUT_SECONDS = 300
LOG_RETENTION_DAYS = 90
EVENT_RETRY_ATTEMPTS = 4
EVENT_MAX_AGE_HOURS = 6
TRIGGER_ASYNC_RETRIES = 2
SWEEPER_RATE_MINUTES = 5  # also how much longer than blockedStartMinutes a table may wait
# Garbage collection across Nessie references (lambdas/maintenance/): once a day, at this
# UTC time unless -c maintenanceTimeUtc says otherwise; a run marks every reference and
# lists the warehouse, so it gets Lambda's longest timeout.
MAINTENANCE_TIME_UTC = "03:00"
# Its asynchronous invocations (the schedule's, a manual `--invocation-type Event`): no
# retries (Lambda's default is two: up to three 15-minute runs), and an event that could
# not start within this long (throttled) is dropped rather than compacting at a busy hour.
MAINTENANCE_ASYNC_RETRIES = 0
MAINTENANCE_MAX_EVENT_AGE_MINUTES = 60
MAINTENANCE_TIMEOUT_SECONDS = 900
MAINTENANCE_MEMORY_MIB = 1024  # the marked paths and manifests' entries are held in memory
BLOCKED_START_MINUTES = 10  # a file holding its table this long without starting is retried
MAX_PUBLISH_ATTEMPTS = 3
BRANCH_RETENTION_DAYS = 14
JOB_TIMEOUT_MINUTES = 60  # counted from EMR's startedAt
JOB_QUEUE_TIMEOUT_MINUTES = 60  # how long a run may wait for capacity on top
MAX_JOB_TRIES = 3  # runs of one attempt after infrastructure errors
JOB_RETRY_BASE_SECONDS = 60  # the backoff before the second try; doubled after
JOB_POLL_INTERVAL_SECONDS = 30
POWERTOOLS_SERVICE_NAME = "wap-ingest"


def service_name(function: str) -> str:
    """A function's Powertools service name: its logs' `service` and its metrics' dimension."""
    return f"{POWERTOOLS_SERVICE_NAME}-{function}"


METRICS_NAMESPACE = "WAP/Ingest"  # the sweeper's queue metrics (embedded metric format)
QUEUE_ALARM_MINUTES = 60  # a file queued longer than this for its table raises the alarm


class Capability(Enum):
    """What a Lambda may do; the stack turns each into a grant."""

    LEDGER_READ = "ledger-read"
    LEDGER_WRITE = "ledger-write"
    LEDGER_QUERY_INDEXES = "ledger-query-indexes"
    SOURCE_READ = "source-read"
    REPORTS_READ = "reports-read"
    TABLE_CONFIG_READ = "table-config-read"  # a table's batch limits, when handing it on
    START_JOB = "start-job"
    WATCH_JOB = "watch-job"
    READ_JOB = "read-job"  # GetJobRun only: a run it started and never cancels
    CANCEL_JOB = "cancel-job"
    STAGING_WRITE = "staging-write"
    STAGING_DELETE = "staging-delete"
    START_EXECUTION = "start-execution"
    WATCH_EXECUTION = "watch-execution"
    SLACK_TOKEN_READ = "slack-token-read"  # noqa: S105 (a capability name, not a secret)
    NESSIE = "nessie"
    LINEAGE_KEY_READ = "lineage-key-read"  # the OpenLineage API key, when one is configured
    LAKE_READ = "lake-read"  # list the lake bucket, read Iceberg metadata under warehouse/
    # delete under warehouse/: only with the deploy setting gcDelete (DeploySettings.gc_delete)
    LAKE_DELETE = "lake-delete"
    MAINTENANCE_SUMMARY_WRITE = "maintenance-summary-write"  # reports/maintenance/*


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda: its package under lambdas/ and what it is allowed to do."""

    name: str
    capabilities: frozenset[Capability]
    timeout_seconds: int = LAMBDA_TIMEOUT_SECONDS
    memory_mib: int = LAMBDA_MEMORY_MIB
    # Its layer also holds requirements-lambda-maintenance.txt (pyiceberg): only the
    # maintenance Lambda, so the others stay small (the trigger's size target).
    reads_iceberg: bool = False

    @property
    def handler(self) -> str:
        return f"lambdas.{self.name}.handler.handler"

    @property
    def substitution(self) -> str:
        """State machine substitution name: CamelCase of the package + FunctionArn."""
        return "".join(part.title() for part in self.name.split("_")) + "FunctionArn"


_C = Capability
# Read from the handlers' calls: start_ingest (branch, StartJobRun, StartExecution, ledger),
# alerts sent directly through ingestion.alerting (Slack token, report), EMR and SFN
# polling.
_START_INGEST = {
    _C.LEDGER_READ,
    _C.LEDGER_WRITE,
    _C.NESSIE,
    _C.START_JOB,
    _C.START_EXECUTION,
    _C.TABLE_CONFIG_READ,
    _C.LINEAGE_KEY_READ,
}  # (START, or FAIL if it cannot)
_ALERTS = {_C.SLACK_TOKEN_READ, _C.REPORTS_READ}
FUNCTIONS: tuple[FunctionSpec, ...] = (
    # S3 event -> format check (its first bytes; a parquet file's last 4 too), staged
    # copy of that exact version (a server-side multipart copy: large objects need
    # minutes), ledger, branch, job run, execution.
    # It alerts only ingests that never ran (rejected, or unable to start): no report.
    FunctionSpec(
        "trigger",
        frozenset({*_START_INGEST, _C.SLACK_TOKEN_READ, _C.SOURCE_READ, _C.STAGING_WRITE}),
        timeout_seconds=TRIGGER_TIMEOUT_SECONDS,
    ),
    FunctionSpec("job_status", frozenset({_C.WATCH_JOB, _C.REPORTS_READ})),
    # The next try of a job run after an infrastructure error, on the same branch.
    FunctionSpec("retry_job", frozenset({_C.LEDGER_READ, _C.LEDGER_WRITE, _C.START_JOB})),
    # Merge, or rebase: new branch + job re-run that the state machine then waits for.
    FunctionSpec(
        "publish",
        frozenset({_C.LEDGER_READ, _C.LEDGER_WRITE, _C.NESSIE, _C.START_JOB}),
        timeout_seconds=120,
    ),
    FunctionSpec("alert", frozenset(_ALERTS)),
    # Records the outcome (asking Nessie first whether main holds it), cancels the job run
    # of an ingest given up, frees the table and starts the next queued ingest.
    # (start_or_fail alerts an ingest that cannot start: the Slack token.) A finished batch's
    # report gives each of its files its own outcome.
    FunctionSpec(
        "finish", frozenset({*_START_INGEST, _C.SLACK_TOKEN_READ, _C.CANCEL_JOB, _C.REPORTS_READ})
    ),
    # Recovers locks of ended executions, cancels their job runs, deletes expired branches
    # and staged copies of final ingests, alerts; concludes compactions whose job run ended
    # (reads the run and its result, merges, starts the next ingest: grants it has anyway).
    FunctionSpec(
        "sweeper",
        frozenset(
            {
                *_START_INGEST,
                *_ALERTS,
                _C.WATCH_EXECUTION,
                _C.WATCH_JOB,
                _C.STAGING_DELETE,
                _C.LEDGER_QUERY_INDEXES,
            }
        ),
        timeout_seconds=300,
    ),
    # Daily garbage collection across Nessie references: reads Nessie and the lake's
    # metadata, lists the warehouse, deletes only with -c gcDelete=true (LAKE_DELETE is added
    # by the stack then), keeps each table's health for the dashboard. Reads each table's
    # `maintenance:` section. Compaction (daily, and `wap --aws maintain`): holds the table
    # in the ledger, starts the job's compaction run and reads its state and result, merges,
    # alerts, then starts the next queued ingest (_START_INGEST); finds the compactions
    # running through the ledger's status index.
    FunctionSpec(
        "maintenance",
        frozenset(
            {
                *_START_INGEST,
                _C.LAKE_READ,
                _C.MAINTENANCE_SUMMARY_WRITE,
                _C.READ_JOB,
                _C.REPORTS_READ,
                _C.SLACK_TOKEN_READ,
                _C.LEDGER_QUERY_INDEXES,
            }
        ),
        timeout_seconds=MAINTENANCE_TIMEOUT_SECONDS,
        memory_mib=MAINTENANCE_MEMORY_MIB,
        reads_iceberg=True,
    ),
)


def construct_name(role: str) -> str:
    """A role's part of its constructs' ids: `wap-trigger` -> `WapTrigger` (the client
    `Identity/Users/WapTriggerClient`, its secret `Identity/WapTriggerCredentials`). Here,
    not in infra/identity.py, because the local stack names them too and importing a
    module of constructs starts the CDK's Node runtime (jsii)."""
    return "".join(part.title() for part in role.replace("_", "-").split("-"))
