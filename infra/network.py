"""VPC for Nessie, EMR Serverless and the Lambdas that call Nessie."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from infra.log_groups import log_group


class Network(Construct):
    """Private subnets with NAT egress, S3/DynamoDB gateway endpoints and flow logs.

    NAT rather than interface endpoints: the Nessie image comes from ghcr.io and
    alerts go to slack.com, neither reachable through a VPC endpoint, so egress is
    needed anyway; one NAT gateway (about $33/month + data) is cheaper than the
    ~8 interface endpoints x 2 AZs (~$117/month) the AWS APIs alone would need.
    The gateway endpoints are free and keep S3/DynamoDB traffic off the NAT.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        nat_gateways: int,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        flow_log_group = log_group(self, "FlowLogs", removal_policy)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=nat_gateways,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20
                ),
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
                "DynamoDb": ec2.GatewayVpcEndpointOptions(
                    service=ec2.GatewayVpcEndpointAwsService.DYNAMODB
                ),
            },
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
        )
        self.private_subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
