"""`LocalAwsStack`: the whole AWS side of the service in-process, for tests and the `wap` CLI.

moto (S3, DynamoDB, Lambda API, EMR Serverless API, Step Functions with the
real ASL interpreted, EventBridge, Secrets Manager), our handlers dispatched
in-process, a local EMR Serverless executor running the Spark job, and the
S3 -> EventBridge -> trigger wiring. The Nessie server and (optionally) the
Slack stand-in run outside and are passed in by URL.

    from local.aws.emr_serverless import spark_job
    settings = StackSettings(nessie_api_v1=nessie.api_v1, job=spark_job(spark))
    with LocalAwsStack(settings) as stack:
        stack.drop_file("sales/orders/2026-11-22.parquet", data)   # -> trigger -> ...
        stack.wait_idle()
        stack.ledger().list_ingests()                             # the outcome

One stack per process at a time: the patches and the Lambda environment are global.
"""

from __future__ import annotations

import io
import json
import logging
import os
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local.aws.emr_serverless import JobFunction, LocalEmrServerless
from local.aws.lambda_dispatch import HANDLERS, LambdaDispatcher
from local.aws.moto_fidelity import make_dynamodb_writes_atomic
from local.aws.s3_events import S3EventBridge

_log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[2]
STATE_MACHINE_FILE = REPO_ROOT / "statemachine" / "ingest.asl.json"
ACCOUNT_ID = "123456789012"
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
}



class SavedEnvironment:
    """Sets environment variables and puts the previous values back on `restore()`.

    The handlers run in-process and read `os.environ`, so a stack sets its
    variables process-wide and must leave the process as it found it.
    """

    def __init__(self) -> None:
        self._saved: dict[str, str | None] = {}

    def set(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self._saved.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def restore(self) -> None:
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved = {}


def create_ledger_table(dynamodb: Any, name: str) -> None:
    """The ledger table as infra/pipeline.py deploys it (keys, indexes, TTL: one schema)."""
    from lambdas.common.ledger import TTL_ATTRIBUTE, table_schema

    dynamodb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **table_schema())
    dynamodb.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )

def substitute(definition: str, values: dict[str, str]) -> str:
    """Apply CloudFormation-style `${Name}` definition substitutions; every one must be known."""
    import re

    names = set(re.findall(r"\$\{([A-Za-z0-9]+)\}", definition))
    missing = names - set(values)
    if missing:
        raise KeyError(f"no value for state machine substitutions: {sorted(missing)}")
    for name in names:
        definition = definition.replace("${" + name + "}", values[name])
    return definition


def function_arn_substitution(name: str) -> str:
    """`job_status` -> `JobStatusFunctionArn` (docs/contracts.md)."""
    return "".join(part.capitalize() for part in name.split("_")) + "FunctionArn"


@dataclass
class StackSettings:
    """Names and knobs of one local stack."""

    nessie_api_v1: str
    job: JobFunction
    region: str = "us-east-1"
    source_bucket: str = "wap-source"
    artifacts_bucket: str = "wap-artifacts"
    ledger_table: str = "wap-ledger"
    state_machine_name: str = "wap-ingest"
    emr_workers: int = 1
    poll_interval_seconds: int = 1
    job_timeout_seconds: int = 600
    max_publish_attempts: int = 3
    max_job_tries: int = 3
    job_retry_base_seconds: int = 0  # no real sleeps locally: the backoff is a Wait state
    job_queue_timeout_minutes: int = 60
    branch_retention_days: int = 14
    nessie_ui_url: str | None = None
    slack_api_url: str | None = None
    slack_token: str | None = None
    slack_channel: str = "#wap-alerts"
    tables_dir: Path | None = None
    async_retry_delay: float = 0.5
    extra_env: dict[str, str] = field(default_factory=dict)


class LocalAwsStack:
    """Start with `start()` (or as a context manager); drop files; wait; read the ledger."""

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.dispatcher = LambdaDispatcher(async_retry_delay=settings.async_retry_delay)
        self.emr = LocalEmrServerless(settings.job, workers=settings.emr_workers)
        self.s3_events = S3EventBridge(self.dispatcher)
        self._mock: Any = None
        self._environment = SavedEnvironment()
        self.env: dict[str, str] = {}
        self.state_machine_arn = ""
        self.application_id = ""

    # ---- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> LocalAwsStack:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def start(self) -> LocalAwsStack:
        from moto import mock_aws

        from lambdas.common import aws as lambda_aws

        self._environment.set({**FAKE_CREDENTIALS, "AWS_DEFAULT_REGION": self.settings.region})
        make_dynamodb_writes_atomic()
        self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
        self._mock.start()
        lambda_aws.reset()
        try:
            self._create_resources()
            self.dispatcher.install()
            self.emr.install()
            self.s3_events.install()
        except Exception:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        from lambdas.common import aws as lambda_aws

        if self._mock is not None:
            self._abort_running_executions()
        self.s3_events.uninstall()
        self.emr.uninstall()
        self.dispatcher.uninstall()
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        lambda_aws.reset()
        self._environment.restore()

    def _abort_running_executions(self) -> None:
        """Stop what is still running so no interpreter thread outlives the mock."""
        try:
            sfn = self.client("stepfunctions")
            for execution in self.executions():
                if execution["status"] == "RUNNING":
                    sfn.stop_execution(
                        executionArn=execution["executionArn"], cause="local stack stopped"
                    )
        except Exception:  # stopping must never fail: this runs on test teardown
            _log.exception("could not stop running executions")

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=self.settings.region)

    def _create_resources(self) -> None:
        s = self.settings
        s3 = self.client("s3")
        for bucket in (s.source_bucket, s.artifacts_bucket):
            s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(
            Bucket=s.source_bucket, VersioningConfiguration={"Status": "Enabled"}
        )
        s3.put_bucket_notification_configuration(
            Bucket=s.source_bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
        )
        if s.tables_dir is not None:
            for path in sorted(Path(s.tables_dir).glob("*.yaml")):
                s3.put_object(
                    Bucket=s.artifacts_bucket, Key=f"tables/{path.name}", Body=path.read_bytes()
                )

        create_ledger_table(self.client("dynamodb"), s.ledger_table)

        role_arn = self.client("iam").create_role(
            RoleName="wap-local",
            AssumeRolePolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": "sts:AssumeRole",
                            "Principal": {
                                "Service": [
                                    "lambda.amazonaws.com",
                                    "states.amazonaws.com",
                                    "emr-serverless.amazonaws.com",
                                ]
                            },
                        }
                    ],
                }
            ),
        )["Role"]["Arn"]
        self.application_id = self.client("emr-serverless").create_application(
            name="wap", releaseLabel="emr-7.12.0", type="SPARK"
        )["applicationId"]

        slack_secret_arn = ""
        if s.slack_token:
            slack_secret_arn = self.client("secretsmanager").create_secret(
                Name="wap/slack", SecretString=json.dumps({"token": s.slack_token})
            )["ARN"]

        sm_arn = f"arn:aws:states:{s.region}:{ACCOUNT_ID}:stateMachine:{s.state_machine_name}"
        env = {
            "WAP_LEDGER_TABLE": s.ledger_table,
            "WAP_NESSIE_URI": s.nessie_api_v1,
            "WAP_EMR_APPLICATION_ID": self.application_id,
            "WAP_EMR_EXECUTION_ROLE_ARN": role_arn,
            "WAP_JOB_ENTRYPOINT": f"s3://{s.artifacts_bucket}/spark_jobs/wap_job.py",
            "WAP_ARTIFACTS_BUCKET": s.artifacts_bucket,
            "WAP_REPORTS_PREFIX": f"s3://{s.artifacts_bucket}/reports/",
            "WAP_LOGS_PREFIX": f"s3://{s.artifacts_bucket}/logs/",
            "WAP_STATE_MACHINE_ARN": sm_arn,
            "WAP_SLACK_CHANNEL": s.slack_channel,
            "WAP_MAX_PUBLISH_ATTEMPTS": str(s.max_publish_attempts),
            "WAP_MAX_JOB_TRIES": str(s.max_job_tries),
            "WAP_JOB_RETRY_BASE_SECONDS": str(s.job_retry_base_seconds),
            "WAP_JOB_QUEUE_TIMEOUT_MINUTES": str(s.job_queue_timeout_minutes),
            "WAP_BRANCH_RETENTION_DAYS": str(s.branch_retention_days),
            "WAP_JOB_TIMEOUT_MINUTES": str(max(1, s.job_timeout_seconds // 60)),
            "POWERTOOLS_SERVICE_NAME": "wap",
        }
        if s.tables_dir is not None:
            env["WAP_TABLES_CONFIG_PREFIX"] = f"s3://{s.artifacts_bucket}/tables/"
        if slack_secret_arn:
            env["WAP_SLACK_SECRET_ARN"] = slack_secret_arn
        if s.slack_api_url:
            env["WAP_SLACK_API_URL"] = s.slack_api_url
        if s.nessie_ui_url:
            env["WAP_NESSIE_UI_URL"] = s.nessie_ui_url
        env.update(s.extra_env)
        self.env = env
        # Handlers run in this process and read os.environ (one environment for all).
        self._environment.set(env)

        lambda_client = self.client("lambda")
        arns: dict[str, str] = {}
        for name in HANDLERS:
            arns[name] = lambda_client.create_function(
                FunctionName=name,
                Runtime="python3.11",
                Role=role_arn,
                Handler=f"lambdas.{name}.handler.handler",
                Code={"ZipFile": _empty_zip()},
                Timeout=300,
                Environment={"Variables": env},
            )["FunctionArn"]

        events = self.client("events")
        events.put_rule(
            Name="wap-source-object-created",
            State="ENABLED",
            EventPattern=json.dumps(
                {
                    "source": ["aws.s3"],
                    "detail-type": ["Object Created"],
                    "detail": {"bucket": {"name": [s.source_bucket]}},
                }
            ),
        )
        events.put_targets(
            Rule="wap-source-object-created", Targets=[{"Id": "trigger", "Arn": arns["trigger"]}]
        )

        substitutions = {function_arn_substitution(n): arn for n, arn in arns.items()}
        substitutions.update(
            PollIntervalSeconds=str(s.poll_interval_seconds),
            JobTimeoutSeconds=str(s.job_timeout_seconds),
        )
        definition = substitute(STATE_MACHINE_FILE.read_text(), substitutions)
        self.state_machine_arn = self.client("stepfunctions").create_state_machine(
            name=s.state_machine_name,
            definition=definition,
            roleArn=role_arn,
        )["stateMachineArn"]
        assert self.state_machine_arn == sm_arn, self.state_machine_arn

    # ---- using it ------------------------------------------------------------------------

    def drop_file(self, key: str, body: bytes) -> dict[str, Any]:
        """Upload to the source bucket (S3 then notifies the trigger through EventBridge)."""
        response = self.client("s3").put_object(
            Bucket=self.settings.source_bucket, Key=key, Body=body
        )
        return {
            "key": key,
            "version_id": response.get("VersionId"),
            "etag": response["ETag"].strip('"'),
        }

    def invoke(self, function: str, event: Any) -> Any:
        """Synchronous invoke through the Lambda API; raises on a function error."""
        response = self.client("lambda").invoke(
            FunctionName=function, Payload=json.dumps(event).encode()
        )
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            raise LambdaInvocationError(payload)
        return payload

    def emr_job_run(self, job_run_id: str) -> Any:
        """The local EMR double's view of a job run (read without AWS credentials' checks)."""
        from moto.emrserverless.models import emrserverless_backends

        backend = emrserverless_backends[ACCOUNT_ID][self.settings.region]
        return backend.get_job_run(self.application_id, job_run_id)

    def ledger(self) -> Any:
        from lambdas.common.ledger import Ledger

        return Ledger(self.settings.ledger_table, self._dynamodb())

    def _dynamodb(self) -> Any:
        import boto3

        return boto3.resource("dynamodb", region_name=self.settings.region)

    def executions(self) -> list[dict[str, Any]]:
        sfn = self.client("stepfunctions")
        return sfn.list_executions(stateMachineArn=self.state_machine_arn)["executions"]

    def execution_history(self, execution_arn: str) -> list[dict[str, Any]]:
        return self.client("stepfunctions").get_execution_history(
            executionArn=execution_arn, maxResults=1000
        )["events"]

    def busy(self) -> bool:
        if not self.dispatcher.async_idle() or not self.emr.idle():
            return True
        return any(e["status"] == "RUNNING" for e in self.executions())

    def wait_idle(self, timeout: float = 300, *, interval: float = 0.2) -> None:
        """Until no trigger is pending, no job runs and no execution is running."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while time.monotonic() < deadline:
            quiet = 0 if self.busy() else quiet + 1
            if quiet >= 3:  # stable: nothing started from a finishing step
                return
            time.sleep(interval)
        raise TimeoutError(f"local stack still busy after {timeout} s: {self.describe()}")

    def describe(self) -> dict[str, Any]:
        """A compact view of ledger, locks and executions (for errors and the CLI)."""
        ledger = self.ledger()
        return {
            "ingests": [
                {k: i.get(k) for k in ("ingest_id", "table", "key", "status", "error")}
                for i in ledger.list_ingests()
            ],
            "locks": [vars(lock) for lock in ledger.list_locks()],
            "executions": [(e["name"], e["status"]) for e in self.executions()],
        }


class LambdaInvocationError(RuntimeError):
    """A synchronous invocation returned a function error (payload attached)."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload
        super().__init__(
            f"{payload.get('errorType')}: {payload.get('errorMessage')}"
            if isinstance(payload, dict)
            else str(payload)
        )


def _empty_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README", "handlers are dispatched in-process by local.aws")
    return buffer.getvalue()
