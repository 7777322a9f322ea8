"""The whole service on one machine, over a `WapHome`: what `wap` runs in local mode.

Composes our Nessie server (SQLite in the home), the Slack stand-in, the moto-based
`LocalAwsStack` (same handlers, same state machine definition) with the ledger and
objects of earlier runs restored, and - only when ingests will run - the local
SparkSession executing the real job. Read-only commands never start a JVM.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contracts.catalog_authorization import OPERATOR
from ingestion.nessie import NessieClient
from local.aws.moto_fidelity import make_dynamodb_requests_atomic, make_transactions_item_scoped
from local.aws.stack import (
    FAKE_CREDENTIALS,
    REPO_ROOT,
    LocalAwsStack,
    SavedEnvironment,
    StackSettings,
    create_bucket,
    create_ledger_table,
)
from local.aws.template import TemplateError
from wap.exceptions import ConfigurationError
from wap.runtime import command_log
from wap.runtime.catalog_server import catalog_url
from wap.runtime.home import WapHome
from wap.runtime.state_store import ARTIFACT_PREFIXES, StateStore, StoredBucket

DEFAULT_TABLES_DIR = REPO_ROOT / "tables"
ENV_TABLES_DIR = "WAP_TABLES_DIR"
SLACK_TOKEN = "xoxb-wap-local-standin"  # noqa: S105 (the stand-in's own token, not a secret)
SLACK_CHANNEL = "#wap-alerts"


@dataclass(frozen=True)
class EmbeddedOptions:
    """How to start the embedded stack."""

    run_ingests: bool = False  # start Spark (the only thing that needs a JVM)
    recover_interrupted: bool = False  # commands holding the home lock may fix the ledger
    tables_dir: Path | None = None
    spark: Any = None  # an existing SparkSession to reuse (tests)
    job: Any = None  # a job function instead of Spark (tests)
    poll_interval_seconds: int = 1
    # Uploads for tables with neither a config nor a table on main create them (`wap
    # ingest --create`: the deploy setting createTablesFromUploads of this command's stack).
    create_tables: bool = False


def _tables_dir_setting() -> Path:
    return Path(os.environ.get(ENV_TABLES_DIR) or DEFAULT_TABLES_DIR)


def tables_dir_from_env() -> Path:
    """Where the local stack reads table configs: `WAP_TABLES_DIR`, else the repository's
    tables/ (whatever the working directory; when absent, no table has a config).

    Raises ConfigurationError when WAP_TABLES_DIR names no directory: read as an empty
    one, a mistyped path would run every table without its config's checks."""
    path = _tables_dir_setting()
    if os.environ.get(ENV_TABLES_DIR) and not path.is_dir():
        problem = "is not a directory" if path.exists() else "does not exist"
        raise ConfigurationError(
            f"{ENV_TABLES_DIR}={path} {problem}: set it to the folder of the table "
            f"configs (<ns>.<table>.yaml), or unset it to read {DEFAULT_TABLES_DIR}"
        )
    return path


def unread_config_note(path: Path) -> str | None:
    """A note when the table config at `path` is not in the folder the local stack reads
    (`tables_dir_from_env`): `wap suggest -o tables/...` run outside the repository writes
    one that `wap ingest` would not see. None when it is read."""
    directory = _tables_dir_setting()  # unchecked: the note names even a wrong setting
    if path.resolve().parent == directory.resolve():
        return None
    return (
        f"note: {path} is not read by the local stack, which reads table configs from "
        f"{directory}: move it there, or set {ENV_TABLES_DIR}={path.resolve().parent}"
    )


class StackStartError(RuntimeError):
    """A part of the local stack could not start (the message says which and why)."""


def _no_spark_job(argv: list[str]) -> Any:
    raise RuntimeError("this wap command does not run ingests (Spark was not started)")


@contextmanager
def _s3_events_muted() -> Iterator[None]:
    """No "Object Created" events reach the trigger meanwhile.

    The same seam `local.aws.s3_events` patches; moto does not return an
    `EventBridgeConfiguration` from GetBucketNotificationConfiguration, so
    switching the bucket's notifications off and on through the API would lose it.
    """
    import moto.s3.notifications as notifications

    installed = notifications._send_event_bridge_message
    notifications._send_event_bridge_message = lambda *args, **kwargs: None
    try:
        yield
    finally:
        notifications._send_event_bridge_message = installed


def _forget_catalog_instances(spark: Any) -> None:
    """Make Spark re-create catalogs from conf on next use.

    Spark caches catalog instances by name: a session lent by a longer-lived
    process would otherwise keep `lake` bound to a previous command's Nessie
    server (the job reads main through `lake` for `unique ... against_main`).
    """
    spark._jsparkSession.sessionState().catalogManager().reset()


def _opened(log: command_log.CommandLog | None) -> command_log.CommandLog | None:
    return None if log is None else log.open()


class StorageOnly:
    """moto S3 and DynamoDB under the stack's names: all that commands running no ingest need.

    Starts in about a second where the whole `LocalAwsStack` (Lambda functions,
    state machine, EMR application, event rule) takes several.
    """

    state_machine_arn = ""

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self._mock: Any = None
        self._environment = SavedEnvironment()

    def start(self) -> StorageOnly:
        from moto import mock_aws

        self._environment.set({**FAKE_CREDENTIALS, "AWS_DEFAULT_REGION": self.settings.region})
        make_dynamodb_requests_atomic()
        make_transactions_item_scoped()
        self._mock = mock_aws()
        self._mock.start()
        s = self.settings
        s3 = self.client("s3")
        for bucket in (s.source_bucket, s.artifacts_bucket):
            create_bucket(s3, bucket, s.region)
        s3.put_bucket_versioning(
            Bucket=s.source_bucket, VersioningConfiguration={"Status": "Enabled"}
        )
        create_ledger_table(self.client("dynamodb"), s.ledger_table)
        return self

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=self.settings.region)

    def drop_file(self, key: str, body: bytes) -> dict[str, Any]:
        raise RuntimeError("this wap command does not run ingests")

    def wait_idle(self, timeout: float = 0, **_: Any) -> None:
        return None

    def stop(self) -> None:
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        self._environment.restore()


class EmbeddedStack:
    """Start with `start()`; `save()` after changes; `stop()` always."""

    def __init__(self, home: WapHome, options: EmbeddedOptions | None = None) -> None:
        self.home = home
        self.options = options or EmbeddedOptions()
        self.nessie: Any = None
        self.slack: Any = None
        self.lineage: Any = None  # the OpenLineage receiver writing to home.lineage
        self.aws: LocalAwsStack | StorageOnly | None = None
        self.spark: Any = None
        self._owns_spark = False
        self._borrowed_conf: dict[str, str | None] = {}
        self.interrupted: list[str] = []
        self.store: StateStore | None = None

    def start(self) -> EmbeddedStack:
        from local.idp import PeopleError
        from local.lineage_receiver import LineageReceiver
        from local.nessie.runner import start_server
        from local.slack_standin import SlackStandin

        tables_dir = None  # read by the ingest stack only
        if self.options.run_ingests:  # before anything starts: a bad setting is one line
            tables_dir = self.options.tables_dir or tables_dir_from_env()
        self.home.create()
        try:
            try:
                self.nessie = start_server(str(self.home.nessie_db))
            except PeopleError as exc:  # the catalog UI's people (the home's people.yaml)
                raise StackStartError(str(exc)) from None
            if self.options.run_ingests:
                from local.aws.emr_serverless import spark_job

                self.slack = SlackStandin(SLACK_TOKEN, (SLACK_CHANNEL,)).start()
                self.lineage = LineageReceiver(self.home.lineage).start()
                job = self.options.job
                if job is None:
                    try:
                        self.spark = self._start_spark()
                    except Exception as exc:  # py4j / pyspark: no Java, port trouble...
                        raise StackStartError(
                            "could not start Spark (needs Java 17 on PATH or JAVA_HOME): "
                            + " ".join(str(exc).split())[:300]
                        ) from exc
                    job = spark_job(self.spark)
                settings = StackSettings(
                    nessie_api_v1=self.nessie.api_v1,
                    job=job,
                    catalog_credentials=self.nessie.credentials,
                    # Alerts outlive this command and its server: they link to the fixed
                    # address `wap serve` serves the same catalog on.
                    nessie_ui_url=catalog_url(),
                    slack_api_url=self.slack.api_url,
                    slack_token=SLACK_TOKEN,
                    slack_channel=SLACK_CHANNEL,
                    lineage_url=self.lineage.url,
                    tables_dir=tables_dir,
                    poll_interval_seconds=self.options.poll_interval_seconds,
                    async_retry_delay=0.5,
                    lambda_log_stream=_opened(command_log.active()),
                    create_tables=self.options.create_tables,
                )
                try:
                    self.aws = LocalAwsStack(settings).start()
                except TemplateError as exc:  # no CDK CLI, or the app does not synthesize
                    raise StackStartError(
                        f"could not synthesize the stack the local mode runs: {exc}"
                    ) from exc
            else:
                settings = StackSettings(
                    nessie_api_v1=self.nessie.api_v1,
                    job=_no_spark_job,
                    catalog_credentials=self.nessie.credentials,
                )
                self.aws = StorageOnly(settings).start()
            self.store = StateStore(
                self.home,
                ledger_table=settings.ledger_table,
                buckets=(
                    StoredBucket(settings.source_bucket),
                    StoredBucket(settings.artifacts_bucket, ARTIFACT_PREFIXES),
                ),
            )
            with _s3_events_muted():  # restored objects are old news, not new uploads
                self.interrupted = self.store.restore(
                    self.dynamodb(),
                    self.aws.client("s3"),
                    recover_interrupted=self.options.recover_interrupted,
                    nessie=self.catalog_client(OPERATOR),
                )
        except Exception:
            self.stop()
            raise
        return self

    def _start_spark(self) -> Any:
        from local.spark import build_local_spark, lake_catalog_conf

        warehouse = self.home.warehouse.as_uri()
        if self.options.spark is not None:
            spark = self.options.spark
        else:
            from pyspark import SparkContext

            # A session already running in this process (tests) is reused, not stopped.
            self._owns_spark = SparkContext._active_spark_context is None
            log = command_log.active()
            spark = build_local_spark(
                warehouse,
                self.nessie.api_v2,
                app_name="wap-cli",
                jvm_output=log.jvm_output() if log is not None else None,
            )
        # Runs copy `lake.*` when they start: point the template at this home's catalog,
        # and put a borrowed session's template back afterwards.
        # The session's own catalog reads and writes as the person (`wap`); each job run's
        # catalog is the job's (wap-job, from the environment the local EMR sets).
        conf = lake_catalog_conf(
            self.nessie.api_v2, warehouse, credentials=self.nessie.credentials(OPERATOR)
        )
        for key, value in conf.items():
            if not self._owns_spark:
                self._borrowed_conf.setdefault(key, spark.conf.get(key, None))
            spark.conf.set(key, value)
        _forget_catalog_instances(spark)
        return spark

    def catalog_client(self, role: str) -> NessieClient:
        """A client of this stack's catalog acting as `role` (contracts.catalog_authorization):
        the `wap` commands as wap-operator, the in-process maintenance as wap-maintenance."""
        assert self.nessie is not None
        return NessieClient(self.nessie.api_v2, credentials=self.nessie.credentials(role))

    def dynamodb(self) -> Any:
        import boto3

        assert self.aws is not None
        return boto3.resource("dynamodb", region_name=self.aws.settings.region)

    def save(self) -> None:
        """Persist the ledger and objects into the home."""
        if self.aws is not None and self.store is not None:
            self.store.save(self.dynamodb(), self.aws.client("s3"))

    def stop(self) -> None:
        """Stop everything this stack started (a reused SparkSession stays up)."""
        self._release("store", "close")
        self._release("aws", "stop")
        if self.spark is not None and self._owns_spark:
            self.spark.stop()
        elif self.spark is not None:
            for key, value in self._borrowed_conf.items():
                if value is None:
                    self.spark.conf.unset(key)
                else:
                    self.spark.conf.set(key, value)
            _forget_catalog_instances(self.spark)
        self._borrowed_conf = {}
        self.spark = None
        self._release("slack", "stop")
        self._release("lineage", "stop")
        self._release("nessie", "stop")

    def _release(self, name: str, how: str) -> None:
        """Call the method `how` ("stop", "close") of the part held in attribute `name`, if
        any, then let go of the part."""
        part = getattr(self, name)
        if part is not None:
            getattr(part, how)()
            setattr(self, name, None)
