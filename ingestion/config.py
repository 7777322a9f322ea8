"""Typed Lambda configuration, read once from the environment and validated at the edge."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from contracts.catalog_tokens import CatalogCredentials
from contracts.dataset_config import DATASET_CONFIGS_DIR
from contracts.pricing import PricesError, parse_prices
from ingestion import constants as c
from ingestion.exceptions import ConfigError

_REQUIRED = (
    c.ENV_LEDGER_TABLE,
    c.ENV_NESSIE_URI,
    c.ENV_EMR_APPLICATION_ID,
    c.ENV_EMR_EXECUTION_ROLE_ARN,
    c.ENV_JOB_ENTRYPOINT,
    c.ENV_REPORTS_PREFIX,
    c.ENV_LOGS_PREFIX,
    c.ENV_STATE_MACHINE_ARN,
    c.ENV_ARTIFACTS_BUCKET,
)


@dataclass(frozen=True)
class Settings:
    """Everything the orchestration Lambdas read from their environment."""

    ledger_table: str
    nessie_uri: str
    emr_application_id: str
    emr_execution_role_arn: str
    job_entrypoint: str
    reports_prefix: str
    logs_prefix: str
    state_machine_arn: str
    artifacts_bucket: str
    nessie_ui_url: str | None = None
    # The job's catalog client secret (its ARN): what a job run's arguments name.
    job_catalog_secret_arn: str | None = None
    # The catalog client of this function's role (WAP_NESSIE_TOKEN_ENDPOINT, _CLIENT_ID,
    # _CLIENT_SECRET or _CLIENT_SECRET_ARN: contracts/catalog_tokens.py); None: no token.
    catalog_credentials: CatalogCredentials | None = None
    job_py_files: str | None = None
    job_spark_parameters: str | None = None
    tables_config_prefix: str | None = None
    slack_secret_arn: str | None = None
    slack_channel: str | None = None
    max_publish_attempts: int = 3
    branch_retention_days: int = 14
    job_timeout_minutes: int = 60
    # A run EMR has not started this long after StartJobRun is given up (queued capacity).
    job_queue_timeout_minutes: int = 60
    # Job runs that end in an infrastructure error are retried on the same branch.
    max_job_tries: int = 3
    job_retry_base_seconds: int = 60
    # A file holding its table this long without a running job (its start failed, e.g.
    # Nessie was down) is started again by the sweeper, which alerts once if it still fails.
    blocked_start_seconds: int = 600
    # An upload for a table with neither a config nor a table on main creates it (opt-in,
    # `-c createTablesFromUploads`); otherwise it is refused as `unknown_table`.
    create_tables_from_uploads: bool = False
    # OpenLineage: the receiver's base URL (Marquez, DataHub...), None: no events are sent;
    # the API key's secret (read only when set) and the jobs' namespace (the stack's name).
    lineage_url: str | None = None
    lineage_api_key_secret_arn: str | None = None
    lineage_namespace: str = "wap"
    # What a job run's billed resources cost (contracts/pricing.py): the region's prices,
    # or the deploy's own (`-c emrPrices=...`).
    region: str | None = None
    emr_prices: str | None = None

    @property
    def blocked_start(self) -> timedelta:
        return timedelta(seconds=self.blocked_start_seconds)

    @property
    def lock_lease(self) -> timedelta:
        """How long a table lock holds without renewal: one job run waiting and running,
        plus publish, finish and the alert. Renewed whenever a job run starts."""
        return timedelta(minutes=self.job_queue_timeout_minutes + self.job_timeout_minutes + 30)

    def report_uri(self, table: str, ingest_id: str, attempt: int, job_try: int = 1) -> str:
        """Where one job run (attempt = branch, try = retry on it) writes its audit report."""
        run = f"attempt-{attempt}" + (f"-try-{job_try}" if job_try > 1 else "")
        return f"{_dir(self.reports_prefix)}{table}/{ingest_id}/{run}/report.json"

    def log_uri(self, ingest_id: str) -> str:
        """The EMR Serverless log root of an ingest (the service adds application/job ids)."""
        return f"{_dir(self.logs_prefix)}{ingest_id}/"

    def table_config_uri(self, table: str) -> str | None:
        """The table's YAML config, when a config prefix is deployed."""
        if not self.tables_config_prefix:
            return None
        return f"{_dir(self.tables_config_prefix)}{table}.yaml"

    def dataset_config_uri(self, name: str) -> str | None:
        """A multi-table dataset's YAML config (`datasets/<name>.yaml` beside the table
        configs), when a config prefix is deployed."""
        if not self.tables_config_prefix:
            return None
        return f"{_dir(self.tables_config_prefix)}{DATASET_CONFIGS_DIR}/{name}.yaml"


def job_retry_delay(settings: Settings, failed_try: int) -> int:
    """Seconds to wait before the try after `failed_try` (exponential backoff)."""
    return settings.job_retry_base_seconds * 2 ** (failed_try - 1)


def _dir(prefix: str) -> str:
    return prefix if prefix.endswith("/") else prefix + "/"


def _positive_int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 1) -> int:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def _boolean(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _http_url(env: Mapping[str, str], name: str) -> str | None:
    raw = env.get(name)
    if not raw:
        return None
    if not raw.startswith(("http://", "https://")) or "@" in raw.split("/")[2]:
        # No credentials in the URL: an API key belongs in its secret, never in a variable.
        raise ConfigError(f"{name} must be an http(s):// URL without credentials")
    return raw.rstrip("/")


def _catalog_credentials(env: Mapping[str, str]) -> CatalogCredentials | None:
    try:
        return CatalogCredentials.from_environment(env)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build `Settings` from `env` (default: the process environment).

    Raises `ConfigError` naming every missing or invalid variable.
    """
    env = os.environ if env is None else env
    missing = [name for name in _REQUIRED if not env.get(name)]
    if missing:
        raise ConfigError(f"missing environment variables: {', '.join(missing)}")
    for name in (c.ENV_REPORTS_PREFIX, c.ENV_LOGS_PREFIX):
        if not env[name].startswith(("s3://", "file://")):
            raise ConfigError(f"{name} must be an s3:// URI, got {env[name]!r}")
    return Settings(
        ledger_table=env[c.ENV_LEDGER_TABLE],
        nessie_uri=env[c.ENV_NESSIE_URI].rstrip("/"),
        emr_application_id=env[c.ENV_EMR_APPLICATION_ID],
        emr_execution_role_arn=env[c.ENV_EMR_EXECUTION_ROLE_ARN],
        job_entrypoint=env[c.ENV_JOB_ENTRYPOINT],
        reports_prefix=env[c.ENV_REPORTS_PREFIX],
        logs_prefix=env[c.ENV_LOGS_PREFIX],
        state_machine_arn=env[c.ENV_STATE_MACHINE_ARN],
        nessie_ui_url=env.get(c.ENV_NESSIE_UI_URL) or None,
        job_catalog_secret_arn=env.get(c.ENV_JOB_NESSIE_CREDENTIALS_SECRET_ARN) or None,
        catalog_credentials=_catalog_credentials(env),
        job_py_files=env.get(c.ENV_JOB_PY_FILES) or None,
        job_spark_parameters=env.get(c.ENV_JOB_SPARK_PARAMETERS) or None,
        artifacts_bucket=env[c.ENV_ARTIFACTS_BUCKET],
        tables_config_prefix=env.get(c.ENV_TABLES_CONFIG_PREFIX) or None,
        slack_secret_arn=env.get(c.ENV_SLACK_SECRET_ARN) or None,
        slack_channel=env.get(c.ENV_SLACK_CHANNEL) or None,
        max_publish_attempts=_positive_int(env, c.ENV_MAX_PUBLISH_ATTEMPTS, 3),
        branch_retention_days=_positive_int(env, c.ENV_BRANCH_RETENTION_DAYS, 14),
        job_timeout_minutes=_positive_int(env, c.ENV_JOB_TIMEOUT_MINUTES, 60),
        job_queue_timeout_minutes=_positive_int(env, c.ENV_JOB_QUEUE_TIMEOUT_MINUTES, 60),
        max_job_tries=_positive_int(env, c.ENV_MAX_JOB_TRIES, 3),
        job_retry_base_seconds=_positive_int(env, c.ENV_JOB_RETRY_BASE_SECONDS, 60, minimum=0),
        blocked_start_seconds=_positive_int(env, c.ENV_BLOCKED_START_SECONDS, 600),
        create_tables_from_uploads=_boolean(env, c.ENV_CREATE_TABLES_FROM_UPLOADS, False),
        lineage_url=_http_url(env, c.ENV_LINEAGE_URL),
        lineage_api_key_secret_arn=env.get(c.ENV_LINEAGE_API_KEY_SECRET_ARN) or None,
        lineage_namespace=env.get(c.ENV_LINEAGE_NAMESPACE) or "wap",
        region=env.get(c.ENV_AWS_REGION) or None,
        emr_prices=_emr_prices(env),
    )


def _emr_prices(env: Mapping[str, str]) -> str | None:
    raw = env.get(c.ENV_EMR_PRICES)
    if not raw:
        return None
    try:
        parse_prices(raw)
    except PricesError as exc:
        raise ConfigError(f"{c.ENV_EMR_PRICES}: {exc}") from None
    return raw
