"""The one stack: composes the constructs and wires the grants between them."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from aws_cdk import Annotations, ArnFormat, CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from contracts import catalog_authorization as authz
from contracts import catalog_tokens as tokens
from contracts.pricing import missing_prices
from infra import constants, names
from infra.alerts import AlertChannel, PipelineAlarms
from infra.catalog import CatalogAuth, NessieCatalog
from infra.compute import SparkCompute
from infra.constants import Capability, FunctionSpec, SourceTree
from infra.identity import CatalogIdentity, CatalogRoles
from infra.network import Network
from infra.observability import IngestObservability
from infra.pipeline import Pipeline, state_machine_arn
from infra.settings import DeploySettings
from infra.storage import Storage


def state_machine_values() -> dict[str, str]:
    """Non-ARN substitutions of statemachine/ingest.asl.json (same values locally and on AWS)."""
    return {
        "PollIntervalSeconds": str(constants.JOB_POLL_INTERVAL_SECONDS),
        "JobTimeoutSeconds": str(constants.JOB_TIMEOUT_MINUTES * 60),
    }


class WapStack(Stack):
    """Storage, catalog, compute, pipeline and alerts of the WAP ingestion service."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploySettings,
        source_tree: SourceTree | None = None,
        functions: tuple[FunctionSpec, ...] = constants.FUNCTIONS,
        **kwargs,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        source_tree = source_tree or SourceTree()
        # RETAIN_ON_UPDATE_OR_DELETE (CloudFormation's RetainExceptOnCreate): a first deploy that
        # rolls back deletes what it created, so running it again does not fail on names that
        # "already exist"; once created, data outlives an update or a stack deletion.
        removal = (
            RemovalPolicy.DESTROY
            if settings.destroy_data_on_delete
            else RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE
        )

        network = Network(
            self, "Network", nat_gateways=settings.nat_gateways, removal_policy=removal
        )
        storage = Storage(
            self,
            "Storage",
            removal_policy=removal,
            auto_delete_objects=settings.destroy_data_on_delete,
        )
        identity = CatalogIdentity(
            self,
            "Identity",
            roles=catalog_roles(functions),
            ui_callback_url=f"{ui_login_base(settings.nessie_ui_url)}/",
            removal_policy=removal,
        )
        catalog: NessieCatalog | None = None
        if settings.nessie_endpoint:
            base = settings.nessie_endpoint
            nessie_v1, nessie_v2, nessie_ui = f"{base}/api/v1", f"{base}/api/v2", base
        else:
            catalog = NessieCatalog(
                self,
                "Catalog",
                vpc=network.vpc,
                subnets=network.private_subnets,
                access_logs=storage.access_logs,
                removal_policy=removal,
                ui_allowed_cidr=settings.nessie_ui_allowed_cidr,
                adopt_tables=settings.adopt_nessie_tables,
                auth=CatalogAuth(
                    issuer_url=identity.issuer_url,
                    api_client_id=identity.cli_client.user_pool_client_id,
                    ui_client_id=identity.ui_client.user_pool_client_id,
                    ui_client_secret=identity.ui_client_secret,
                    rules=authz.load_rules(),
                ),
            )
            nessie_v1, nessie_v2, nessie_ui = catalog.api_v1_uri, catalog.api_v2_uri, catalog.ui_url
        # Where operators open the UI (e.g. through a port forward), used in Slack links.
        nessie_ui = settings.nessie_ui_url or nessie_ui

        compute = SparkCompute(
            self,
            "Compute",
            vpc=network.vpc,
            artifacts=storage.artifacts,
            release_label=settings.emr_release_label,
            max_cpu=settings.emr_max_cpu,
            max_memory=settings.emr_max_memory,
            pre_initialized=settings.emr_pre_initialized,
            idle_stop_minutes=settings.emr_idle_stop_minutes,
            nessie_uri_v2=nessie_v2,
            warehouse_uri=storage.warehouse_uri,
            source_tree=source_tree,
        )
        alert_channel = AlertChannel(
            self, "Alerts", removal_policy=removal, alarm_email=settings.alarm_email
        )

        state_machine_name = names.STATE_MACHINE.of(self.stack_name)
        environment = {
            "WAP_NESSIE_URI": nessie_v1,
            "WAP_NESSIE_UI_URL": nessie_ui,
            "WAP_EMR_APPLICATION_ID": compute.application.attr_application_id,
            "WAP_EMR_EXECUTION_ROLE_ARN": compute.execution_role.role_arn,
            "WAP_JOB_ENTRYPOINT": compute.entrypoint,
            "WAP_JOB_PY_FILES": compute.py_files,
            "WAP_JOB_SPARK_PARAMETERS": compute.spark_parameters,
            "WAP_ARTIFACTS_BUCKET": storage.artifacts.bucket_name,
            "WAP_TABLES_CONFIG_PREFIX": storage.tables_prefix,
            "WAP_REPORTS_PREFIX": storage.reports_prefix,
            "WAP_LOGS_PREFIX": storage.logs_prefix,
            "WAP_STATE_MACHINE_ARN": state_machine_arn(self, state_machine_name),
            "WAP_SLACK_SECRET_ARN": alert_channel.slack_token.secret_arn,
            "WAP_SLACK_CHANNEL": settings.slack_channel,
            "WAP_MAX_PUBLISH_ATTEMPTS": str(constants.MAX_PUBLISH_ATTEMPTS),
            "WAP_BRANCH_RETENTION_DAYS": str(constants.BRANCH_RETENTION_DAYS),
            "WAP_JOB_TIMEOUT_MINUTES": str(constants.JOB_TIMEOUT_MINUTES),
            "WAP_JOB_QUEUE_TIMEOUT_MINUTES": str(constants.JOB_QUEUE_TIMEOUT_MINUTES),
            "WAP_MAX_JOB_TRIES": str(constants.MAX_JOB_TRIES),
            "WAP_JOB_RETRY_BASE_SECONDS": str(constants.JOB_RETRY_BASE_SECONDS),
            "WAP_BLOCKED_START_SECONDS": str(settings.blocked_start_minutes * 60),
            "WAP_CREATE_TABLES_FROM_UPLOADS": str(settings.create_tables_from_uploads).lower(),
            "WAP_LINEAGE_NAMESPACE": self.stack_name,
            **({"WAP_LINEAGE_URL": settings.lineage_url} if settings.lineage_url else {}),
            **({"WAP_EMR_PRICES": settings.emr_prices} if settings.emr_prices else {}),
            **(
                {"WAP_LINEAGE_API_KEY_SECRET_ARN": settings.lineage_api_key_secret_arn}
                if settings.lineage_api_key_secret_arn
                else {}
            ),
        }
        # Said once, at synth (and by `wap doctor`): the loads' costs will be unknown.
        unpriced = missing_prices(self.region, settings.emr_prices)
        if unpriced:
            Annotations.of(self).add_warning(unpriced)
        pipeline = Pipeline(
            self,
            "Pipeline",
            functions=_as_deployed(functions, gc_delete=settings.gc_delete),
            environment=environment,
            vpc=network.vpc,
            subnets=network.private_subnets,
            source=storage.source,
            artifacts=storage.artifacts,
            state_machine_name=state_machine_name,
            substitutions=state_machine_values(),
            removal_policy=removal,
            source_tree=source_tree,
            maintenance_time_utc=settings.maintenance_time_utc,
        )
        PipelineAlarms(
            self,
            "Alarms",
            topic=alert_channel.topic,
            state_machine=pipeline.state_machine,
            dead_letter_queue=pipeline.dead_letter_queue,
            functions=pipeline.functions,
            queue_alarm_minutes=settings.queue_alarm_minutes,
        )
        self.observability = IngestObservability(
            self,
            "Observability",
            topic=alert_channel.topic,
            dead_letter_queue=pipeline.dead_letter_queue,
        )

        self._grant_job_role(storage, compute)
        _grant_catalog_credentials(pipeline, compute, identity)
        if "maintenance" in pipeline.functions:
            _configure_maintenance(pipeline, storage, gc_delete=settings.gc_delete)
        self._grant_functions(pipeline, storage, compute, alert_channel)
        if settings.lineage_api_key_secret_arn:
            _grant_lineage_key(
                pipeline,
                settings.lineage_api_key_secret_arn,
                settings.lineage_api_key_kms_key_arn,
            )
        if catalog is not None:
            catalog.listener.connections.allow_default_port_from(
                pipeline.nessie_clients, "Lambdas to the Nessie API"
            )
            catalog.listener.connections.allow_default_port_from(
                compute.security_group, "Spark workers to the Nessie API"
            )

        self.storage, self.catalog, self.compute = storage, catalog, compute
        self.pipeline, self.alert_channel = pipeline, alert_channel
        self.identity = identity
        CfnOutput(self, "SourceBucketName", value=storage.source.bucket_name)
        CfnOutput(self, "LakeBucketName", value=storage.lake.bucket_name)
        CfnOutput(self, "ArtifactsBucketName", value=storage.artifacts.bucket_name)
        CfnOutput(self, "NessieApiUrl", value=nessie_v2)
        CfnOutput(self, "NessieUiUrl", value=nessie_ui)
        CfnOutput(self, "StateMachineArn", value=pipeline.state_machine.state_machine_arn)
        CfnOutput(self, "LedgerTableName", value=pipeline.ledger.table_name)
        if "maintenance" in pipeline.functions:  # `wap --aws maintain` invokes it
            CfnOutput(
                self,
                "MaintenanceFunctionName",
                value=pipeline.functions["maintenance"].function_name,
            )
        # `wap --aws login` signs people in with these (docs/deploy.md).
        CfnOutput(self, "CatalogIssuerUrl", value=identity.issuer_url)
        CfnOutput(self, "CatalogLoginUrl", value=identity.login_base_url)
        CfnOutput(self, "CatalogCliClientId", value=identity.cli_client.user_pool_client_id)
        CfnOutput(self, "UserPoolId", value=identity.user_pool.user_pool_id)
        # `wap doctor` checks each machine role's token: role -> its secret's ARN (JSON).
        CfnOutput(
            self,
            "CatalogCredentialSecrets",
            value=self.to_json_string(
                {role: secret.secret_arn for role, secret in identity.credentials.items()}
            ),
        )
        CfnOutput(self, "SlackSecretArn", value=alert_channel.slack_token.secret_arn)
        CfnOutput(self, "AlarmTopicArn", value=alert_channel.topic.topic_arn)
        # Where `wap publish` / `discard --aws` send the OpenLineage event of a review.
        if settings.lineage_url:
            CfnOutput(self, "LineageUrl", value=settings.lineage_url)
        if settings.lineage_api_key_secret_arn:
            CfnOutput(self, "LineageApiKeySecretArn", value=settings.lineage_api_key_secret_arn)
        if catalog is not None:
            CfnOutput(self, "NessieClusterName", value=catalog.service.cluster.cluster_name)
            CfnOutput(self, "NessieServiceName", value=catalog.service.service_name)
        _suppress_framework_findings(self)

    @staticmethod
    def _grant_job_role(storage: Storage, compute: SparkCompute) -> None:
        role = compute.execution_role
        # The job reads the staged copy of the exact object version, never the source key.
        storage.artifacts.grant_read(role, f"{constants.STAGING_PREFIX}*")
        storage.lake.grant_read_write(role)
        storage.artifacts.grant_read(role, f"{constants.JOB_CODE_PREFIX}*")
        compute.grant_read_iceberg_jar(role)
        storage.artifacts.grant_read(role, f"{constants.TABLES_CONFIG_PREFIX}*")
        # Hadoop's S3 file systems look before they write (HEAD needs s3:GetObject).
        storage.artifacts.grant_read(role, f"{constants.REPORTS_PREFIX}*")
        storage.artifacts.grant_put(role, f"{constants.REPORTS_PREFIX}*")
        storage.artifacts.grant_put(role, f"{constants.EMR_LOGS_PREFIX}*")

    def _grant_functions(
        self,
        pipeline: Pipeline,
        storage: Storage,
        compute: SparkCompute,
        alert_channel: AlertChannel,
    ) -> None:
        application_arn = compute.application_arn
        job_runs = f"{application_arn}/jobruns/*"
        executions = self.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{pipeline.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        # Not CDK's grant_*_data: those add every index and stream action. Only the
        # sweeper queries an index; nothing scans or reads streams.
        ledger_grants = (
            (
                Capability.LEDGER_READ,
                [
                    "dynamodb:GetItem",
                    "dynamodb:BatchGetItem",
                    "dynamodb:Query",
                    "dynamodb:ConditionCheckItem",
                    "dynamodb:DescribeTable",
                ],
                pipeline.ledger.table_arn,
            ),
            (
                Capability.LEDGER_QUERY_INDEXES,
                ["dynamodb:Query"],
                f"{pipeline.ledger.table_arn}/index/*",
            ),
            (
                Capability.LEDGER_WRITE,
                [
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:BatchWriteItem",
                ],
                pipeline.ledger.table_arn,
            ),
        )
        warehouse_objects = storage.lake.arn_for_objects(f"{constants.WAREHOUSE_PREFIX}*")
        # The folder of the summary the maintenance Lambda puts (reports/maintenance/).
        from ingestion.maintenance.health import summary_uri

        summary_folder = summary_uri(constants.REPORTS_PREFIX).rsplit("/", 1)[0]
        summary_objects = storage.artifacts.arn_for_objects(f"{summary_folder}/*")
        for name, function in pipeline.functions.items():
            capabilities = pipeline.specs[name].capabilities
            grant = functools.partial(_grant, function, capabilities)
            for capability, actions, resource in ledger_grants:
                grant(capability, actions, [resource])
            if Capability.SOURCE_READ in capabilities:
                storage.source.grant_read(function)
            if Capability.STAGING_WRITE in capabilities:
                storage.artifacts.grant_put(function, f"{constants.STAGING_PREFIX}*")
            if Capability.STAGING_DELETE in capabilities:
                storage.artifacts.grant_delete(function, f"{constants.STAGING_PREFIX}*")
            if Capability.REPORTS_READ in capabilities:
                storage.artifacts.grant_read(function, f"{constants.REPORTS_PREFIX}*")
            if Capability.TABLE_CONFIG_READ in capabilities:
                storage.artifacts.grant_read(function, f"{constants.TABLES_CONFIG_PREFIX}*")
            if Capability.SLACK_TOKEN_READ in capabilities:
                alert_channel.slack_token.grant_read(function)
            # Not grant_read: the listing and the metadata reads only (no versions, ACLs).
            grant(Capability.LAKE_READ, ["s3:ListBucket"], [storage.lake.bucket_arn])
            grant(Capability.LAKE_READ, ["s3:GetObject"], [warehouse_objects])
            grant(Capability.LAKE_DELETE, ["s3:DeleteObject"], [warehouse_objects])
            grant(Capability.MAINTENANCE_SUMMARY_WRITE, ["s3:PutObject"], [summary_objects])
            grant(
                Capability.START_JOB,
                ["emr-serverless:StartJobRun", "emr-serverless:TagResource"],
                [application_arn, job_runs],
            )
            # Only to EMR Serverless: the job's role cannot be passed to anything else.
            grant(
                Capability.START_JOB,
                ["iam:PassRole"],
                [compute.execution_role.role_arn],
                conditions={
                    "StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}
                },
            )
            # WATCH_JOB is READ_JOB and CANCEL_JOB: one statement of what they add up to.
            job_actions = [
                action
                for action, granted_by in (
                    ("emr-serverless:GetJobRun", {Capability.WATCH_JOB, Capability.READ_JOB}),
                    ("emr-serverless:CancelJobRun", {Capability.WATCH_JOB, Capability.CANCEL_JOB}),
                )
                if granted_by & capabilities
            ]
            if job_actions:
                function.add_to_role_policy(
                    iam.PolicyStatement(actions=job_actions, resources=[job_runs])
                )
            grant(
                Capability.START_EXECUTION, ["states:StartExecution"], [pipeline.state_machine_arn]
            )
            grant(Capability.WATCH_EXECUTION, ["states:DescribeExecution"], [executions])


def catalog_roles(functions: tuple[FunctionSpec, ...]) -> CatalogRoles:
    """The catalog's roles: the machine ones (a client credentials secret each) are those
    of the functions and the job; people's are groups."""
    machines = {catalog_role(spec) for spec in functions} - {None} | {authz.JOB}
    return CatalogRoles(
        machines=tuple(sorted(machines)),
        people=tuple(role for role in authz.ROLES if role not in machines),
    )


def catalog_role(spec: FunctionSpec) -> str | None:
    """The catalog role a function's Nessie client acts as (None: it calls no Nessie)."""
    if Capability.NESSIE not in spec.capabilities:
        return None
    return authz.COMPONENT_ROLES[spec.name]


def ui_login_base(nessie_ui_url: str | None) -> str:
    """Where the UI's login comes back to: the deploy's `-c nessieUiUrl` when Cognito accepts
    it as a callback (https, or http on localhost), else the SSM port forward's address."""
    if nessie_ui_url and (
        nessie_ui_url.startswith("https://") or nessie_ui_url.startswith("http://localhost")
    ):
        return nessie_ui_url
    return constants.NESSIE_LOCAL_UI_URL


def _grant_catalog_credentials(
    pipeline: Pipeline, compute: SparkCompute, identity: CatalogIdentity
) -> None:
    """Each function that calls Nessie reads its role's client credentials (and no other
    role's); each that starts a job run names the job's secret in the run's arguments; the
    job's role reads the job's secret only."""
    from ingestion import constants as c

    job_secret = identity.credentials[authz.JOB]
    for name, function in pipeline.functions.items():
        spec = pipeline.specs[name]
        role = catalog_role(spec)
        if role:
            secret = identity.credentials[role]
            # contracts/catalog_tokens.py: the client, and where its secret is kept.
            function.add_environment(tokens.ENV_TOKEN_ENDPOINT, identity.token_endpoint)
            function.add_environment(tokens.ENV_CLIENT_ID, identity.client_ids[role])
            function.add_environment(tokens.ENV_CLIENT_SECRET_ARN, secret.secret_arn)
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["secretsmanager:GetSecretValue"], resources=[secret.secret_arn]
                )
            )
        if Capability.START_JOB in spec.capabilities:
            function.add_environment(c.ENV_JOB_NESSIE_CREDENTIALS_SECRET_ARN, job_secret.secret_arn)
    compute.execution_role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["secretsmanager:GetSecretValue"], resources=[job_secret.secret_arn]
        )
    )


def _grant(
    function: Any,
    capabilities: frozenset[Capability],
    capability: Capability,
    actions: list[str],
    resources: list[str],
    conditions: dict[str, Any] | None = None,
) -> None:
    """One statement on `function`'s role when its spec holds `capability`."""
    if capability in capabilities:
        function.add_to_role_policy(
            iam.PolicyStatement(actions=actions, resources=resources, conditions=conditions)
        )


def _as_deployed(
    functions: tuple[FunctionSpec, ...], *, gc_delete: bool
) -> tuple[FunctionSpec, ...]:
    """`functions` with what the deploy settings add: with -c gcDelete=true the maintenance
    Lambda may also delete under warehouse/ (LAKE_DELETE)."""
    if not gc_delete:
        return functions
    return tuple(
        replace(spec, capabilities=spec.capabilities | {Capability.LAKE_DELETE})
        if spec.name == "maintenance"
        else spec
        for spec in functions
    )


def _configure_maintenance(pipeline: Pipeline, storage: Storage, *, gc_delete: bool) -> None:
    """The maintenance Lambda's own environment: the warehouse it sweeps, whether it
    deletes (the capability to is in its spec: _as_deployed)."""
    from ingestion import constants as c

    pipeline.functions["maintenance"].add_environment(c.ENV_WAREHOUSE_URI, storage.warehouse_uri)
    pipeline.functions["maintenance"].add_environment(
        c.ENV_GC_DELETE, "true" if gc_delete else "false"
    )


def _grant_lineage_key(pipeline: Pipeline, secret_arn: str, kms_key_arn: str | None) -> None:
    """The functions that send OpenLineage events may read the API key's one secret (an
    existing secret, `-c lineageApiKeySecretArn`; nothing else in Secrets Manager) and,
    when it is encrypted with a customer-managed key (`-c lineageApiKeyKmsKeyArn`),
    decrypt with that key through Secrets Manager only (GetSecretValue calls kms:Decrypt
    as the caller; the AWS-managed key needs no grant)."""
    stack = Stack.of(pipeline)
    for name, function in pipeline.functions.items():
        if Capability.LINEAGE_KEY_READ in pipeline.specs[name].capabilities:
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["secretsmanager:GetSecretValue"], resources=[secret_arn]
                )
            )
            if kms_key_arn:
                function.add_to_role_policy(
                    iam.PolicyStatement(
                        actions=["kms:Decrypt"],
                        resources=[kms_key_arn],
                        conditions={
                            "StringEquals": {
                                "kms:ViaService": f"secretsmanager.{stack.region}."
                                f"{stack.url_suffix}"
                            }
                        },
                    )
                )


def _suppress_framework_findings(stack: Stack) -> None:
    """Findings on what CDK itself generates (roles of Lambdas, custom resources)."""
    lambda_basic = (
        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
    )
    lambda_vpc = (
        "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
    )
    NagSuppressions.add_stack_suppressions(
        stack,
        [
            NagPackSuppression(
                id="AwsSolutions-IAM4",
                reason="AWS managed basic/VPC execution policies of Lambda roles only grant "
                "writing their own logs and managing their ENIs.",
                applies_to=[lambda_basic, lambda_vpc],
            ),
            NagPackSuppression(
                id="AwsSolutions-IAM5",
                reason="Wildcards are scoped to this stack's resources: objects under one bucket "
                "prefix (or CDK's asset bucket), job runs of our EMR application, executions "
                "of our state machine, versions of our functions, indexes of our tables; "
                "the action wildcards are CDK's grant_* sets (GetObject*, List*, ...).",
                applies_to=[
                    {
                        "regex": "/^Action::s3:"
                        "(GetObject|GetBucket|List|DeleteObject|PutObject|Abort)\\*$/g"
                    },
                    {"regex": "/^Action::kms:(GenerateDataKey|ReEncrypt)\\*$/g"},
                    {
                        "regex": "/^Resource::<.*(Bucket|Source|Lake|Artifacts)"
                        "[A-Za-z0-9]*\\.Arn>/.*$/g"
                    },
                    {"regex": "/^Resource::arn:<AWS::Partition>:s3:::cdk-.*$/g"},
                    {"regex": "/^Resource::<.*Spark.*\\.Arn>/jobruns/\\*$/g"},
                    {
                        "regex": "/^Resource::arn:<AWS::Partition>:states:[^:]+:<AWS::AccountId>:"
                        "execution:.*:\\*$/g"
                    },
                    {"regex": "/^Resource::<.*(Table|Ledger)[A-Za-z0-9]*\\.Arn>/index/\\*$/g"},
                    {"regex": "/^Resource::<.*\\.Arn>:\\*$/g"},
                ],
            ),
            NagPackSuppression(
                id="AwsSolutions-L1",
                reason="The Lambdas are pinned to python3.12: the dependency layer is built for "
                "cp312 and that is the version the team tests; CDK's own custom-resource handlers "
                "pick their runtimes themselves.",
            ),
        ],
    )
