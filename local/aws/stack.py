"""`LocalAwsStack`: the whole AWS side of the service in-process, for tests and the `wap` CLI.

moto (S3, DynamoDB, Lambda API, EMR Serverless API, Step Functions with the
real ASL interpreted, EventBridge, Secrets Manager), our handlers dispatched
in-process, a local EMR Serverless executor running the Spark job, and the
S3 -> EventBridge -> trigger wiring. The Nessie server and (optionally) the
Slack stand-in run outside and are passed in by URL.

What the deploy decides comes from the synthesized template (local/aws/template.py):
each Lambda's handler, runtime, memory, timeout and environment, the state machine's
name, definition and substitutions, the EMR application, the S3 event rule. Its
references are resolved against the resources created here (local/aws/intrinsics.py);
local departures are only those of local/aws/overrides.py.

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
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from contracts.catalog_authorization import COMPONENT_ROLES
from contracts.catalog_tokens import CatalogCredentials
from contracts.layout import TABLES_PREFIX
from infra.constants import DEFAULT_REGION
from local.aws import job_waits
from local.aws.botocore_data import share_botocore_data
from local.aws.emr_serverless import JobFunction, LocalEmrServerless
from local.aws.iam import (
    STATE_MACHINE_INTERPRETER_KEY,
    IamEnforcer,
    Principal,
    Statement,
    statements_of,
)
from local.aws.intrinsics import Resolver, UnresolvedIntrinsic, substitute_definition
from local.aws.lambda_dispatch import LambdaDispatcher
from local.aws.lambda_sandbox import (
    Sandbox,
    current_sandbox,
    default_session_sharing_models,
    reserved_environment,
)
from local.aws.moto_fidelity import (
    ScaledRetryClock,
    make_dynamodb_requests_atomic,
    make_start_execution_atomic,
    make_transactions_item_scoped,
    page_execution_histories,
    validate_each_definition_once,
)
from local.aws.overrides import Kind, LocalParityError, apply_overrides, common_environment
from local.aws.s3_events import S3EventBridge
from local.aws.schedule import LocalSchedule, ScheduledTarget, rate_seconds
from local.aws.template import FunctionResource, StackTemplate, TemplateError, stack_template

_log = logging.getLogger(__name__)
REPO_ROOT = Path(__file__).resolve().parents[2]
ACCOUNT_ID = "123456789012"
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
}
INGEST_RULE = "wap-source-object-created"


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


def create_bucket(s3: Any, name: str, region: str) -> None:
    """A bucket in `region` (S3 wants a location constraint outside us-east-1, none in it)."""
    extra = (
        {}
        if region == "us-east-1"
        else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    )
    s3.create_bucket(Bucket=name, **extra)


def create_ledger_table(dynamodb: Any, name: str) -> None:
    """The ledger table as infra/pipeline.py deploys it (keys, indexes, TTL: one schema)."""
    from ingestion.ledger import TTL_ATTRIBUTE, table_schema

    dynamodb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", **table_schema())
    dynamodb.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )


def alb_dns_name(nessie_api_v1: str) -> str:
    """Where the catalog's load balancer name points locally: our server's `host:port`.

    The template reaches Nessie at `http://<ALB DNS name>/api/v1` (and /api/v2, and the
    UI at the root), so binding the DNS name gives every Nessie URL from the template.
    """
    parts = urlsplit(nessie_api_v1)
    if parts.scheme != "http" or not parts.netloc or parts.path.rstrip("/") != "/api/v1":
        raise ValueError(
            f"nessie_api_v1 {nessie_api_v1!r}: expected http://host:port/api/v1 (the template "
            "builds Nessie URLs as http://<load balancer>/api/v1)"
        )
    return parts.netloc


def _local_emr_prices() -> str:
    """The deploy setting `emrPrices` of every local stack: us-east-1's list prices.

    The local EMR stand-in bills what the local run used; no AWS region's price applies
    to it, and the local region (eu-west-1) has none in contracts/pricing.py, so its loads
    would cost "unknown". A local load is priced at these nominal rates instead, labelled
    `configured` as any deploy's own prices are."""
    from contracts.pricing import EMR_SERVERLESS_PRICES

    nominal = EMR_SERVERLESS_PRICES["us-east-1"]
    return (
        f"vcpu={nominal.vcpu_hour},memory={nominal.memory_gb_hour},"
        f"storage={nominal.storage_gb_hour}"
    )


LOCAL_EMR_PRICES = _local_emr_prices()


@dataclass
class StackSettings:
    """Names and knobs of one local stack.

    The template decides everything else (local/aws/template.py); the knobs marked
    "override" replace template values through local/aws/overrides.py only.
    """

    nessie_api_v1: str
    job: JobFunction
    # The deploy context the template is synthesized with (`cdk synth -c ...`).
    region: str = DEFAULT_REGION
    slack_channel: str = "#wap-alerts"
    # `-c createTablesFromUploads=true`: an upload for a table with neither a config nor a
    # table on main creates it (by default it is refused as `unknown_table`).
    create_tables: bool = False
    # Names CloudFormation would generate on AWS (the template leaves them open).
    source_bucket: str = "wap-source"
    artifacts_bucket: str = "wap-artifacts"
    lake_bucket: str = "wap-lake"
    ledger_table: str = "wap-ledger"
    emr_workers: int = 1
    # Overrides (None: the template's value).
    poll_interval_seconds: int | None = 1
    job_timeout_seconds: int | None = None
    max_publish_attempts: int | None = None
    job_retry_base_seconds: int | None = 0  # no real sleeps locally: the backoff is a Wait state
    nessie_ui_url: str | None = None
    slack_api_url: str | None = None
    lineage_url: str | None = None  # an OpenLineage receiver (local/lineage_receiver.py)
    aws_console_links: bool = False  # alerts link to the AWS console (there is none locally)
    # The Slack secret's value (the template creates it empty; operators set it on AWS).
    slack_token: str | None = None
    tables_dir: Path | None = None
    async_retry_delay: float = 0.5
    # Scales the state machine's Retry waits (1: as defined; tests exhausting a Retry use 0).
    state_retry_scale: float = 1.0
    # How often the schedule rules run, per target function; None: the template's rate
    # (the maintenance run's is a day: tests invoke it instead).
    sweeper_every_seconds: float | None = None
    maintenance_every_seconds: float | None = None
    blocked_start_seconds: int | None = None  # None: the template's WAP_BLOCKED_START_SECONDS
    # The functions' stdout (their Powertools logs); None: the process's stdout, as on AWS
    # a function's stdout is its log. `wap` passes its command log (wap/runtime/command_log.py).
    lambda_log_stream: Any = None
    # A template to run instead of the synthesized one (tests of the template contract).
    template: StackTemplate | None = None
    # The catalog client of each role (the local Nessie's identity provider, e.g.
    # `RunningServer.credentials`): each function calls Nessie as its component's role
    # and the job as wap-job. None: no tokens (a catalog without authentication).
    catalog_credentials: Callable[[str], CatalogCredentials] | None = None

    def catalog_environment(self, handler: str) -> dict[str, str]:
        """The catalog client variables of the function whose handler is `handler`
        (`lambdas.<component>.handler.handler`), or of the job (`handler` "job")."""
        component = "job" if handler == "job" else handler.split(".")[1]
        role = COMPONENT_ROLES.get(component)
        if self.catalog_credentials is None or role is None:
            return {}
        return self.catalog_credentials(role).environment()

    def function_catalog_overrides(self, handler: str) -> dict[str, str]:
        """What a function's catalog client differs in from the template's: only the token
        endpoint (Cognito's on AWS, the local identity provider's here). Its client id is
        the template's client, bound to the local client of its role, and its secret is
        read from Secrets Manager by the template's ARN, as on AWS (the stack creates the
        secrets: `_create_catalog_identity`), so each function's grant is used."""
        from contracts.catalog_tokens import ENV_TOKEN_ENDPOINT

        environment = self.catalog_environment(handler)
        return {ENV_TOKEN_ENDPOINT: environment[ENV_TOKEN_ENDPOINT]} if environment else {}

    def deploy_context(self) -> dict[str, str]:
        """The `-c` values this local deployment is synthesized with."""
        context = {
            "region": self.region,
            "slackChannel": self.slack_channel,
            "emrPrices": LOCAL_EMR_PRICES,
        }
        if self.create_tables:
            context["createTablesFromUploads"] = "true"
        return context

    def overrides(self) -> dict[str, str]:
        """Template values replaced locally, by name (each one listed in OVERRIDES)."""
        values: dict[str, str] = {}
        if self.nessie_ui_url:
            values["WAP_NESSIE_UI_URL"] = self.nessie_ui_url
        if self.slack_api_url:
            values["WAP_SLACK_API_URL"] = self.slack_api_url
        if self.lineage_url:
            values["WAP_LINEAGE_URL"] = self.lineage_url
        if not self.aws_console_links:
            values["WAP_AWS_CONSOLE_LINKS"] = "false"
        if self.job_timeout_seconds is not None:
            values["JobTimeoutSeconds"] = str(self.job_timeout_seconds)
            values["WAP_JOB_TIMEOUT_MINUTES"] = str(max(1, self.job_timeout_seconds // 60))
        if self.poll_interval_seconds is not None:
            values["PollIntervalSeconds"] = str(self.poll_interval_seconds)
        if self.job_retry_base_seconds is not None:
            values["WAP_JOB_RETRY_BASE_SECONDS"] = str(self.job_retry_base_seconds)
        if self.max_publish_attempts is not None:
            values["WAP_MAX_PUBLISH_ATTEMPTS"] = str(self.max_publish_attempts)
        if self.blocked_start_seconds is not None:
            values["WAP_BLOCKED_START_SECONDS"] = str(self.blocked_start_seconds)
        return values


def _layer_paths(template: StackTemplate, function: FunctionResource) -> tuple[str, ...]:
    """The `python/` directories of the dependency layers `function` names in the template
    (built by infra/bundling.py, as the synth built them): what its sandbox may import
    zone data from, as Lambda's /opt/python."""
    from infra import bundling
    from infra.constants import SourceTree

    known = SourceTree().dependency_layers()
    paths = []
    for layer in function.properties.get("Layers", []):
        construct_id = template.path(layer["Ref"]).rsplit("/", 1)[-1]
        if construct_id not in known:
            raise TemplateError(
                f"Lambda {function.path} has layer {construct_id!r}: the local stack knows "
                f"the dependency layers {sorted(known)} (infra/constants.py)"
            )
        layer_dir = bundling.dependency_layer(requirements=known[construct_id])
        paths.append(str(layer_dir / "python"))
    return tuple(paths)


@dataclass(frozen=True)
class LocalFunction:
    """One Lambda as the local stack created it from the template."""

    name: str
    arn: str
    configuration: dict[str, Any]  # what was passed to CreateFunction


class LocalAwsStack:
    """Start with `start()` (or as a context manager); drop files; wait; read the ledger."""

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.dispatcher = LambdaDispatcher(
            async_retry_delay=settings.async_retry_delay, log_stream=settings.lambda_log_stream
        )
        self.emr = LocalEmrServerless(settings.job, workers=settings.emr_workers)
        self.s3_events = S3EventBridge(self.dispatcher)
        self.iam = IamEnforcer(region=settings.region, account=ACCOUNT_ID)
        self._retry_clock = ScaledRetryClock(settings.state_retry_scale)
        self.schedule = LocalSchedule(self.dispatcher.invoke_async)
        self._mock: Any = None
        # Tests poll the ledger and the executions: one ledger (a boto3 resource) and clients
        # per polling thread, not one per poll (building one costs more CPU than the call;
        # boto3's resources are not shared across threads).
        self._per_thread = threading.local()
        self._environment = SavedEnvironment()
        self.template: StackTemplate | None = None
        self.functions: dict[str, LocalFunction] = {}
        self.env: dict[str, str] = {}  # variables every function that has them shares
        self.state_machine_definition = ""
        self.state_machine_arn = ""
        self.application_id = ""
        self._resolver: Resolver | None = None

    # ---- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> LocalAwsStack:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def start(self) -> LocalAwsStack:
        from moto import mock_aws

        from ingestion import aws as lambda_aws

        # Before any patching: a cold cache runs `cdk synth`, which must not see the mock.
        self.template = self.settings.template or stack_template(self.settings.deploy_context())
        if self.template.region != self.settings.region:
            raise LocalParityError(
                f"the template is for {self.template.region}, the local stack runs in "
                f"{self.settings.region}"
            )
        self._environment.set({**FAKE_CREDENTIALS, "AWS_DEFAULT_REGION": self.settings.region})
        share_botocore_data()
        make_dynamodb_requests_atomic()
        make_transactions_item_scoped()
        make_start_execution_atomic()
        validate_each_definition_once()
        page_execution_histories()
        self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
        self._mock.start()
        default_session_sharing_models()  # after the mock dropped the process's
        lambda_aws.reset()
        try:
            self._create_resources()
            self.iam.install()
            self._retry_clock.install()
            self.dispatcher.install()
            self.emr.install()
            job_waits.install(self.emr.idle)
            self.s3_events.install()
            self.schedule.start()
        except Exception:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        from ingestion import aws as lambda_aws

        self.schedule.stop()
        if self._mock is not None:
            self._abort_running_executions()
        self.s3_events.uninstall()
        job_waits.uninstall(self.emr.idle)
        self.emr.uninstall()
        self.dispatcher.uninstall()
        self.iam.uninstall()
        self._retry_clock.uninstall()
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        self._per_thread = threading.local()
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
        """A boto3 client for `service`, signed as whoever calls: the harness, or inside a
        handler the function's role (its sandbox's session). Kept per calling thread and
        sandbox: tests and waits call this in loops, and building a client costs more CPU
        than most calls through it."""
        import boto3

        sandbox = current_sandbox()
        clients = getattr(self._per_thread, "clients", None)
        if clients is None:
            clients = self._per_thread.clients = {}
        key = (service, None if sandbox is None else id(sandbox))
        if key not in clients:
            # The entry keeps its sandbox alive, so no later sandbox (a function registered
            # again) can take that id and be handed a client signed with another role.
            clients[key] = (sandbox, boto3.client(service, region_name=self.settings.region))
        return clients[key][1]

    # ---- resources, from the template ------------------------------------------------------

    def _create_resources(self) -> None:
        assert self.template is not None
        s = self.settings
        resolver = Resolver(self.template, account_id=ACCOUNT_ID, region=s.region)
        self._resolver = resolver
        self._create_storage(resolver)
        create_ledger_table(self.client("dynamodb"), s.ledger_table)
        resolver.bind(
            "Pipeline/Ledger",
            s.ledger_table,
            Arn=f"arn:aws:dynamodb:{s.region}:{ACCOUNT_ID}:table/{s.ledger_table}",
        )
        dlq_url = self.client("sqs").create_queue(QueueName="wap-ingest-dlq")["QueueUrl"]
        resolver.bind(
            "Pipeline/IngestDlq", dlq_url, Arn=f"arn:aws:sqs:{s.region}:{ACCOUNT_ID}:wap-ingest-dlq"
        )
        functions = self.template.functions()
        _, machine = self.template.only("AWS::StepFunctions::StateMachine")
        roles = {
            name: self.template.role_of(function.properties) for name, function in functions.items()
        }
        roles["state-machine"] = self.template.role_of(machine, "RoleArn")
        roles["job"] = self.template.logical_id("Compute/JobRole")
        # One IAM and one STS client for every role (a client costs more than its calls).
        iam, sts = self.client("iam"), self.client("sts")
        role_arns = {lid: self._create_role(resolver, lid, iam) for lid in set(roles.values())}
        self._create_emr_application(resolver)
        self._create_slack_secret(resolver)
        self._create_catalog_identity(resolver)
        resolver.bind("Catalog/Alb", DNSName=alb_dns_name(s.nessie_api_v1))

        overrides = s.overrides()
        environments: dict[str, dict[str, str]] = {}
        lambda_client = self.client("lambda")
        for name, function in functions.items():
            where = f"Lambda {function.path}"
            variables = {
                key: resolver.resolve_text(value, f"{where} Environment.{key}")
                for key, value in function.environment.items()
            }
            environments[name] = apply_overrides(Kind.ENVIRONMENT, variables, overrides, where)
            configuration = {
                "FunctionName": name,
                "Runtime": function.properties["Runtime"],
                "Role": role_arns[roles[name]],
                "Handler": function.handler,
                "MemorySize": function.properties.get("MemorySize", 128),
                "Timeout": function.properties.get("Timeout", 3),
                "Environment": {"Variables": environments[name]},
            }
            arn = lambda_client.create_function(**configuration, Code={"ZipFile": _empty_zip()})[
                "FunctionArn"
            ]
            resolver.bind(function.path, name, Arn=arn)
            self.functions[name] = LocalFunction(name, arn, configuration)

        # Policies last: they name the functions, the queue, the application, the secret.
        credentials, statements = {}, {}
        for lid, arn in role_arns.items():
            credentials[lid], statements[lid] = self._attach_policies(resolver, lid, arn, iam, sts)
        self.iam.grant_keys = self.template.grants()
        for principal, lid in roles.items():
            key = credentials[lid]["AWS_ACCESS_KEY_ID"]
            if principal == "state-machine":
                key = STATE_MACHINE_INTERPRETER_KEY  # moto's interpreter signs with it
            self.iam.add(
                key, Principal(principal, self.template.path(lid), role_arns[lid], statements[lid])
            )
        self.emr.credentials = credentials[roles["job"]]
        for name, function in functions.items():
            configuration = self.functions[name].configuration
            sandbox = Sandbox(
                name,
                layer_paths=_layer_paths(self.template, function),
                environment={
                    **environments[name],
                    **reserved_environment(
                        function_name=name,
                        handler=function.handler,
                        region=s.region,
                        memory_mb=configuration["MemorySize"],
                        runtime=configuration["Runtime"],
                        credentials=credentials[roles[name]],
                    ),
                    # Its catalog client, as its AWS credentials: the function's identity,
                    # not its configuration. Only the token endpoint differs from the
                    # template's (the local identity provider's, not Cognito's): the client id
                    # is the template's, bound to its role's local client, and the secret is
                    # read from Secrets Manager by the template's ARN, as on AWS.
                    **s.function_catalog_overrides(function.handler),
                },
            )
            self.dispatcher.register(
                name,
                function.handler,
                sandbox=sandbox,
                memory_limit_in_mb=configuration["MemorySize"],
                timeout_seconds=configuration["Timeout"],
                invoked_function_arn=self.functions[name].arn,
            )
        # The harness's own direct calls of plain functions (tests) read the process
        # environment; each handler sees only its sandbox's.
        self.env = common_environment(environments)
        # The job runs in this process, outside every function's sandbox: the process's
        # environment is the job's, as the driver's environment is on EMR Serverless.
        self._environment.set({**self.env, **s.catalog_environment("job")})

        self._create_ingest_rule(resolver)
        self._create_schedule_rules(resolver)
        self._create_state_machine(resolver, overrides)

    def _role_name(self, logical_id: str) -> str:
        assert self.template is not None
        return f"{self.template.stack_name}-{logical_id}"[:64]

    def _create_role(self, resolver: Resolver, logical_id: str, iam: Any) -> str:
        """The template's role in moto IAM (policies come later); binds and returns its ARN."""
        assert self.template is not None
        props = self.template.resources[logical_id]["Properties"]
        path, name = self.template.path(logical_id), self._role_name(logical_id)
        document = resolver.resolve(props["AssumeRolePolicyDocument"], f"role {path}")
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(document))["Role"][
            "Arn"
        ]
        resolver.bind(path, name, Arn=arn)
        return arn

    def _attach_policies(
        self,
        resolver: Resolver,
        logical_id: str,
        role_arn: str,
        iam: Any,
        sts: Any,
    ) -> tuple[dict[str, str], list[Statement]]:
        """Put the role's template policies on it. Returns the credentials of a session of
        the role (as Lambda's environment names them) and the policies' statements."""
        assert self.template is not None
        name = self._role_name(logical_id)
        statements: list[Statement] = []
        for policy_id, props in self.template.policies_of(logical_id).items():
            path = self.template.path(policy_id)
            document = resolver.resolve(props["PolicyDocument"], f"policy {path}")
            iam.put_role_policy(
                RoleName=name, PolicyName=policy_id, PolicyDocument=json.dumps(document)
            )
            statements += statements_of(path, document)
        session = sts.assume_role(RoleArn=role_arn, RoleSessionName=name)
        c = session["Credentials"]
        return (
            {
                "AWS_ACCESS_KEY_ID": c["AccessKeyId"],
                "AWS_SECRET_ACCESS_KEY": c["SecretAccessKey"],
                "AWS_SESSION_TOKEN": c["SessionToken"],
            },
            statements,
        )

    def _create_storage(self, resolver: Resolver) -> None:
        s = self.settings
        s3 = self.client("s3")
        for path, bucket in (
            ("Storage/Source", s.source_bucket),
            ("Storage/Artifacts", s.artifacts_bucket),
            ("Storage/Lake", s.lake_bucket),
        ):
            create_bucket(s3, bucket, s.region)
            resolver.bind(path, bucket, Arn=f"arn:aws:s3:::{bucket}")
        s3.put_bucket_versioning(
            Bucket=s.source_bucket, VersioningConfiguration={"Status": "Enabled"}
        )
        s3.put_bucket_notification_configuration(
            Bucket=s.source_bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
        )
        if s.tables_dir is not None:
            root = Path(s.tables_dir)
            # Table configs, and multi-table dataset configs under datasets/ (as deployed).
            for path in sorted([*root.glob("*.yaml"), *root.glob("datasets/*.yaml")]):
                s3.put_object(
                    Bucket=s.artifacts_bucket,
                    Key=f"{TABLES_PREFIX}{path.relative_to(root).as_posix()}",
                    Body=path.read_bytes(),
                )

    def _create_emr_application(self, resolver: Resolver) -> None:
        assert self.template is not None
        logical_id, props = self.template.only("AWS::EMRServerless::Application")
        where = f"EMR Serverless application {logical_id}"
        application = self.client("emr-serverless").create_application(
            name=resolver.resolve_text(props["Name"], where),
            releaseLabel=resolver.resolve_text(props["ReleaseLabel"], where),
            type=resolver.resolve_text(props["Type"], where),
        )
        self.application_id = application["applicationId"]
        resolver.bind(
            self.template.path(logical_id),
            self.application_id,
            ApplicationId=self.application_id,
            Arn=application["arn"],
        )

    def _create_slack_secret(self, resolver: Resolver) -> None:
        # Created empty like the deploy's (no token: alerts are not delivered) unless the
        # local stack was given the token an operator would put in.
        secrets = self.client("secretsmanager")
        extra = (
            {"SecretString": json.dumps({"token": self.settings.slack_token})}
            if (self.settings.slack_token)
            else {}
        )
        arn = secrets.create_secret(Name="wap/slack", **extra)["ARN"]
        resolver.bind("Alerts/SlackBotToken", arn)

    def _create_catalog_identity(self, resolver: Resolver) -> None:
        """The template's catalog clients (infra/identity.py): each machine role's client id
        and its client credentials secret, created in Secrets Manager as the deploy's holds
        them (JSON `client_id`, `client_secret`, `token_endpoint`, `scope`), with the local
        identity provider's client of that role."""
        from contracts import catalog_authorization as authz
        from infra.constants import CATALOG_RESOURCE_SERVER, construct_name

        assert self.template is not None
        secrets = self.client("secretsmanager")
        resolver.bind("Identity/Users", "local-user-pool")
        resolver.bind("Identity/Users/Login", "local")
        for role in authz.ROLES:
            secret_path = f"Identity/{construct_name(role)}Credentials"
            try:
                self.template.logical_id(secret_path)
            except TemplateError:
                continue  # a people's role: a group, no client
            client = self._local_client(role)
            resolver.bind(f"Identity/Users/{construct_name(role)}Client", client["client_id"])
            arn = secrets.create_secret(
                Name=f"wap/catalog-client/{role}",
                SecretString=json.dumps({**client, "scope": f"{CATALOG_RESOURCE_SERVER}/{role}"}),
            )["ARN"]
            resolver.bind(secret_path, arn)

    def _local_client(self, role: str) -> dict[str, str]:
        """The local identity provider's client of `role` (`catalog_credentials`, the local
        Nessie's), else one no token endpoint answers (a catalog without authentication)."""
        if self.settings.catalog_credentials is not None:
            credentials = self.settings.catalog_credentials(role)
            return {
                "client_id": credentials.client_id,
                "client_secret": credentials.client_secret,
                "token_endpoint": credentials.token_endpoint,
            }
        return {
            "client_id": f"local-{role}",
            "client_secret": f"local-{role}-unused",
            "token_endpoint": "http://127.0.0.1:9/no-identity-provider/token",
        }

    def _create_ingest_rule(self, resolver: Resolver) -> None:
        """The template's S3 "Object Created" rule (pattern and Lambda target), named locally."""
        assert self.template is not None
        rules = {
            lid: r["Properties"]
            for lid, r in self.template.of_type("AWS::Events::Rule").items()
            if "EventPattern" in r["Properties"]
        }
        if len(rules) != 1:
            raise LocalParityError(f"expected one event-pattern rule, found {sorted(rules)}")
        ((logical_id, props),) = rules.items()
        where = f"rule {self.template.path(logical_id)}"
        events = self.client("events")
        events.put_rule(
            Name=INGEST_RULE,
            State=props.get("State", "ENABLED"),
            EventPattern=json.dumps(resolver.resolve(props["EventPattern"], where)),
        )
        # Retry policy and dead-letter queue stay the dispatcher's (two async retries).
        events.put_targets(
            Rule=INGEST_RULE,
            Targets=[
                {"Id": target["Id"], "Arn": resolver.resolve_text(target["Arn"], where)}
                for target in props["Targets"]
            ],
        )

    def _create_schedule_rules(self, resolver: Resolver) -> None:
        """The template's schedule rules (the sweeper's, the maintenance run's), run by
        `self.schedule`."""
        assert self.template is not None
        by_arn = {function.arn: name for name, function in self.functions.items()}
        for logical_id, rule in sorted(self.template.of_type("AWS::Events::Rule").items()):
            props = rule["Properties"]
            if "ScheduleExpression" not in props or props.get("State") == "DISABLED":
                continue
            where = f"rule {self.template.path(logical_id)}"
            scaled = {
                "sweeper": self.settings.sweeper_every_seconds,
                "maintenance": self.settings.maintenance_every_seconds,
            }
            for target in props["Targets"]:
                arn = resolver.resolve_text(target["Arn"], where)
                if arn not in by_arn:
                    raise LocalParityError(f"{where}: target {arn} is not a local function")
                every = scaled.get(by_arn[arn]) or rate_seconds(props["ScheduleExpression"])
                self.schedule.add(ScheduledTarget(logical_id, by_arn[arn], every))

    def _create_state_machine(self, resolver: Resolver, overrides: dict[str, str]) -> None:
        assert self.template is not None
        logical_id, props = self.template.only("AWS::StepFunctions::StateMachine")
        where = f"state machine {self.template.path(logical_id)}"
        substitutions = {
            name: resolver.resolve_text(value, f"{where} DefinitionSubstitutions.{name}")
            for name, value in props.get("DefinitionSubstitutions", {}).items()
        }
        substitutions = apply_overrides(Kind.SUBSTITUTION, substitutions, overrides, where)
        self.state_machine_definition = substitute_definition(
            resolver.resolve_text(props["DefinitionString"], f"{where} DefinitionString"),
            substitutions,
            where,
        )
        name = resolver.resolve_text(props["StateMachineName"], where)
        self.state_machine_arn = self.client("stepfunctions").create_state_machine(
            name=name,
            definition=self.state_machine_definition,
            roleArn=resolver.resolve_text(props["RoleArn"], where),
        )["stateMachineArn"]
        resolver.bind(self.template.path(logical_id), self.state_machine_arn, Name=name)
        expected = self.env.get("WAP_STATE_MACHINE_ARN")
        if expected != self.state_machine_arn:
            raise LocalParityError(
                f"the Lambdas start executions of {expected}, the state machine is "
                f"{self.state_machine_arn}"
            )

    # ---- using it ------------------------------------------------------------------------

    def outputs(self) -> dict[str, str]:
        """The template's stack outputs, resolved against the local resources; outputs of
        resources the local stack does not create (the alarm topic, the ECS service) are
        left out."""
        assert self.template is not None and self._resolver is not None
        outputs = {}
        for name, output in self.template.body.get("Outputs", {}).items():
            try:
                outputs[name] = self._resolver.resolve_text(output["Value"], f"output {name}")
            except UnresolvedIntrinsic:
                continue
        return outputs

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
        """The stack's ledger, as a test or the CLI reads it (one per calling thread)."""
        from ingestion.ledger import Ledger

        ledger = getattr(self._per_thread, "ledger", None)
        if ledger is None:
            ledger = self._per_thread.ledger = Ledger(self.settings.ledger_table, self._dynamodb())
        return ledger

    def _dynamodb(self) -> Any:
        import boto3

        return boto3.resource("dynamodb", region_name=self.settings.region)

    def executions(self) -> list[dict[str, Any]]:
        sfn = self.client("stepfunctions")  # wait_idle() polls this too
        return sfn.list_executions(stateMachineArn=self.state_machine_arn)["executions"]

    def execution_history(self, execution_arn: str) -> list[dict[str, Any]]:
        """Every event of one execution, oldest first (all its pages)."""
        pages = self.client("stepfunctions").get_paginator("get_execution_history")
        return [e for page in pages.paginate(executionArn=execution_arn) for e in page["events"]]

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
                {k: i.field_value(k) for k in ("ingest_id", "table", "key", "status", "error")}
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
