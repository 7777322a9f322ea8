"""`AwsBackend`: a deployed stack, found by its CloudFormation outputs (infra/stack.py).

Outputs read: SourceBucketName, ArtifactsBucketName, NessieApiUrl, NessieUiUrl,
StateMachineArn, and LedgerTableName when the stack has it; otherwise the one
`AWS::DynamoDB::Table` among the stack's resources is the ledger.
"""

from __future__ import annotations

from typing import Any

from ingestion.ledger import Ledger
from ingestion.nessie import NessieClient
from wap.exceptions import BackendError
from wap.ops.backend import Backend

REQUIRED_OUTPUTS = ("SourceBucketName", "NessieApiUrl", "StateMachineArn")


def _person_tokens(outputs: dict[str, str], stack_name: str, region: str | None) -> Any:
    """The signed-in person's tokens for a stack whose catalog authenticates (it has the
    sign-in outputs); None for one deployed before issue 41."""
    from wap.ops.login import LoginConfig, PersonTokens

    if "CatalogLoginUrl" not in outputs:
        return None
    return PersonTokens(LoginConfig.from_outputs(outputs, stack_name, region or "default"))


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


class AwsBackend(Backend):
    """Ledger, buckets, state machine and Nessie of a deployed WAP stack."""

    kind = "aws"

    def __init__(
        self,
        session: Any,
        outputs: dict[str, str],
        ledger_table: str,
        *,
        nessie_url: str | None = None,
        catalog_tokens: Any = None,
    ) -> None:
        self.session = session
        self.outputs = outputs
        self.ledger_table = ledger_table
        # NessieApiUrl is the API v2 URL; --nessie-url may name the server's base. The
        # catalog is called as the signed-in person (`wap --aws login`: catalog_tokens).
        super().__init__(
            Ledger(ledger_table, session.resource("dynamodb")),
            NessieClient(nessie_url or outputs["NessieApiUrl"], tokens=catalog_tokens),
        )
        self._s3: Any = None

    @classmethod
    def connect(
        cls,
        stack_name: str,
        *,
        profile: str | None = None,
        region: str | None = None,
        nessie_url: str | None = None,
    ) -> AwsBackend:
        """Read the stack's outputs; raise `BackendError` with one line when that fails."""
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            session = boto3.Session(profile_name=profile, region_name=region)
            cfn = session.client("cloudformation")
            stacks = cfn.describe_stacks(StackName=stack_name)["Stacks"]
            outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
            missing = [name for name in REQUIRED_OUTPUTS if name not in outputs]
            if missing:
                raise BackendError(
                    f"stack {stack_name} has no output(s) {', '.join(missing)}: "
                    "is it the WAP stack?"
                )
            ledger_table = outputs.get("LedgerTableName") or _ledger_from_resources(cfn, stack_name)
        except (BotoCoreError, ClientError) as exc:
            raise BackendError(
                f"cannot read CloudFormation stack {stack_name}: {_one_line(exc)}"
            ) from exc
        return cls(
            session,
            outputs,
            ledger_table,
            nessie_url=nessie_url,
            catalog_tokens=_person_tokens(outputs, stack_name, session.region_name),
        )

    @property
    def source_bucket(self) -> str:
        return self.outputs["SourceBucketName"]

    @property
    def nessie_ui_url(self) -> str | None:
        return self.outputs.get("NessieUiUrl")

    def s3(self) -> Any:
        if self._s3 is None:
            self._s3 = self.session.client("s3")
        return self._s3

    def sfn(self) -> Any:
        return self.session.client("stepfunctions")

    def state_machine_arn(self) -> str | None:
        return self.outputs["StateMachineArn"]

    def send_lineage(self, events: list[Any]) -> bool:
        """Send to the stack's OpenLineage receiver (its `LineageUrl` output; the API key,
        when `LineageApiKeySecretArn` is set, read with this session's credentials), with
        the Lambdas' bounded retries; False when the stack sends none or the receiver
        would not take them all."""
        from ingestion.lineage.transport import emit_to

        url = self.outputs.get("LineageUrl")
        if not url:
            return False
        secret = self.outputs.get("LineageApiKeySecretArn")
        secrets = self.session.client("secretsmanager") if secret else None
        return emit_to(url, secret, events, secrets=secrets) == len(events)

    def warehouse_uri(self) -> str:
        """The lake bucket's warehouse prefix (infra/storage.py); `BackendError` when the stack
        has no `LakeBucketName` output."""
        from infra.constants import WAREHOUSE_PREFIX

        bucket = self.outputs.get("LakeBucketName")
        if not bucket:
            raise BackendError("the stack has no output LakeBucketName: cannot find the warehouse")
        return f"s3://{bucket}/{WAREHOUSE_PREFIX}"

    def maintenance_function(self) -> str:
        """The maintenance Lambda's name (`wap --aws maintain` invokes it); `BackendError`
        when the stack has no `MaintenanceFunctionName` output (deployed before it)."""
        name = self.outputs.get("MaintenanceFunctionName")
        if not name:
            raise BackendError(
                "the stack has no output MaintenanceFunctionName: deploy this "
                "version to compact on AWS"
            )
        return name

    def reports_prefix(self) -> str | None:
        from infra.constants import REPORTS_PREFIX

        bucket = self.outputs.get("ArtifactsBucketName")
        return f"s3://{bucket}/{REPORTS_PREFIX}" if bucket else None

    def iceberg_properties(self) -> dict[str, str]:
        """pyiceberg's own S3 FileIO, with this session's region and credentials."""
        properties = {"s3.region": self.session.region_name or "us-east-1"}
        credentials = self.session.get_credentials()
        if credentials is not None:
            frozen = credentials.get_frozen_credentials()
            properties["s3.access-key-id"] = frozen.access_key
            properties["s3.secret-access-key"] = frozen.secret_key
            if frozen.token:
                properties["s3.session-token"] = frozen.token
        return properties


def _ledger_from_resources(cfn: Any, stack_name: str) -> str:
    tables = [
        r["PhysicalResourceId"]
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        for r in page["StackResourceSummaries"]
        if r["ResourceType"] == "AWS::DynamoDB::Table"
    ]
    if len(tables) != 1:
        raise BackendError(
            f"stack {stack_name}: expected one DynamoDB table (the ledger), found {len(tables)}"
        )
    return tables[0]
