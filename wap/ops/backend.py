"""Where the operations act: a `Backend` gives them the ledger, Nessie, objects and uploads.

Two implementations: `LocalBackend` (the embedded stack over a home directory) and
`AwsBackend` (a deployed stack found by its CloudFormation outputs, in `aws_backend.py`).
The public operations in `wap.ops.operations` are written once against this class.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from contracts.catalog_authorization import OPERATOR, ROLES
from ingestion.ledger import Ledger
from ingestion.naming import split_s3_uri
from ingestion.nessie import NessieClient

# Events per GetExecutionHistory page while looking for the state an ingest is in.
STEP_PAGE_SIZE = 20


class Backend(ABC):
    """The resources one `wap` command works on."""

    kind: str = "?"

    def __init__(self, ledger: Ledger, nessie: NessieClient) -> None:
        self.ledger = ledger  # the ingest ledger (DynamoDB)
        self.nessie = nessie  # the catalog's Nessie server

    @property
    @abstractmethod
    def source_bucket(self) -> str:
        """Uploads under `<namespace>/<table>/` here start ingests."""

    @property
    def nessie_ui_url(self) -> str | None:
        """Base URL of the catalog's web UI (Nessie's paths), None when there is none."""
        return None

    @abstractmethod
    def s3(self) -> Any:
        """A boto3 S3 client of this backend."""

    @abstractmethod
    def iceberg_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties for reading table metadata and data files."""

    def warehouse_uri(self) -> str:
        """Where the Iceberg tables' files live (`file://...` or `s3://bucket/prefix/`)."""
        raise NotImplementedError(f"the {self.kind} backend names no warehouse")

    def reports_prefix(self) -> str | None:
        """`s3://<artifacts bucket>/reports/`: where audit reports (and the latest garbage
        collection's summary) are kept; None when the backend names no artifacts bucket."""
        return None

    def metrics_stream(self) -> Any:
        """Where an operation run here writes CloudWatch embedded metrics; None: nowhere
        (an operator's machine: CloudWatch reads only the functions' logs)."""
        return None

    def read_object(self, uri: str) -> bytes | None:
        """The bytes at an `s3://` URI; None when the object does not exist."""
        bucket, key = split_s3_uri(uri)
        s3 = self.s3()
        try:
            return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            return None

    def upload_source(self, key: str, body: bytes) -> dict[str, Any]:
        """Put `body` at `key` in the source bucket; returns its version id and ETag."""
        response = self.s3().put_object(Bucket=self.source_bucket, Key=key, Body=body)
        return {
            "key": key,
            "version_id": response.get("VersionId"),
            "etag": response["ETag"].strip('"'),
        }

    def state_machine_arn(self) -> str | None:
        return None

    def sfn(self) -> Any:
        return None

    def current_step(self, ingest_id: str) -> str | None:
        """The state its Step Functions execution (named after the ingest) is in, if known."""
        arn, sfn = self.state_machine_arn(), self.sfn()
        if not arn or sfn is None:
            return None
        execution = arn.replace(":stateMachine:", ":execution:") + f":{ingest_id}"
        # Newest events first, a small page at a time and without their data: a state's
        # entry is among an execution's last few events, and `wap ingest` asks this for
        # every running ingest twice a second (GetExecutionHistory is throttled per
        # account; a page of the whole history, up to 1,000 events, each time was waste).
        pages = sfn.get_paginator("get_execution_history").paginate(
            executionArn=execution,
            reverseOrder=True,
            includeExecutionData=False,
            PaginationConfig={"PageSize": STEP_PAGE_SIZE},
        )
        try:
            for page in pages:
                for event in page["events"]:
                    if event.get("stateEnteredEventDetails"):
                        return event["stateEnteredEventDetails"]["name"]
        except Exception:  # no execution yet, or no permission: progress is best effort
            return None
        return None

    def send_lineage(self, events: list[Any]) -> bool:
        """Send OpenLineage events (the client's models) where this stack's go; False when
        they go nowhere from here."""
        return False

    def lineage_events(self, run_id: str) -> list[dict[str, Any]] | None:
        """The events kept for one run; None when this backend keeps none."""
        return None

    def settle(self, timeout: float) -> None:  # noqa: B027 (optional hook)
        """Wait until work started in this process is done (local mode)."""

    def changed(self) -> None:  # noqa: B027 (optional hook)
        """Called after an operation changed state (local mode persists it)."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what the backend started."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


ENV_CATALOG_ROLE = "WAP_CATALOG_ROLE"


def catalog_role(env: Mapping[str, str] | None = None) -> str:
    """The role `wap` commands call the local catalog as: wap-operator (people), unless
    `$WAP_CATALOG_ROLE` names another of contracts.catalog_authorization.ROLES (e.g.
    wap-reader, to look around without being able to change anything)."""
    from wap.exceptions import BackendError

    role = ((os.environ if env is None else env).get(ENV_CATALOG_ROLE) or OPERATOR).strip()
    if role not in ROLES:
        raise BackendError(f"{ENV_CATALOG_ROLE} must be one of {', '.join(ROLES)}, not {role!r}")
    return role


class LocalBackend(Backend):
    """The embedded stack over a home directory (`wap.runtime.embedded_stack`)."""

    kind = "local"

    def __init__(self, stack: Any) -> None:
        self.stack = stack  # a started EmbeddedStack
        super().__init__(
            Ledger(stack.aws.settings.ledger_table, stack.dynamodb()),
            stack.catalog_client(catalog_role()),
        )

    @property
    def source_bucket(self) -> str:
        return self.stack.aws.settings.source_bucket

    @property
    def nessie_ui_url(self) -> str | None:
        from wap.runtime.catalog_server import catalog_url

        # This command's own server stops with it; links name the address `wap serve` uses.
        return catalog_url()

    def s3(self) -> Any:
        return self.stack.aws.client("s3")

    def sfn(self) -> Any:
        return self.stack.aws.client("stepfunctions")

    def state_machine_arn(self) -> str | None:
        return self.stack.aws.state_machine_arn

    def iceberg_properties(self) -> dict[str, str]:
        return {}  # file:// warehouse: pyiceberg's local FileIO

    def warehouse_uri(self) -> str:
        return self.stack.home.warehouse.as_uri()

    def reports_prefix(self) -> str | None:
        from infra.constants import REPORTS_PREFIX

        return f"s3://{self.stack.aws.settings.artifacts_bucket}/{REPORTS_PREFIX}"

    def metrics_stream(self) -> Any:
        """The command's log, where the local stack's Lambdas write theirs."""
        from wap.runtime import command_log

        log = command_log.active()
        return None if log is None else log.open()

    def upload_source(self, key: str, body: bytes) -> dict[str, Any]:
        return self.stack.aws.drop_file(key, body)

    def settle(self, timeout: float) -> None:
        self.stack.aws.wait_idle(timeout=timeout)

    def send_lineage(self, events: list[Any]) -> bool:
        """Kept with the runs' other events under the home (what the receiver writes)."""
        import json

        from openlineage.client.serde import Serde

        from local.lineage_receiver import append_event

        for event in events:
            append_event(self.stack.home.lineage, json.loads(Serde.to_json(event)))
        return True

    def lineage_events(self, run_id: str) -> list[dict[str, Any]] | None:
        from local.lineage_receiver import read_run

        return read_run(self.stack.home.lineage, run_id)

    def changed(self) -> None:
        self.stack.save()

    def close(self) -> None:
        self.stack.stop()

    @property
    def slack_messages(self) -> list[dict[str, Any]]:
        return self.stack.slack.messages if self.stack.slack is not None else []
