"""Nessie on ECS Fargate behind an internal ALB, versions stored in DynamoDB."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagSuppressions
from constructs import Construct

from contracts.catalog_authorization import nessie_properties
from infra import constants, names
from infra.log_groups import log_group


@dataclass(frozen=True)
class CatalogAuth:
    """What Nessie needs to authenticate and authorize every call (docs/deploy.md)."""

    issuer_url: str  # Quarkus OIDC discovers the keys at <issuer>/.well-known/openid-configuration
    api_client_id: str
    ui_client_id: str
    ui_client_secret: secretsmanager.ISecret  # JSON with `client_secret`
    rules: Mapping[str, str]  # rule id -> CEL, as the rules file has them


def nessie_auth_settings(auth: CatalogAuth) -> dict[str, str]:
    """Nessie's (Quarkus) properties for OIDC bearer tokens, the UI's login tenant and the
    authorization rules, each under its own property name (the container's environment
    variables are named exactly so: MicroProfile Config reads an environment variable of the
    property's exact name first, which keeps rule ids and the `ui-app` tenant unambiguous)."""
    common = {
        "roles.role-claim-path": "roles",
        "roles.source": "accesstoken",
        "token.principal-claim": "principal",
    }
    settings = {
        "nessie.server.authentication.enabled": "true",
        "quarkus.oidc.auth-server-url": auth.issuer_url,
        "quarkus.oidc.client-id": auth.api_client_id,
        **{f"quarkus.oidc.{key}": value for key, value in common.items()},
        "quarkus.oidc.ui-app.auth-server-url": auth.issuer_url,
        "quarkus.oidc.ui-app.client-id": auth.ui_client_id,
        "quarkus.oidc.ui-app.application-type": "web-app",
        "quarkus.oidc.ui-app.tenant-paths": constants.NESSIE_UI_TENANT_PATHS,
        # Cognito matches the callback URL exactly: always come back to the UI's root,
        # then Quarkus restores the page asked for.
        "quarkus.oidc.ui-app.authentication.redirect-path": "/",
        "quarkus.oidc.ui-app.authentication.restore-path-after-redirect": "true",
        "quarkus.oidc.ui-app.authentication.scopes": "openid,profile",
        **{f"quarkus.oidc.ui-app.{key}": value for key, value in common.items()},
        "nessie.server.authorization.enabled": "true",
    }
    return {**settings, **nessie_properties(auth.rules)}


class NessieCatalog(Construct):
    """The Nessie server: API + UI on the ALB's port 80, health on the management port.

    Attributes: `tables` (Nessie's refs/objs tables), `service`, `load_balancer`,
    `listener` (its `connections` is what clients are allowed into), and the URLs.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: ec2.SubnetSelection,
        access_logs: s3.IBucket,
        removal_policy: RemovalPolicy,
        ui_allowed_cidr: str | None,
        auth: CatalogAuth | None = None,
        image_tag: str = constants.NESSIE_IMAGE_TAG,
        adopt_tables: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.table_prefix = names.NESSIE_TABLE_PREFIX.of(stack.stack_name)
        # Retained by a destroyed stack of the same name (fixed names): used as they are,
        # never created (CloudFormation would fail on a name that already exists).
        self.tables: list[dynamodb.ITable] = (
            [
                dynamodb.Table.from_table_name(
                    self, f"{suffix.title()}Table", f"{self.table_prefix}_{suffix}"
                )
                for suffix in constants.NESSIE_TABLE_SUFFIXES
            ]
            if adopt_tables
            else [
                dynamodb.Table(
                    self,
                    f"{suffix.title()}Table",
                    table_name=f"{self.table_prefix}_{suffix}",
                    partition_key=dynamodb.Attribute(
                        name=constants.NESSIE_TABLE_KEY, type=dynamodb.AttributeType.STRING
                    ),
                    billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
                    point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                        point_in_time_recovery_enabled=True
                    ),
                    encryption=dynamodb.TableEncryption.AWS_MANAGED,
                    removal_policy=removal_policy,
                )
                for suffix in constants.NESSIE_TABLE_SUFFIXES
            ]
        )

        cluster = ecs.Cluster(
            self, "Cluster", vpc=vpc, container_insights_v2=ecs.ContainerInsights.ENABLED
        )
        task = ecs.FargateTaskDefinition(
            self, "Task", cpu=constants.NESSIE_CPU, memory_limit_mib=constants.NESSIE_MEMORY_MIB
        )
        nessie_logs = log_group(self, "Logs", removal_policy)
        task.add_container(
            "nessie",
            image=ecs.ContainerImage.from_registry(f"{constants.NESSIE_IMAGE}:{image_tag}"),
            environment={
                "NESSIE_VERSION_STORE_TYPE": "DYNAMODB2",
                "NESSIE_VERSION_STORE_PERSIST_DYNAMODB_TABLE_PREFIX": self.table_prefix,
                "QUARKUS_DYNAMODB_AWS_REGION": stack.region,
                # The task role, via the container credentials endpoint.
                "QUARKUS_DYNAMODB_AWS_CREDENTIALS_TYPE": "default",
                **(nessie_auth_settings(auth) if auth else {}),
            },
            # The UI's client secret: ECS reads it at start (the execution role), it is no
            # plain environment variable of the task definition.
            secrets=(
                {
                    "quarkus.oidc.ui-app.credentials.secret": ecs.Secret.from_secrets_manager(
                        auth.ui_client_secret, "client_secret"
                    )
                }
                if auth
                else None
            ),
            port_mappings=[
                ecs.PortMapping(container_port=constants.NESSIE_API_PORT),
                ecs.PortMapping(container_port=constants.NESSIE_MANAGEMENT_PORT),
            ],
            logging=ecs.LogDrivers.aws_logs(stream_prefix="nessie", log_group=nessie_logs),
        )
        for table in self.tables:
            table.grant_read_write_data(task.task_role)

        # One task: Nessie caches objects per process, and more replicas would need its
        # cache-invalidation settings (peer addresses + tokens) to stay consistent.
        self.service = ecs.FargateService(
            self,
            "Service",
            cluster=cluster,
            task_definition=task,
            desired_count=1,
            vpc_subnets=subnets,
            assign_public_ip=False,
            min_healthy_percent=0,
            max_healthy_percent=100,
            circuit_breaker=ecs.DeploymentCircuitBreaker(rollback=True),
            # Operators reach the UI through an SSM port-forwarding session (README.md, Deploy).
            enable_execute_command=True,
        )
        self.load_balancer = elbv2.ApplicationLoadBalancer(
            self,
            "Alb",
            vpc=vpc,
            internet_facing=False,
            vpc_subnets=subnets,
            drop_invalid_header_fields=True,
        )
        self.load_balancer.log_access_logs(access_logs, prefix="alb/nessie")
        self.listener = self.load_balancer.add_listener(
            "Http",
            port=constants.NESSIE_LISTENER_PORT,
            protocol=elbv2.ApplicationProtocol.HTTP,
            open=False,
        )
        self.listener.add_targets(
            "Nessie",
            port=constants.NESSIE_API_PORT,
            protocol=elbv2.ApplicationProtocol.HTTP,
            targets=[
                self.service.load_balancer_target(
                    container_name="nessie", container_port=constants.NESSIE_API_PORT
                )
            ],
            health_check=elbv2.HealthCheck(
                port=str(constants.NESSIE_MANAGEMENT_PORT),
                path=constants.NESSIE_HEALTH_PATH,
                healthy_http_codes="200",
                interval=Duration.seconds(15),
            ),
            deregistration_delay=Duration.seconds(15),
        )
        # The target group health check uses the management port, which add_targets doesn't open.
        self.service.connections.allow_from(
            self.load_balancer,
            ec2.Port.tcp(constants.NESSIE_MANAGEMENT_PORT),
            "ALB health check on Nessie's management port",
        )
        if ui_allowed_cidr:
            self.listener.connections.allow_from(
                ec2.Peer.ipv4(ui_allowed_cidr),
                ec2.Port.tcp(constants.NESSIE_LISTENER_PORT),
                "Operators' network to the Nessie UI",
            )

        base = f"http://{self.load_balancer.load_balancer_dns_name}"
        self.base_url = base
        self.api_v1_uri = f"{base}/api/v1"
        self.api_v2_uri = f"{base}/api/v2"
        self.ui_url = base

        NagSuppressions.add_resource_suppressions(
            task,
            [
                {
                    "id": "AwsSolutions-ECS2",
                    "reason": "Only non-secret settings (store type, table prefix, region) are "
                    "passed as environment variables; Nessie gets AWS credentials from the "
                    "task role.",
                },
            ],
            apply_to_children=True,
        )
        NagSuppressions.add_resource_suppressions(
            task.task_role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "ECS Exec (operator port forwarding to the UI) needs ssmmessages "
                    "channels, which have no resource-level permissions; DynamoDB index "
                    "wildcards come from grant_read_write_data on Nessie's own tables.",
                    "applies_to": ["Resource::*"],
                },
            ],
            apply_to_children=True,
        )
