"""IAM for the local stack: every AWS call a function (or the job, or the state machine)
makes is allowed only by its role's policy from the synthesized template.

Why evaluate here and not with moto's own enforcement: moto checks S3 calls against the
real resource ARN but every other service against `"*"`, so the template's correctly
scoped statements (DynamoDB on the ledger's ARN, EMR on the application's) would be
denied where AWS allows them. So each call is evaluated on the client side, at
`BaseClient._make_api_call`, where the operation and its parameters are at hand:

- the caller is known by the access key its client signs with. Each role is a moto IAM
  role carrying its template policies; its principals sign with `sts:AssumeRole`
  credentials (Lambda puts them in the function's environment). The harness's own calls
  (tests, the CLI, set-up) sign with the admin keys and are not evaluated. moto's Step
  Functions interpreter signs with the key `ak`: those are the state machine role's.
- `requests_for` names the IAM actions and resource ARNs a call needs, as the service
  authorizes it (a versioned read needs `s3:GetObjectVersion`; a copy needs a read of the
  source and a write of the target; a transaction needs each item's action on its table;
  `StartJobRun` needs `iam:PassRole` on the execution role and `TagResource` for tags;
  `GetSecretValue` of a secret under a customer managed KMS key needs `kms:Decrypt` on the
  key by way of Secrets Manager, as Secrets Manager decrypts as the caller).
  A call it cannot name is refused loudly (`UnmappedCall`): a gap in the double is never
  an allow.
- a request is allowed when an Allow statement matches the action and resource (IAM
  wildcards) and no Deny does. A denied call raises the service's own AccessDenied error.
  Like S3, a read of a missing key by a caller without `s3:ListBucket` is a 403, not a 404.

Every evaluated request is recorded (principal, action, resource, statement) so the suite
can prove each statement is used (least privilege). Conditions: `StringEquals` on the keys a
request carries (`iam:PassedToService` of the role `StartJobRun` passes); any other operator
is refused at load. Not evaluated: resource policies and
SCPs (the template has none), and the managed policies Lambda's service uses itself
(`AWSLambdaBasicExecutionRole`, `AWSLambdaVPCAccessExecutionRole`).
"""

from __future__ import annotations

import fnmatch
import functools
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from local.aws.overrides import LocalParityError

EMR_SERVERLESS_PRINCIPAL = "emr-serverless.amazonaws.com"
# moto's Step Functions interpreter signs its service calls with this key.
STATE_MACHINE_INTERPRETER_KEY = "ak"
# The patch of botocore is process-wide: one enforcer at a time.
_active: IamEnforcer | None = None
_active_lock = threading.Lock()


class UnmappedCall(LocalParityError):
    """A principal made a call whose IAM action/resource the local evaluator cannot name."""


@dataclass(frozen=True)
class Statement:
    """One statement of one policy, with its intrinsics resolved to local names."""

    policy: str  # construct path of the AWS::IAM::Policy
    index: int
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    # `StringEquals` conditions: (context key, the values any of which it must equal).
    conditions: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return self.policy, self.index

    def resource_index(
        self, action: str, resource: str, context: Mapping[str, str] | None = None
    ) -> int | None:
        """Which of the statement's resources grants `action` on `resource` in the request's
        `context` (None: none). As in IAM, a condition on a key the request does not carry
        does not match."""
        if not any(_glob(pattern.lower(), action.lower()) for pattern in self.actions):
            return None
        if any((context or {}).get(key) not in values for key, values in self.conditions):
            return None
        return next(
            (i for i, pattern in enumerate(self.resources) if _glob(pattern, resource)), None
        )


@functools.lru_cache(maxsize=4096)
def _pattern(pattern: str) -> re.Pattern[str]:
    # IAM wildcards: `*` any run of characters (slashes and colons included), `?` one.
    return re.compile(fnmatch.translate(pattern))


def _glob(pattern: str, value: str) -> bool:
    return bool(_pattern(pattern).match(value))


def statements_of(policy: str, document: Mapping[str, Any]) -> list[Statement]:
    """The statements of a resolved policy document; refuses what the evaluator cannot
    judge (conditions, NotAction, NotResource, principals)."""
    result = []
    statements = document.get("Statement", [])
    for index, raw in enumerate([statements] if isinstance(statements, dict) else statements):
        unsupported = sorted(set(raw) - {"Effect", "Action", "Resource", "Sid", "Condition"})
        operators = sorted(set(raw.get("Condition", {})) - {"StringEquals"})
        if unsupported or operators:
            raise LocalParityError(
                f"{policy} statement {index}: the local IAM evaluator does not judge "
                f"{unsupported or operators}; extend local/aws/iam.py before using them"
            )
        actions = raw["Action"] if isinstance(raw["Action"], list) else [raw["Action"]]
        resources = raw["Resource"] if isinstance(raw["Resource"], list) else [raw["Resource"]]
        conditions = tuple(
            (key, tuple(values) if isinstance(values, list) else (values,))
            for key, values in raw.get("Condition", {}).get("StringEquals", {}).items()
        )
        result.append(
            Statement(policy, index, raw["Effect"], tuple(actions), tuple(resources), conditions)
        )
    return result


@dataclass
class Principal:
    """A role as its callers use it: the template role's path, ARN and statements."""

    name: str  # the function name, "job" or "state-machine"
    role_path: str
    role_arn: str
    statements: list[Statement] = field(default_factory=list)

    def grant(
        self,
        action: str,
        resource: str,
        *,
        skip: frozenset[tuple[str, int]] = frozenset(),
        context: Mapping[str, str] | None = None,
    ) -> tuple[Statement, int] | None:
        """The Allow statement and its resource index that grant `action` on `resource`, or
        None (an explicit Deny wins); statements whose key is in `skip` do not count."""
        allowed = None
        for statement in self.statements:
            if statement.key in skip:
                continue
            index = statement.resource_index(action, resource, context)
            if index is not None:
                if statement.effect == "Deny":
                    return None
                allowed = allowed or (statement, index)
        return allowed

    def decide(self, action: str, resource: str) -> Statement | None:
        """The statement that allows `action` on `resource`, or None (an explicit Deny wins)."""
        found = self.grant(action, resource)
        return found[0] if found else None


@dataclass(frozen=True)
class Request:
    """One authorization a call needs, with the condition keys the service sets for it."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CallRecord:
    """One evaluated request: who, what, on what, and the grant that allowed it: (policy
    path, statement index, resource index in the statement), None when denied."""

    principal: str
    operation: str
    action: str
    resource: str
    grant: tuple[str, int, int] | None


# ---- which actions and resources a call needs ------------------------------------------------


def _s3_object(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def _copy_source(source: Any) -> tuple[str, str, str | None]:
    if isinstance(source, Mapping):
        return source["Bucket"], source["Key"], source.get("VersionId")
    parts = urlsplit("/" + str(source).lstrip("/"))
    bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
    version = parse_qs(parts.query).get("versionId", [None])[0]
    return bucket, key, version


def _s3_requests(operation: str, params: Mapping[str, Any]) -> list[Request]:
    bucket = params.get("Bucket", "")
    key = params.get("Key")
    versioned = "Version" if params.get("VersionId") else ""
    if operation in ("GetObject", "HeadObject"):
        return [Request(f"s3:GetObject{versioned}", _s3_object(bucket, key))]
    if operation in ("GetObjectTagging",):
        return [Request(f"s3:GetObject{versioned}Tagging", _s3_object(bucket, key))]
    if operation in ("PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"):
        return [Request("s3:PutObject", _s3_object(bucket, key))]
    if operation == "AbortMultipartUpload":
        return [Request("s3:AbortMultipartUpload", _s3_object(bucket, key))]
    if operation in ("CopyObject", "UploadPartCopy"):
        src_bucket, src_key, src_version = _copy_source(params["CopySource"])
        read = "s3:GetObjectVersion" if src_version else "s3:GetObject"
        return [
            Request(read, _s3_object(src_bucket, src_key)),
            Request("s3:PutObject", _s3_object(bucket, key)),
        ]
    if operation == "DeleteObject":
        return [Request(f"s3:DeleteObject{versioned}", _s3_object(bucket, key))]
    if operation == "DeleteObjects":
        return [
            Request(
                "s3:DeleteObjectVersion" if item.get("VersionId") else "s3:DeleteObject",
                _s3_object(bucket, item["Key"]),
            )
            for item in params.get("Delete", {}).get("Objects", [])
        ]
    bucket_actions = {
        "ListObjects": "s3:ListBucket",
        "ListObjectsV2": "s3:ListBucket",
        "HeadBucket": "s3:ListBucket",
        "ListObjectVersions": "s3:ListBucketVersions",
        "ListMultipartUploads": "s3:ListBucketMultipartUploads",
        "GetBucketVersioning": "s3:GetBucketVersioning",
        "GetBucketLocation": "s3:GetBucketLocation",
    }
    if operation in bucket_actions:
        return [Request(bucket_actions[operation], f"arn:aws:s3:::{bucket}")]
    raise UnmappedCall(f"s3:{operation}")


def _dynamodb_requests(
    operation: str,
    params: Mapping[str, Any],
    arn: Callable[[str], str],
) -> list[Request]:
    def table(name: str, index: str | None = None) -> str:
        base = name if name.startswith("arn:") else arn(f"table/{name}")
        return f"{base}/index/{index}" if index else base

    if operation in (
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "DescribeTable",
        "DescribeTimeToLive",
    ):
        return [Request(f"dynamodb:{operation}", table(params["TableName"]))]
    if operation in ("Query", "Scan"):
        return [
            Request(f"dynamodb:{operation}", table(params["TableName"], params.get("IndexName")))
        ]
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [Request(f"dynamodb:{operation}", table(name)) for name in params["RequestItems"]]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        actions = {
            "ConditionCheck": "ConditionCheckItem",
            "Put": "PutItem",
            "Update": "UpdateItem",
            "Delete": "DeleteItem",
            "Get": "GetItem",
        }
        return [
            Request(f"dynamodb:{actions[kind]}", table(body["TableName"]))
            for item in params["TransactItems"]
            for kind, body in item.items()
        ]
    raise UnmappedCall(f"dynamodb:{operation}")


def _emr_requests(
    operation: str,
    params: Mapping[str, Any],
    arn: Callable[[str], str],
) -> list[Request]:
    application = arn(f"/applications/{params.get('applicationId', '')}")
    if operation == "StartJobRun":
        requests = [
            Request("emr-serverless:StartJobRun", application),
            # EMR Serverless passes the role to itself: IAM sees the service.
            Request(
                "iam:PassRole",
                params["executionRoleArn"],
                (("iam:PassedToService", EMR_SERVERLESS_PRINCIPAL),),
            ),
        ]
        if params.get("tags"):
            # Tagging on create is authorized on the run being created (its id is not known).
            requests.append(Request("emr-serverless:TagResource", f"{application}/jobruns/*"))
        return requests
    if operation in ("GetJobRun", "CancelJobRun", "GetDashboardForJobRun"):
        return [
            Request(f"emr-serverless:{operation}", f"{application}/jobruns/{params['jobRunId']}")
        ]
    if operation in ("GetApplication", "ListJobRuns"):
        return [Request(f"emr-serverless:{operation}", application)]
    raise UnmappedCall(f"emr-serverless:{operation}")


def requests_for(
    service: str, operation: str, params: Mapping[str, Any], *, region: str, account: str
) -> list[Request]:
    """The (action, resource ARN) pairs AWS authorizes for one API call; raises
    UnmappedCall for a call this evaluator does not know."""

    def arn(resource: str) -> str:
        return f"arn:aws:{service}:{region}:{account}:{resource}"

    if service == "s3":
        return _s3_requests(operation, params)
    if service == "dynamodb":
        return _dynamodb_requests(operation, params, arn)
    if service == "emr-serverless":
        return _emr_requests(operation, params, arn)
    if service == "stepfunctions":
        by_execution = {"DescribeExecution", "StopExecution", "GetExecutionHistory"}
        if operation in by_execution:
            return [Request(f"states:{operation}", params["executionArn"])]
        if operation in ("StartExecution", "ListExecutions", "DescribeStateMachine"):
            return [Request(f"states:{operation}", params["stateMachineArn"])]
    if service == "secretsmanager" and operation in ("GetSecretValue", "DescribeSecret"):
        return [Request(f"secretsmanager:{operation}", params["SecretId"])]
    if service == "lambda" and operation == "Invoke":
        name = params["FunctionName"]
        target = (
            name
            if name.startswith("arn:")
            else (f"arn:aws:lambda:{region}:{account}:function:{name}")
        )
        if params.get("Qualifier"):
            target = f"{target}:{params['Qualifier']}"
        return [Request("lambda:InvokeFunction", target)]
    if service == "sqs" and operation == "SendMessage":
        name = params["QueueUrl"].rstrip("/").rsplit("/", 1)[-1]
        return [Request("sqs:SendMessage", f"arn:aws:sqs:{region}:{account}:{name}")]
    if service == "events" and operation == "PutEvents":
        return [
            Request("events:PutEvents", arn(f"event-bus/{entry.get('EventBusName', 'default')}"))
            for entry in params.get("Entries", [])
        ]
    raise UnmappedCall(f"{service}:{operation}")


# ---- enforcement ---------------------------------------------------------------------------

# The error code and HTTP status each service answers a denied call with.
_DENIED = {
    "s3": ("AccessDenied", 403),
    "dynamodb": ("AccessDeniedException", 400),
    "stepfunctions": ("AccessDeniedException", 400),
    "secretsmanager": ("AccessDeniedException", 400),
    "emr-serverless": ("AccessDeniedException", 403),
    "lambda": ("AccessDeniedException", 403),
    "sqs": ("AccessDenied", 403),
    "events": ("AccessDeniedException", 400),
}


class IamEnforcer:
    """Evaluates every call signed by a registered principal; records what it allowed."""

    def __init__(self, *, region: str, account: str) -> None:
        self.region = region
        self.account = account
        self._principals: dict[str, Principal] = {}
        self._lock = threading.Lock()
        # The latest calls (a long `wap` session makes many); what they used is kept whole.
        self.records: deque[CallRecord] = deque(maxlen=20_000)
        self.denied: list[CallRecord] = []
        self._used: set[tuple[str, int, int]] = set()
        self._original: Any = None
        # Tests remove a statement to prove enforcement bites: principal -> statement keys.
        self.revoked: dict[str, set[tuple[str, int]]] = {}
        # The template's grants by position -> their keys (StackTemplate.grants): what the
        # session log records, so grants are judged the same in every variant of the
        # template. Unset (a test's own policies): nothing goes into the session log.
        self.grant_keys: Mapping[tuple[str, int, int], tuple[tuple[str, ...], ...]] = {}

    def add(self, access_key: str, principal: Principal) -> None:
        """Calls signed with `access_key` are `principal`'s."""
        self._principals[access_key] = principal

    def principal(self, name: str) -> Principal:
        for principal in self._principals.values():
            if principal.name == name:
                return principal
        raise KeyError(name)

    def principals(self) -> list[Principal]:
        return list(self._principals.values())

    def revoke(self, principal: str, statement: Statement) -> None:
        """Act as if `statement` were not in `principal`'s policy (until `restore`)."""
        self.revoked.setdefault(principal, set()).add(statement.key)

    def revoke_action(
        self,
        principal: str,
        action: str,
        *,
        resource_part: str = "",
    ) -> list[Statement]:
        """Revoke every statement of `principal` that lists `action` (exactly, as written in
        the policy) on a resource containing `resource_part`; returns them."""
        found = [
            s
            for s in self.principal(principal).statements
            if any(pattern.lower() == action.lower() for pattern in s.actions)
            and any(resource_part in r for r in s.resources)
        ]
        for statement in found:
            self.revoke(principal, statement)
        return found

    def restore(self) -> None:
        self.revoked.clear()

    def used_grants(self) -> set[tuple[str, int, int]]:
        """(policy path, statement index, resource index) of every grant a call used."""
        with self._lock:
            return set(self._used)

    # -- the botocore seam --

    def install(self) -> None:
        from botocore.client import BaseClient

        global _active
        with _active_lock:
            if _active is not None:
                raise LocalParityError(
                    "another local stack's IAM enforcement is installed: "
                    "one local stack per process at a time"
                )
            _active = self
        enforcer, original = self, BaseClient._make_api_call
        self._original = original

        def _make_api_call(client: Any, operation_name: str, api_params: Any) -> Any:
            principal = enforcer._caller(client)
            if principal is None:
                return original(client, operation_name, api_params)
            enforcer.authorize(principal, client, operation_name, api_params)
            try:
                return original(client, operation_name, api_params)
            except Exception as exc:
                enforcer._hide_missing_key(principal, client, operation_name, api_params, exc)
                raise

        BaseClient._make_api_call = _make_api_call

    def uninstall(self) -> None:
        from botocore.client import BaseClient

        global _active
        if self._original is not None:
            BaseClient._make_api_call = self._original
            self._original = None
        with _active_lock:
            if _active is self:
                _active = None
        SESSION_USAGE.add(
            {key for used in self.used_grants() for key in self.grant_keys.get(used, ())}
        )

    def _caller(self, client: Any) -> Principal | None:
        credentials = getattr(client._request_signer, "_credentials", None)
        if credentials is None:
            return None
        return self._principals.get(credentials.get_frozen_credentials().access_key)

    def authorize(
        self, principal: Principal, client: Any, operation: str, params: Mapping[str, Any]
    ) -> None:
        """Raise the service's AccessDenied unless `principal` may make this call."""
        service = client.meta.service_model.service_name
        requests = requests_for(
            service, operation, params, region=self.region, account=self.account
        )
        if service == "secretsmanager" and operation == "GetSecretValue":
            requests = [*requests, *self._secret_decrypt(params["SecretId"])]
        for request in requests:
            grant = self._grant(principal, request)
            with self._lock:
                (self.records if grant else self.denied).append(
                    CallRecord(
                        principal.name,
                        f"{service}:{operation}",
                        request.action,
                        request.resource,
                        grant,
                    )
                )
            if grant is None:
                raise _access_denied(client, service, operation, principal, request)

    def _secret_decrypt(self, secret_id: str) -> list[Request]:
        """What reading the secret needs of KMS: Secrets Manager decrypts it with its key as
        the caller, so a customer managed key needs `kms:Decrypt` on that key by way of
        Secrets Manager (`kms:ViaService`); the AWS managed key `aws/secretsmanager` needs
        no grant (moto reads the secret without asking KMS at all)."""
        from moto.secretsmanager.models import secretsmanager_backends

        secret = secretsmanager_backends[self.account][self.region].secrets.get(secret_id)
        key = getattr(secret, "kms_key_id", None)
        if not key or key.endswith("alias/aws/secretsmanager"):
            return []
        if "alias/" in key:
            raise UnmappedCall(f"secretsmanager:GetSecretValue under the KMS alias {key!r}")
        arn = (
            key if key.startswith("arn:") else f"arn:aws:kms:{self.region}:{self.account}:key/{key}"
        )
        via = ("kms:ViaService", f"secretsmanager.{self.region}.amazonaws.com")
        return [Request("kms:Decrypt", arn, (via,))]

    def _grant(self, principal: Principal, request: Request) -> tuple[str, int, int] | None:
        """The grant that allows `request` (recorded as used), or None."""
        found = principal.grant(
            request.action,
            request.resource,
            skip=frozenset(self.revoked.get(principal.name, ())),
            context=dict(request.context),
        )
        if found is None:
            return None
        statement, index = found
        with self._lock:
            self._used.add((*statement.key, index))
        return (*statement.key, index)

    def _hide_missing_key(
        self,
        principal: Principal,
        client: Any,
        operation: str,
        params: Mapping[str, Any],
        exc: Exception,
    ) -> None:
        """S3 answers a read of a missing key (or version) with 403 when the caller may not
        list the bucket, so keys cannot be probed; moto answers 404 regardless."""
        from botocore.exceptions import ClientError

        if (
            client.meta.service_model.service_name != "s3"
            or operation not in ("GetObject", "HeadObject")
            or not isinstance(exc, ClientError)
            or exc.response.get("Error", {}).get("Code")
            not in ("NoSuchKey", "NoSuchVersion", "404")
        ):
            return
        # The grant that turns S3's 403 into the 404 the caller expects counts as used.
        listing = Request("s3:ListBucket", f"arn:aws:s3:::{params['Bucket']}")
        if self._grant(principal, listing) is None:
            raise _access_denied(client, "s3", operation, principal, listing) from None


def _access_denied(
    client: Any, service: str, operation: str, principal: Principal, request: Request
) -> Exception:
    code, status = _DENIED.get(service, ("AccessDeniedException", 403))
    message = (
        f"User: {principal.role_arn.replace(':role/', ':assumed-role/')}/"
        f"{principal.name} is not authorized to perform: {request.action} on "
        f"resource: {request.resource} because no identity-based policy allows the "
        f"{request.action} action"
    )
    response = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return client.exceptions.from_code(code)(response, operation)


class UsageLog:
    """The grants (their keys: local.aws.template.GrantKey) every local stack of this
    process used, and the variants of the template besides the default one whose grants
    are judged too (the suite's least-privilege check reads both once every other test
    ran: tests/local/aws/least_privilege.py)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._used: set[tuple[str, ...]] = set()
        self._variants: dict[str, Mapping[str, Any]] = {}

    def add(self, used: set[tuple[str, ...]]) -> None:
        with self._lock:
            self._used |= used

    def used(self) -> set[tuple[str, ...]]:
        with self._lock:
            return set(self._used)

    def add_variant(self, name: str, body: Mapping[str, Any]) -> None:
        """Judge the grants of template `body` too (a variant a test ran a local stack of):
        each must be used by some call of the suite, in whichever variant."""
        with self._lock:
            self._variants[name] = body

    def variants(self) -> dict[str, Mapping[str, Any]]:
        with self._lock:
            return dict(self._variants)


SESSION_USAGE = UsageLog()
