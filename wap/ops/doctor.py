"""`wap doctor`: is a deployed (or the local) stack able to ingest? Checked step by step.

What a user runs right after `cdk deploy`. Every check runs through the deployment's own
parts where it matters: Nessie is asked from inside the VPC by the trigger Lambda (its
doctor mode), the smoke job is submitted by the trigger's role and runs as the job role
with the deployed entry point, archive, jars and Spark conf (spark_jobs/smoke.py). Nothing
secret is printed: the Slack check says whether a token is set, never which.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ingestion.naming import split_s3_uri

# Outputs the tools and the doctor read (infra/stack.py defines them).
REQUIRED_OUTPUTS = (
    "SourceBucketName",
    "ArtifactsBucketName",
    "NessieApiUrl",
    "StateMachineArn",
    "LedgerTableName",
    "SlackSecretArn",
)
FUNCTIONS = ("trigger", "job_status", "retry_job", "publish", "alert", "finish", "sweeper")
ENDED = ("SUCCESS", "FAILED", "CANCELLED")


@dataclass(frozen=True)
class Check:
    """One step's verdict."""

    name: str
    ok: bool
    detail: str


class DoctorTarget(Protocol):
    """A stack to examine: the local one or a deployed one."""

    label: str

    def outputs(self) -> dict[str, str]: ...

    def client(self, service: str) -> Any: ...

    def functions(self) -> dict[str, str]:
        """Our functions: package name (`trigger`) -> function name."""
        ...

    def init_failure(self, function_name: str) -> str | None:
        """Why the function's last cold start failed to import its handler, or None."""
        ...


def run_doctor(
    target: DoctorTarget,
    *,
    timeout: float = 900,
    poll_seconds: float = 5,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[Check]:
    """Every check, in order; a check whose prerequisite failed is reported as skipped."""
    checks: list[Check] = []
    outputs = target.outputs()
    missing = [name for name in REQUIRED_OUTPUTS if not outputs.get(name)]
    checks.append(
        Check(
            "stack outputs",
            not missing,
            f"missing {', '.join(missing)}"
            if missing
            else f"{len(REQUIRED_OUTPUTS)} outputs present",
        )
    )
    functions = target.functions()
    for name in FUNCTIONS:
        checks.append(_function_check(target, name, functions.get(name)))
    checks.append(_slack_check(target, outputs.get("SlackSecretArn")))
    checks.append(_prices_check(target, functions.get("finish")))
    trigger = functions.get("trigger")
    nessie = _invoke_doctor(target, trigger, {"check": "nessie"})
    checks.append(_nessie_check(nessie))
    checks += _role_checks(target)
    checks += _smoke_checks(
        target,
        trigger,
        outputs,
        timeout=timeout,
        poll_seconds=poll_seconds,
        sleep=sleep,
        clock=clock,
    )
    return checks


def _role_checks(target: DoctorTarget) -> list[Check]:
    """Each catalog role's token gets what the rules say (wap/ops/role_checks.py), for the
    roles whose tokens the target can get (`catalog_tokens`: none for a catalog without
    authentication)."""
    from wap.ops.role_checks import check_roles

    tokens_of = getattr(target, "catalog_tokens", None)
    found = tokens_of() if tokens_of is not None else None
    if not found:
        return []
    nessie_v2, tokens = found
    return [
        Check(f"catalog role {verdict.role}", verdict.ok, verdict.detail)
        for verdict in check_roles(nessie_v2, tokens)
    ]


def _function_check(target: DoctorTarget, name: str, function: str | None) -> Check:
    if function is None:
        return Check(f"lambda {name}", False, "not in the stack")
    failure = target.init_failure(function)
    if failure:
        return Check(f"lambda {name}", False, f"handler does not import: {failure}")
    return Check(f"lambda {name}", True, f"{function}: no failed cold start")


def emr_prices_check(region: str | None, configured: str | None) -> Check:
    """Whether each load's cost will be known: the region's list prices, the deploy's own
    (`emrPrices`), or none (costs show as unknown: a warning, never a failure)."""
    from contracts.pricing import missing_prices

    missing = missing_prices(region, configured)
    if missing:
        return Check("emr prices", True, f"costs will be unknown: {missing}")
    if configured:
        return Check("emr prices", True, "loads are priced at the configured emrPrices")
    return Check("emr prices", True, f"loads are priced at {region}'s list prices")


def _prices_check(target: DoctorTarget, finish: str | None) -> Check:
    """emr_prices_check for the finish function (it prices each run) as deployed."""
    from ingestion import constants as c

    if finish is None:
        return Check("emr prices", True, "not checked: no finish function")
    client = target.client("lambda")
    try:
        configuration = client.get_function_configuration(FunctionName=finish)
    except Exception as exc:
        return Check("emr prices", True, f"not checked: {type(exc).__name__}: {exc}")
    variables = configuration.get("Environment", {}).get("Variables", {})
    return emr_prices_check(client.meta.region_name, variables.get(c.ENV_EMR_PRICES))


def _slack_check(target: DoctorTarget, secret_arn: str | None) -> Check:
    from ingestion.alerting.exceptions import AlertError
    from ingestion.alerting.secrets import load_slack_token

    if not secret_arn:
        return Check("slack secret", False, "no SlackSecretArn output")
    try:
        token = load_slack_token(secret_arn, client=target.client("secretsmanager"))
    except AlertError as exc:
        return Check("slack secret", False, str(exc))
    if token is None:
        return Check(
            "slack secret",
            False,
            f'no token in {secret_arn}: alerts are only logged (README: "Set the Slack token")',
        )
    return Check("slack secret", True, "a bot token is set")


def _invoke_doctor(
    target: DoctorTarget, trigger: str | None, request: dict[str, Any]
) -> dict[str, Any]:
    """The trigger's answer in doctor mode: {"ok": True, ...} or {"ok": False, "error": ...}."""
    if trigger is None:
        return {"ok": False, "error": "no trigger function"}
    try:
        response = target.client("lambda").invoke(
            FunctionName=trigger, Payload=json.dumps({"wap_doctor": request}).encode()
        )
        payload = json.loads(response["Payload"].read() or b"null")
    except Exception as exc:
        return {"ok": False, "error": f"cannot invoke {trigger}: {exc}"}
    if not isinstance(payload, dict):
        return {"ok": False, "error": f"{trigger} answered {payload!r}"}
    if response.get("FunctionError"):
        return {"ok": False, "error": f"{payload.get('errorType')}: {payload.get('errorMessage')}"}
    return {"ok": True, **payload}


def _nessie_check(answer: dict[str, Any]) -> Check:
    name = "nessie from the trigger"
    if not answer["ok"]:
        return Check(name, False, answer["error"])
    config = answer.get("config", {})
    return Check(
        name,
        True,
        f"/api/v2/config: default branch {config.get('defaultBranch')}, "
        f"API v{config.get('maxSupportedApiVersion')}",
    )


def _smoke_checks(
    target: DoctorTarget,
    trigger: str | None,
    outputs: dict[str, str],
    *,
    timeout: float,
    poll_seconds: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> list[Check]:
    run_id = uuid.uuid4().hex[:16]
    started = _invoke_doctor(target, trigger, {"check": "smoke_job", "run_id": run_id})
    if not started["ok"]:
        return [Check("smoke job submitted", False, started["error"])]
    checks = [
        Check(
            "smoke job submitted",
            True,
            f"job run {started['job_run_id']} (branch {started['branch']})",
        )
    ]
    emr = target.client("emr-serverless")
    deadline = clock() + timeout
    while True:
        try:
            run = emr.get_job_run(
                applicationId=started["application_id"], jobRunId=started["job_run_id"]
            )["jobRun"]
        except Exception as exc:  # e.g. AccessDenied for the user running the doctor
            return [*checks, Check("smoke job ran", False, f"cannot read the job run: {exc}")]
        if run["state"] in ENDED or clock() >= deadline:
            break
        sleep(poll_seconds)
    if run["state"] not in ENDED:
        return [
            *checks,
            Check("smoke job ran", False, f"still {run['state']} after {timeout:.0f} s"),
        ]
    ran = run["state"] == "SUCCESS"
    checks.append(
        Check(
            "smoke job ran",
            ran,
            run["state"] if ran else f"{run['state']}: {run.get('stateDetails', '')}",
        )
    )
    report, problem = _read_report(target, started["report_uri"])
    checks.append(
        Check("smoke report read back", report is not None, problem or started["report_uri"])
    )
    for step in (report or {}).get("steps", []):
        checks.append(Check(f"smoke: {step['step']}", bool(step["ok"]), str(step["detail"])))
    return checks


def _read_report(target: DoctorTarget, uri: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        bucket, key = split_s3_uri(uri)
        body = target.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        return json.loads(body), None
    except Exception as exc:
        return None, f"cannot read {uri}: {exc}"


def render(checks: list[Check], label: str) -> str:
    """The doctor's printout: one line per check, then the verdict."""
    width = max(len(c.name) for c in checks)
    lines = [f"wap doctor: {label}"]
    lines += [f"  {'PASS' if c.ok else 'FAIL'}  {c.name.ljust(width)}  {c.detail}" for c in checks]
    failed = [c.name for c in checks if not c.ok]
    lines.append(
        f"all {len(checks)} checks passed"
        if not failed
        else f"{len(failed)} of {len(checks)} checks failed: {', '.join(failed)}"
    )
    return "\n".join(lines)


# ---- the two kinds of stack -----------------------------------------------------------------


class LocalDoctorTarget:
    """The local stack (local/aws/stack.py): its template outputs and in-process Lambdas."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.label = "the local stack"

    def outputs(self) -> dict[str, str]:
        return self.stack.outputs()

    def client(self, service: str) -> Any:
        return self.stack.client(service)

    def functions(self) -> dict[str, str]:
        return {name: name for name in self.stack.functions}

    def init_failure(self, function_name: str) -> str | None:
        return self.stack.dispatcher.import_errors.get(function_name)


class AwsDoctorTarget:
    """A deployed stack, through the user's boto3 session."""

    def __init__(
        self,
        session: Any,
        stack_name: str,
        outputs: dict[str, str],
        *,
        nessie_url: str | None = None,
    ) -> None:
        self.session = session
        self.stack_name = stack_name
        self._outputs = outputs
        self._configurations: dict[str, dict[str, Any]] = {}
        self.label = f"stack {stack_name} in {session.region_name}"
        self.nessie_url = nessie_url

    def catalog_tokens(self) -> tuple[str, dict[str, Callable[[], str]]] | None:
        """Nessie's API v2 URL (`--nessie-url` through a port forward, else the stack's) and
        a token per role: each machine role's from its client credentials (its secret, read
        with the user's AWS credentials: the operator needs secretsmanager:GetSecretValue
        on them) and the signed-in person's (`wap --aws login`), under their roles claim."""
        from contracts.catalog_tokens import CatalogCredentials, request_token
        from wap.ops.login import LoginConfig, PersonTokens
        from wap.ops.role_checks import token_roles

        secrets = json.loads(self._outputs.get("CatalogCredentialSecrets") or "{}")
        if not secrets:
            return None
        client = self.client("secretsmanager")

        def machine(arn: str) -> Callable[[], str]:
            def token() -> str:
                value = json.loads(client.get_secret_value(SecretId=arn)["SecretString"])
                credentials = CatalogCredentials(
                    value["token_endpoint"], value["client_id"], value["client_secret"]
                )
                return request_token(credentials, value["client_secret"], now=time.time()).value

            return token

        tokens = {role: machine(arn) for role, arn in sorted(secrets.items())}
        try:
            person = PersonTokens(
                LoginConfig.from_outputs(self._outputs, self.stack_name, self.session.region_name)
            )
            token = person.token()
            for role in token_roles(token) or ():
                tokens[role] = person.token
        except Exception:  # noqa: S110 - not signed in: the machine roles are still checked
            pass
        base = self.nessie_url or self._outputs["NessieApiUrl"]
        return re.sub(r"/api(/v[12])?/?$", "", base.rstrip("/")) + "/api/v2", tokens

    def outputs(self) -> dict[str, str]:
        return dict(self._outputs)

    def client(self, service: str) -> Any:
        return self.session.client(service)

    def functions(self) -> dict[str, str]:
        cfn, lam = self.client("cloudformation"), self.client("lambda")
        found = {}
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=self.stack_name):
            for resource in page["StackResourceSummaries"]:
                if resource["ResourceType"] != "AWS::Lambda::Function":
                    continue
                name = resource["PhysicalResourceId"]
                configuration = lam.get_function_configuration(FunctionName=name)
                handler = configuration.get("Handler", "")
                if handler.startswith("lambdas."):
                    found[handler.split(".")[1]] = name
                    self._configurations[name] = configuration
        return found

    def init_failure(self, function_name: str) -> str | None:
        """The latest `Runtime.ImportModuleError` the function logged since it was last
        deployed (the runtime logs one when the handler's module does not import)."""
        configuration = self._configurations.get(function_name, {})
        # The stack gives each function a log group of its own (LoggingConfig), not
        # /aws/lambda/<name>.
        group = configuration.get("LoggingConfig", {}).get("LogGroup") or (
            f"/aws/lambda/{function_name}"
        )
        since = _epoch_ms(configuration.get("LastModified")) or int((time.time() - 86400) * 1000)
        logs = self.client("logs")
        latest: dict[str, Any] | None = None
        try:
            pages = logs.get_paginator("filter_log_events").paginate(
                logGroupName=group, startTime=since, filterPattern='"Runtime.ImportModuleError"'
            )
            for page in pages:
                for event in page["events"]:
                    if latest is None or event["timestamp"] > latest["timestamp"]:
                        latest = event
        except logs.exceptions.ResourceNotFoundException:
            return None  # never invoked
        return latest["message"].strip()[:300] if latest else None


def _epoch_ms(last_modified: str | None) -> int | None:
    """Lambda's `LastModified` (`2026-11-23T10:00:00.000+0000`) in epoch milliseconds."""
    from datetime import datetime

    if not last_modified:
        return None
    try:
        return int(datetime.strptime(last_modified, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000)
    except ValueError:
        return None
