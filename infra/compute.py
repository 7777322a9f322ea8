"""EMR Serverless Spark application, its job role, and the job code in the artifacts bucket."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_emrserverless as emr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from infra import bundling, constants
from infra.settings import PreInitializedCapacity
from local.spark import lake_catalog_conf


def spark_catalog_conf(*, nessie_uri_v2: str, warehouse_uri: str) -> dict[str, str]:
    """Spark conf for EMR: the local `lake` catalog keys + S3FileIO + EMR's Iceberg jar."""
    return {
        "spark.jars": constants.EMR_ICEBERG_JAR,
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        **lake_catalog_conf(nessie_uri_v2, warehouse_uri, catalog=constants.CATALOG_NAME),
        f"spark.sql.catalog.{constants.CATALOG_NAME}.io-impl": constants.S3_FILE_IO,
    }


def spark_submit_parameters(conf: dict[str, str]) -> str:
    """EMR Serverless `sparkSubmitParameters`: one `--conf k=v` per entry."""
    return " ".join(f"--conf {key}={value}" for key, value in conf.items())


class SparkCompute(Construct):
    """The Spark application (auto start/stop, capped) that runs the write-audit job.

    Attributes: `application`, `application_arn`, `execution_role`,
    `security_group`, `entrypoint`, `py_files`, `spark_parameters`, `deployments`.
    """

    def __init__(self, scope: Construct, construct_id: str, *, vpc: ec2.IVpc,
                 subnets: ec2.SubnetSelection, artifacts: s3.IBucket, release_label: str,
                 max_cpu: str, max_memory: str,
                 pre_initialized: PreInitializedCapacity | None,
                 nessie_uri_v2: str, warehouse_uri: str, source_tree: constants.SourceTree) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.security_group = ec2.SecurityGroup(
            self, "Workers", vpc=vpc, allow_all_outbound=True,
            description="EMR Serverless Spark workers (Nessie, S3, package egress)")
        initial_capacity = None
        if pre_initialized is not None:
            def worker(count: int) -> emr.CfnApplication.InitialCapacityConfigProperty:
                return emr.CfnApplication.InitialCapacityConfigProperty(
                    worker_count=count,
                    worker_configuration=emr.CfnApplication.WorkerConfigurationProperty(
                        cpu=pre_initialized.cpu, memory=pre_initialized.memory))
            initial_capacity = [
                emr.CfnApplication.InitialCapacityConfigKeyValuePairProperty(
                    key="Driver", value=worker(pre_initialized.drivers)),
                emr.CfnApplication.InitialCapacityConfigKeyValuePairProperty(
                    key="Executor", value=worker(pre_initialized.executors)),
            ]
        self.application = emr.CfnApplication(
            self, "Spark",
            name=f"{stack.stack_name}-spark",
            release_label=release_label,
            type="SPARK",
            architecture="X86_64",
            auto_start_configuration=emr.CfnApplication.AutoStartConfigurationProperty(
                enabled=True),
            auto_stop_configuration=emr.CfnApplication.AutoStopConfigurationProperty(
                enabled=True, idle_timeout_minutes=constants.EMR_IDLE_TIMEOUT_MINUTES),
            maximum_capacity=emr.CfnApplication.MaximumAllowedResourcesProperty(
                cpu=max_cpu, memory=max_memory, disk=constants.EMR_MAX_DISK),
            initial_capacity=initial_capacity,
            network_configuration=emr.CfnApplication.NetworkConfigurationProperty(
                subnet_ids=vpc.select_subnets(
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnet_ids,
                security_group_ids=[self.security_group.security_group_id]),
        )
        self.application_arn = self.application.attr_arn
        self.execution_role = iam.Role(
            self, "JobRole",
            assumed_by=iam.ServicePrincipal("emr-serverless.amazonaws.com", conditions={
                "StringEquals": {"aws:SourceAccount": stack.account},
                "ArnLike": {"aws:SourceArn": stack.format_arn(
                    service="emr-serverless", resource="/applications", resource_name="*")},
            }),
            description="EMR Serverless job runs of the WAP Spark job",
        )

        job_package = bundling.spark_job_package(spark_jobs_dir=source_tree.spark_jobs_dir)
        self.deployments = [
            s3deploy.BucketDeployment(
                self, "JobCode", destination_bucket=artifacts,
                destination_key_prefix=constants.JOB_CODE_PREFIX,
                sources=[s3deploy.Source.asset(str(job_package))], prune=True),
        ]
        tables_dir = source_tree.tables_dir
        if tables_dir.is_dir() and any(tables_dir.glob("*.yaml")):
            self.deployments.append(s3deploy.BucketDeployment(
                self, "TableConfigs", destination_bucket=artifacts,
                destination_key_prefix=constants.TABLES_CONFIG_PREFIX,
                sources=[s3deploy.Source.asset(str(tables_dir),
                                               exclude=["*", "!*.yaml"])],
                prune=True))
        code_root = f"s3://{artifacts.bucket_name}/{constants.JOB_CODE_PREFIX}"
        self.entrypoint = f"{code_root}wap_job.py"
        self.py_files = f"{code_root}spark_jobs.zip"
        self.spark_conf = spark_catalog_conf(nessie_uri_v2=nessie_uri_v2,
                                             warehouse_uri=warehouse_uri)
        self.spark_parameters = spark_submit_parameters(self.spark_conf)
