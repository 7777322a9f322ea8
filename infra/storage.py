"""The three buckets (source, lake, artifacts) and the access-log bucket behind them."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import constants


class Storage(Construct):
    """S3-managed encryption, SSL only, public access blocked, server access logs everywhere."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: RemovalPolicy,
        auto_delete_objects: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        common = {
            "encryption": s3.BucketEncryption.S3_MANAGED,
            "enforce_ssl": True,
            "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
            "removal_policy": removal_policy,
            "auto_delete_objects": auto_delete_objects,
        }
        abort_uploads = s3.LifecycleRule(
            id="abort-incomplete-uploads", abort_incomplete_multipart_upload_after=Duration.days(7)
        )
        # S3 log delivery writes with ACLs, so the log bucket keeps object-writer ownership.
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            **common,
            object_ownership=s3.ObjectOwnership.OBJECT_WRITER,
            lifecycle_rules=[
                abort_uploads,
                s3.LifecycleRule(
                    id="expire-access-logs",
                    expiration=Duration.days(constants.ACCESS_LOG_RETENTION_DAYS),
                ),
            ],
        )

        def logged(prefix: str) -> dict:
            return {
                "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                "server_access_logs_bucket": self.access_logs,
                "server_access_logs_prefix": f"s3/{prefix}/",
            }

        # Versioned: the ingest id is derived from the object version, and the
        # source object must never be lost to an overwrite.
        self.source = s3.Bucket(
            self,
            "Source",
            **common,
            **logged("source"),
            versioned=True,
            event_bridge_enabled=True,
            lifecycle_rules=[abort_uploads],
        )
        self.lake = s3.Bucket(
            self,
            "Lake",
            **common,
            **logged("lake"),
            versioned=True,
            lifecycle_rules=[
                abort_uploads,
                s3.LifecycleRule(
                    id="free-collected-files",
                    prefix=constants.WAREHOUSE_PREFIX,
                    noncurrent_version_expiration=Duration.days(
                        constants.LAKE_DELETED_FILE_RETENTION_DAYS
                    ),
                    expired_object_delete_marker=True,
                ),
            ],
        )
        self.artifacts = s3.Bucket(
            self,
            "Artifacts",
            **common,
            **logged("artifacts"),
            lifecycle_rules=[
                abort_uploads,
                s3.LifecycleRule(
                    id="expire-reports",
                    prefix=constants.REPORTS_PREFIX,
                    transitions=[
                        s3.Transition(
                            storage_class=s3.StorageClass.INFREQUENT_ACCESS,
                            transition_after=Duration.days(30),
                        )
                    ],
                    expiration=Duration.days(constants.REPORT_RETENTION_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-emr-logs",
                    prefix=constants.EMR_LOGS_PREFIX,
                    expiration=Duration.days(constants.EMR_LOG_RETENTION_DAYS),
                ),
            ],
        )
        self.warehouse_uri = f"s3://{self.lake.bucket_name}/{constants.WAREHOUSE_PREFIX}"
        self.reports_prefix = f"s3://{self.artifacts.bucket_name}/{constants.REPORTS_PREFIX}"
        self.logs_prefix = f"s3://{self.artifacts.bucket_name}/{constants.EMR_LOGS_PREFIX}"
        self.tables_prefix = f"s3://{self.artifacts.bucket_name}/{constants.TABLES_CONFIG_PREFIX}"
