"""Per-environment deploy settings, read from CDK context and validated at the edge."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from contracts.pricing import PricesError, parse_prices
from infra import constants, names

_CHANNEL = re.compile(r"^(#[a-z0-9][a-z0-9._-]{0,79}|[CG][A-Z0-9]{8,})$")
_STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")


class SettingsError(ValueError):
    """A context value is missing or malformed."""


@dataclass(frozen=True)
class PreInitializedCapacity:
    """Warm EMR Serverless workers (driver + executors) kept while the application runs."""

    drivers: int
    executors: int
    cpu: str = "4 vCPU"
    memory: str = "16 GB"


@dataclass(frozen=True)
class DeploySettings:
    """Everything that differs between environments; context keys in brackets."""

    stack_name: str = constants.STACK_NAME  # [stackName]
    region: str = constants.DEFAULT_REGION  # [region]
    slack_channel: str = "#data-alerts"  # [slackChannel]
    nessie_endpoint: str | None = None  # [nessieEndpoint] existing Nessie base URL
    nessie_ui_allowed_cidr: str | None = None  # [nessieUiAllowedCidr]
    nessie_ui_url: str | None = None  # [nessieUiUrl] link base in Slack alerts
    nat_gateways: int = 1  # [natGateways]
    emr_release_label: str = constants.EMR_RELEASE_LABEL  # [emrReleaseLabel]
    emr_max_cpu: str = constants.EMR_MAX_CPU  # [emrMaxCpu]
    emr_max_memory: str = constants.EMR_MAX_MEMORY  # [emrMaxMemory]
    emr_pre_initialized: PreInitializedCapacity | None = None  # [emrPreInitializedExecutors]
    # Minutes the EMR Serverless application stays started with nothing to run before it
    # stops (releasing any pre-initialized capacity); the next job then starts it cold
    # (docs/deploy.md, "Start-up time and cost").
    emr_idle_stop_minutes: int = constants.EMR_IDLE_TIMEOUT_MINUTES  # [emrIdleStopMinutes]
    # What EMR Serverless costs here, `vcpu=<usd>,memory=<usd>,storage=<usd>` per hour
    # (contracts/pricing.py); unset: the price table's for the region.
    emr_prices: str | None = None  # [emrPrices]
    destroy_data_on_delete: bool = False  # [destroyDataOnDelete] dev stacks only
    alarm_email: str | None = None  # [alarmEmail]
    queue_alarm_minutes: int = constants.QUEUE_ALARM_MINUTES  # [queueAlarmMinutes]
    blocked_start_minutes: int = constants.BLOCKED_START_MINUTES  # [blockedStartMinutes]
    # An upload for a table with no config and no table on main creates it; off, such an
    # upload is refused (`unknown_table`) naming the closest known tables.
    create_tables_from_uploads: bool = False  # [createTablesFromUploads]
    # OpenLineage receiver (Marquez, DataHub...) and the secret holding its API key.
    lineage_url: str | None = None  # [lineageUrl] unset: no events sent
    lineage_api_key_secret_arn: str | None = None  # [lineageApiKeySecretArn]
    # The customer-managed KMS key that secret is encrypted with (its Lambdas get
    # kms:Decrypt through Secrets Manager only); unset: the AWS-managed key, no grant.
    lineage_api_key_kms_key_arn: str | None = None  # [lineageApiKeyKmsKeyArn]
    # The daily garbage collection deletes what it finds unreferenced (the lake keeps a
    # deleted file recoverable for 30 days); off, it only reports and measures.
    gc_delete: bool = False  # [gcDelete]
    # When the daily maintenance run starts (UTC, HH:MM): compaction holds each table while
    # it runs, so a quiet hour rather than whenever the stack was deployed.
    maintenance_time_utc: str = constants.MAINTENANCE_TIME_UTC  # [maintenanceTimeUtc]
    # Use Nessie's DynamoDB tables a destroyed stack of the same name retained (its catalog
    # history) instead of creating them: `<stack>-nessie_refs` / `_objs` (docs/deploy.md).
    adopt_nessie_tables: bool = False  # [adoptNessieTables]

    @classmethod
    def from_context(cls, get: Any) -> DeploySettings:
        """Build from `node.try_get_context`-like `get(key)`; raise SettingsError on bad values."""
        stack_name = _text(get, "stackName", constants.STACK_NAME)
        if not _STACK_NAME.match(stack_name):
            raise SettingsError(
                f"stackName {stack_name!r}: a letter first, then letters, digits and '-' only"
            )
        limit, named_by = names.longest_stack_name()
        if len(stack_name) > limit:
            raise SettingsError(
                f"stackName {stack_name!r} has {len(stack_name)} characters; at most {limit}, "
                f"because {named_by} is named after it"
            )
        region = _text(get, "region", constants.DEFAULT_REGION)
        if not _REGION.match(region):
            raise SettingsError(f"region {region!r} is not an AWS region name")
        channel = _text(get, "slackChannel", "#data-alerts")
        if not _CHANNEL.match(channel):
            raise SettingsError(
                f"slackChannel {channel!r}: use '#name' (lower case) or a channel id (C0123ABCD)"
            )
        endpoint = _optional_text(get, "nessieEndpoint")
        if endpoint is not None:
            parsed = urlparse(endpoint)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise SettingsError(f"nessieEndpoint {endpoint!r}: expected http(s)://host[:port]")
            if parsed.path.rstrip("/").endswith(("/api/v1", "/api/v2")):
                raise SettingsError("nessieEndpoint is the server base URL, without /api/v1|v2")
            endpoint = endpoint.rstrip("/")
        ui_url = _optional_text(get, "nessieUiUrl")
        if ui_url is not None:
            parsed = urlparse(ui_url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise SettingsError(f"nessieUiUrl {ui_url!r}: expected http(s)://host[:port]")
            ui_url = ui_url.rstrip("/")
        cidr = _optional_text(get, "nessieUiAllowedCidr")
        if cidr is not None:
            try:
                network = ipaddress.ip_network(cidr, strict=True)
            except ValueError as exc:
                raise SettingsError(f"nessieUiAllowedCidr {cidr!r}: {exc}") from exc
            if network.prefixlen == 0:
                raise SettingsError("nessieUiAllowedCidr must not open the catalog to everyone")
        label = _text(get, "emrReleaseLabel", constants.EMR_RELEASE_LABEL)
        match = re.fullmatch(r"emr-(\d+)\.(\d+)\.(\d+)", label)
        if not match or tuple(map(int, match.groups())) < (7, 12, 0):
            raise SettingsError(f"emrReleaseLabel {label!r}: need emr-7.12.0 or later")
        executors = _integer(get, "emrPreInitializedExecutors", 0, low=0, high=50)
        pre_initialized = (
            PreInitializedCapacity(drivers=1, executors=executors) if executors else None
        )
        lineage_url, lineage_key, lineage_kms_key = _lineage(get)
        adopt_nessie_tables = _boolean(get, "adoptNessieTables", False)
        if adopt_nessie_tables and endpoint is not None:
            raise SettingsError(
                "adoptNessieTables is for the stack's own Nessie, not nessieEndpoint"
            )
        emr_prices = _optional_text(get, "emrPrices")
        if emr_prices is not None:
            try:
                parse_prices(emr_prices)
            except PricesError as exc:
                raise SettingsError(f"emrPrices: {exc}") from exc
        return cls(
            lineage_url=lineage_url,
            lineage_api_key_secret_arn=lineage_key,
            lineage_api_key_kms_key_arn=lineage_kms_key,
            maintenance_time_utc=_time_of_day(get, "maintenanceTimeUtc"),
            adopt_nessie_tables=adopt_nessie_tables,
            stack_name=stack_name,
            region=region,
            slack_channel=channel,
            nessie_endpoint=endpoint,
            nessie_ui_allowed_cidr=cidr,
            nessie_ui_url=ui_url,
            nat_gateways=_integer(get, "natGateways", 1, low=1, high=3),
            emr_release_label=label,
            emr_max_cpu=_matching(get, "emrMaxCpu", constants.EMR_MAX_CPU, r"\d+ ?vCPU"),
            emr_max_memory=_matching(get, "emrMaxMemory", constants.EMR_MAX_MEMORY, r"\d+ ?GB"),
            emr_pre_initialized=pre_initialized,
            # EMR's own bounds (AutoStopConfig.idleTimeoutMinutes: 1 to 10080, a week).
            emr_idle_stop_minutes=_integer(
                get, "emrIdleStopMinutes", constants.EMR_IDLE_TIMEOUT_MINUTES, low=1, high=10080
            ),
            emr_prices=emr_prices,
            destroy_data_on_delete=_boolean(get, "destroyDataOnDelete", False),
            alarm_email=_optional_text(get, "alarmEmail"),
            # At least two sweeps: the age is measured once per sweep.
            queue_alarm_minutes=_integer(
                get,
                "queueAlarmMinutes",
                constants.QUEUE_ALARM_MINUTES,
                low=2 * constants.SWEEPER_RATE_MINUTES,
                high=7 * 24 * 60,
            ),
            blocked_start_minutes=_integer(
                get, "blockedStartMinutes", constants.BLOCKED_START_MINUTES, low=1, high=24 * 60
            ),
            create_tables_from_uploads=_boolean(get, "createTablesFromUploads", False),
            gc_delete=_boolean(get, "gcDelete", False),
        )


_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]+$")
# Secrets Manager appends "-" and 6 random characters to the name in a secret's ARN; an IAM
# statement naming the ARN without them matches nothing (GetSecretValue is denied).
_SECRET_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")
_KMS_KEY_ARN = re.compile(
    r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/([0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"
    r"|mrk-[0-9a-f]{32})$"
)


def _lineage(get: Any) -> tuple[str | None, str | None, str | None]:
    """`lineageUrl` (http(s), no credentials in it), `lineageApiKeySecretArn` (a Secrets
    Manager secret's complete ARN, only with a URL) and `lineageApiKeyKmsKeyArn` (the KMS
    key ARN that secret is encrypted with, only with a secret)."""
    url = _optional_text(get, "lineageUrl")
    if url is not None:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname or "@" in parsed.netloc:
            raise SettingsError(
                "lineageUrl: expected http(s)://host[:port][/path], without "
                "credentials (the API key goes in lineageApiKeySecretArn)"
            )
        url = url.rstrip("/")
    secret = _optional_text(get, "lineageApiKeySecretArn")
    if secret is not None:
        if url is None:
            raise SettingsError("lineageApiKeySecretArn needs lineageUrl")
        if not _SECRET_ARN.match(secret):
            raise SettingsError(f"lineageApiKeySecretArn {secret!r} is not a secret's ARN")
        if not _SECRET_SUFFIX.search(secret):
            raise SettingsError(
                f"lineageApiKeySecretArn {secret!r} lacks the '-' and 6 characters Secrets "
                "Manager adds to the name (IAM would deny reading it): use the complete ARN, "
                "`aws secretsmanager describe-secret --secret-id <name> --query ARN`"
            )
    key = _optional_text(get, "lineageApiKeyKmsKeyArn")
    if key is not None:
        if secret is None:
            raise SettingsError("lineageApiKeyKmsKeyArn needs lineageApiKeySecretArn")
        if not _KMS_KEY_ARN.match(key):
            raise SettingsError(
                f"lineageApiKeyKmsKeyArn {key!r}: a KMS key's ARN (arn:aws:kms:<region>:"
                "<account>:key/<key id>), not an alias"
            )
    return url, secret, key


def _time_of_day(get: Any, key: str) -> str:
    """`HH:MM` (UTC, 24-hour clock)."""
    value = _text(get, key, constants.MAINTENANCE_TIME_UTC)
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", value)
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise SettingsError(f"{key} {value!r}: a UTC time of day as HH:MM, e.g. 03:00")
    return f"{int(match.group(1)):02d}:{match.group(2)}"


def _optional_text(get: Any, key: str) -> str | None:
    value = get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{key} must be a string, got {value!r}")
    return value.strip()


def _text(get: Any, key: str, default: str) -> str:
    value = _optional_text(get, key)
    return default if value is None else value


def _matching(get: Any, key: str, default: str, pattern: str) -> str:
    value = _text(get, key, default)
    if not re.fullmatch(pattern, value):
        raise SettingsError(f"{key} {value!r} must look like {default!r}")
    return value


def _integer(get: Any, key: str, default: int, *, low: int, high: int) -> int:
    value = get(key)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{key} must be an integer, got {value!r}") from exc
    if not low <= number <= high:
        raise SettingsError(f"{key} must be between {low} and {high}, got {number}")
    return number


def _boolean(get: Any, key: str, default: bool) -> bool:
    value = get(key)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "1", "yes"):
        return True
    if str(value).lower() in ("false", "0", "no"):
        return False
    raise SettingsError(f"{key} must be true or false, got {value!r}")
