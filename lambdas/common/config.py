"""Typed Lambda configuration, read once from the environment and validated at the edge."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from lambdas.common import constants as c
from lambdas.common.exceptions import ConfigError

_REQUIRED = (
    c.ENV_LEDGER_TABLE,
    c.ENV_NESSIE_URI,
    c.ENV_EMR_APPLICATION_ID,
    c.ENV_EMR_EXECUTION_ROLE_ARN,
    c.ENV_JOB_ENTRYPOINT,
    c.ENV_REPORTS_PREFIX,
    c.ENV_LOGS_PREFIX,
    c.ENV_STATE_MACHINE_ARN,
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
    nessie_ui_url: str | None = None
    job_py_files: str | None = None
    job_spark_parameters: str | None = None
    artifacts_bucket: str | None = None
    tables_config_prefix: str | None = None
    slack_secret_arn: str | None = None
    slack_channel: str | None = None
    max_publish_attempts: int = 3
    branch_retention_days: int = 14
    job_timeout_minutes: int = 60

    def report_uri(self, table: str, ingest_id: str, attempt: int) -> str:
        """Where attempt `attempt` of an ingest writes its audit report."""
        return f"{_dir(self.reports_prefix)}{table}/{ingest_id}/attempt-{attempt}/report.json"

    def log_uri(self, ingest_id: str) -> str:
        """The EMR Serverless log root of an ingest (the service adds application/job ids)."""
        return f"{_dir(self.logs_prefix)}{ingest_id}/"

    def table_config_uri(self, table: str) -> str | None:
        """The table's YAML config, when a config prefix is deployed."""
        if not self.tables_config_prefix:
            return None
        return f"{_dir(self.tables_config_prefix)}{table}.yaml"


def _dir(prefix: str) -> str:
    return prefix if prefix.endswith("/") else prefix + "/"


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be >= 1, got {value}")
    return value


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
        job_py_files=env.get(c.ENV_JOB_PY_FILES) or None,
        job_spark_parameters=env.get(c.ENV_JOB_SPARK_PARAMETERS) or None,
        artifacts_bucket=env.get(c.ENV_ARTIFACTS_BUCKET) or None,
        tables_config_prefix=env.get(c.ENV_TABLES_CONFIG_PREFIX) or None,
        slack_secret_arn=env.get(c.ENV_SLACK_SECRET_ARN) or None,
        slack_channel=env.get(c.ENV_SLACK_CHANNEL) or None,
        max_publish_attempts=_positive_int(env, c.ENV_MAX_PUBLISH_ATTEMPTS, 3),
        branch_retention_days=_positive_int(env, c.ENV_BRANCH_RETENTION_DAYS, 14),
        job_timeout_minutes=_positive_int(env, c.ENV_JOB_TIMEOUT_MINUTES, 60),
    )
