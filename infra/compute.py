"""EMR Serverless Spark application, its job role, and the job code in the artifacts bucket."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_emrserverless as emr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from infra import bundling, constants, names
from infra.settings import PreInitializedCapacity
from spark_jobs.conf import job_spark_conf, spark_submit_parameters


class SparkCompute(Construct):
    """The Spark application (auto start/stop, capped) that runs the write-audit job.

    Attributes: `application`, `application_arn`, `execution_role`,
    `security_group`, `entrypoint`, `py_files`, `iceberg_jar` (the asset),
    `spark_conf`, `spark_parameters`, `deployments`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        artifacts: s3.IBucket,
        release_label: str,
        max_cpu: str,
        max_memory: str,
        pre_initialized: PreInitializedCapacity | None,
        idle_stop_minutes: int = constants.EMR_IDLE_TIMEOUT_MINUTES,
        nessie_uri_v2: str,
        warehouse_uri: str,
        source_tree: constants.SourceTree,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.security_group = ec2.SecurityGroup(
            self,
            "Workers",
            vpc=vpc,
            allow_all_outbound=True,
            description="EMR Serverless Spark workers (Nessie, S3, package egress)",
        )
        initial_capacity = None
        if pre_initialized is not None:

            def worker(count: int) -> emr.CfnApplication.InitialCapacityConfigProperty:
                return emr.CfnApplication.InitialCapacityConfigProperty(
                    worker_count=count,
                    worker_configuration=emr.CfnApplication.WorkerConfigurationProperty(
                        cpu=pre_initialized.cpu, memory=pre_initialized.memory
                    ),
                )

            initial_capacity = [
                emr.CfnApplication.InitialCapacityConfigKeyValuePairProperty(
                    key="Driver", value=worker(pre_initialized.drivers)
                ),
                emr.CfnApplication.InitialCapacityConfigKeyValuePairProperty(
                    key="Executor", value=worker(pre_initialized.executors)
                ),
            ]
        self.application = emr.CfnApplication(
            self,
            "Spark",
            name=names.EMR_APPLICATION.of(stack.stack_name),
            release_label=release_label,
            type="SPARK",
            architecture="X86_64",
            auto_start_configuration=emr.CfnApplication.AutoStartConfigurationProperty(
                enabled=True
            ),
            auto_stop_configuration=emr.CfnApplication.AutoStopConfigurationProperty(
                enabled=True, idle_timeout_minutes=idle_stop_minutes
            ),
            maximum_capacity=emr.CfnApplication.MaximumAllowedResourcesProperty(
                cpu=max_cpu, memory=max_memory, disk=constants.EMR_MAX_DISK
            ),
            initial_capacity=initial_capacity,
            network_configuration=emr.CfnApplication.NetworkConfigurationProperty(
                subnet_ids=vpc.select_subnets(
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                ).subnet_ids,
                security_group_ids=[self.security_group.security_group_id],
            ),
        )
        self.application_arn = self.application.attr_arn
        self.execution_role = iam.Role(
            self,
            "JobRole",
            assumed_by=iam.ServicePrincipal(
                "emr-serverless.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="emr-serverless", resource="/applications", resource_name="*"
                        )
                    },
                },
            ),
            description="EMR Serverless job runs of the WAP Spark job",
        )

        job_package = bundling.spark_job_package(spark_jobs_dir=source_tree.spark_jobs_dir)
        self.deployments = [
            s3deploy.BucketDeployment(
                self,
                "JobCode",
                destination_bucket=artifacts,
                destination_key_prefix=constants.JOB_CODE_PREFIX,
                sources=[s3deploy.Source.asset(str(job_package))],
                prune=True,
            ),
        ]
        tables_dir = source_tree.tables_dir
        if tables_dir.is_dir() and any(tables_dir.glob("*.yaml")):
            self.deployments.append(
                s3deploy.BucketDeployment(
                    self,
                    "TableConfigs",
                    destination_bucket=artifacts,
                    destination_key_prefix=constants.TABLES_CONFIG_PREFIX,
                    # Table configs, and multi-table dataset configs under datasets/.
                    sources=[
                        s3deploy.Source.asset(
                            str(tables_dir),
                            exclude=["*", "!*.yaml", "!datasets", "!datasets/*.yaml"],
                        )
                    ],
                    prune=True,
                )
            )
        code_root = f"s3://{artifacts.bucket_name}/{constants.JOB_CODE_PREFIX}"
        self.entrypoint = f"{code_root}wap_job.py"
        self.py_files = f"{code_root}spark_jobs.zip"
        # The exact jar the local runs and tests use, uploaded by `cdk deploy` under a key
        # derived from its content: a changed jar is a new object, never swapped in place.
        self.iceberg_jar = s3_assets.Asset(
            self, "IcebergRuntime", path=str(bundling.iceberg_runtime_jar())
        )
        self.spark_conf = job_spark_conf(
            iceberg_jar=self.iceberg_jar.s3_object_url,
            nessie_uri_v2=nessie_uri_v2,
            warehouse_uri=warehouse_uri,
        )
        self.spark_parameters = spark_submit_parameters(self.spark_conf)

    def grant_read_iceberg_jar(self, grantee: iam.IGrantable) -> iam.Grant:
        """s3:GetObject on the jar's object alone.

        `Asset.grant_read` would open the whole CDK asset bucket (every stack's code).
        """
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:GetObject"],
            resource_arns=[self.iceberg_jar.bucket.arn_for_objects(self.iceberg_jar.s3_object_key)],
        )
