"""The CloudFormation template `cdk synth` produces, for the local stack to run.

The local stack takes each Lambda's handler, environment, memory and timeout, the state
machine, the EMR application and the job's submit parameters from this template, so
what runs locally is what `cdk deploy` would create. Synthesizing costs about 20 s, so
the template is cached under `build/template/`, keyed by a digest of everything that
decides it (the sources CDK reads, the Iceberg jar, the CDK versions, the context);
one process reads it once (`stack_template` is memoized).

Synthesis runs the CDK CLI (`node_modules/.bin/cdk synth`, as `make synth`), so the
template is the CLI's: cdk.json's context applied, construct paths in the metadata.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
# What `cdk synth` reads from the repository (cdk.json's watch list plus the CLI's inputs).
SOURCE_INPUTS = (
    "contracts",
    "ingestion",
    "infra",
    "lambdas",
    "statemachine",
    "spark_jobs",
    "tables",
    "requirements-lambda.txt",
    "requirements-lambda-maintenance.txt",
    "cdk.json",
)
# Installed packages whose versions shape the template (PyYAML is vendored into the job zip).
TOOL_PACKAGES = ("aws-cdk-lib", "constructs", "cdk-nag", "PyYAML")
ICEBERG_WHEEL = "snowpark-connect-deps-iceberg"
# Bump when the cached file's layout changes.
CACHE_FORMAT = "1"
_SKIP_NAMES = {"__pycache__", ".pytest_cache", ".ruff_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")
# CDK's own deploy-time helpers: they configure what the local stack creates directly.
CDK_PROVIDER_PREFIXES = ("BucketNotificationsHandler", "Custom::")
# Functions of the identity provider, not of the pipeline: Cognito invokes its pre token
# generation trigger (infra/token_roles.py) while it issues a token; locally the stand-in
# (local/idp.py) writes the same `roles` claim itself.
IDENTITY_PROVIDER_FUNCTIONS = ("Identity/TokenRoles",)
LAMBDA_PACKAGE_PREFIX = "lambdas."


# One action of a grant, named apart from its position in its policy: (policy path, effect,
# action, condition, resource), the last two as JSON text (StackTemplate.grants).
GrantKey = tuple[str, str, str, str, str]


class TemplateError(RuntimeError):
    """The template could not be synthesized, or lacks what the local stack needs."""


@dataclass(frozen=True)
class FunctionResource:
    """One of our Lambdas in the template: `name` is its package under lambdas/."""

    name: str
    logical_id: str
    path: str
    properties: Mapping[str, Any]

    @property
    def handler(self) -> str:
        return self.properties["Handler"]

    @property
    def environment(self) -> Mapping[str, Any]:
        """The raw (unresolved) `Environment.Variables`."""
        return self.properties.get("Environment", {}).get("Variables", {})


@dataclass(frozen=True)
class StackTemplate:
    """One synthesized stack: its name, region, the context it was built with, the template."""

    stack_name: str
    region: str
    context: Mapping[str, str]
    key: str
    body: Mapping[str, Any] = field(repr=False)

    @property
    def resources(self) -> Mapping[str, Mapping[str, Any]]:
        return self.body["Resources"]

    def path(self, logical_id: str) -> str:
        """The construct path below the stack, without CDK's trailing `/Resource`."""
        metadata = self.resources[logical_id].get("Metadata", {})
        full = metadata.get("aws:cdk:path")
        if not full:
            raise TemplateError(
                f"{logical_id} has no aws:cdk:path metadata (synthesized without the CDK CLI?)"
            )
        relative = full.split("/", 1)[1] if "/" in full else full
        return relative.removesuffix("/Resource")

    def logical_id(self, path: str) -> str:
        """The logical id of the resource at construct path `path` (as `path()` names it)."""
        found = [lid for lid in self.resources if self._path_or_none(lid) == path]
        if len(found) != 1:
            raise TemplateError(f"{len(found)} resources at construct path {path!r}")
        return found[0]

    def _path_or_none(self, logical_id: str) -> str | None:
        try:
            return self.path(logical_id)
        except TemplateError:
            return None

    def of_type(self, resource_type: str) -> dict[str, Mapping[str, Any]]:
        return {lid: r for lid, r in self.resources.items() if r["Type"] == resource_type}

    def only(self, resource_type: str) -> tuple[str, Mapping[str, Any]]:
        """(logical id, Properties) of the one resource of `resource_type`."""
        found = self.of_type(resource_type)
        if len(found) != 1:
            raise TemplateError(f"expected one {resource_type}, the template has {len(found)}")
        ((lid, resource),) = found.items()
        return lid, resource.get("Properties", {})

    def role_of(self, properties: Mapping[str, Any], attribute: str = "Role") -> str:
        """The logical id of the role a resource's `attribute` names (`Fn::GetAtt [Role, Arn]`)."""
        value = properties.get(attribute)
        if not (
            isinstance(value, Mapping) and "Fn::GetAtt" in value and value["Fn::GetAtt"][1] == "Arn"
        ):
            raise TemplateError(f"{attribute} {value!r} is not a role of this template")
        return value["Fn::GetAtt"][0]

    def policies_of(self, role_logical_id: str) -> dict[str, Mapping[str, Any]]:
        """The AWS::IAM::Policy resources attached to a role: logical id -> Properties."""
        return {
            lid: r["Properties"]
            for lid, r in self.of_type("AWS::IAM::Policy").items()
            if {"Ref": role_logical_id} in r["Properties"].get("Roles", [])
        }

    def grants(self) -> dict[tuple[str, int, int], tuple[GrantKey, ...]]:
        """Every grant of the template's IAM policies: (policy path, statement index,
        resource index), as local/aws/iam.py records a grant a call used, -> the keys of
        its actions on that resource (one GrantKey per action), which name the grant apart
        from how it is written: CDK groups statements differently with other settings and
        feature flags (minimizePolicies), so a grant's position and its statement's action
        list differ between variants of the template, its keys do not."""
        found: dict[tuple[str, int, int], tuple[GrantKey, ...]] = {}
        for policy_id, resource in self.of_type("AWS::IAM::Policy").items():
            path = self.path(policy_id)
            statements = resource["Properties"]["PolicyDocument"]["Statement"]
            for index, statement in enumerate(statements):
                actions = statement["Action"]
                actions = actions if isinstance(actions, list) else [actions]
                resources = statement["Resource"]
                resources = resources if isinstance(resources, list) else [resources]
                condition = json.dumps(statement.get("Condition"), sort_keys=True)
                effect = statement.get("Effect", "Allow")
                for r_index, granted in enumerate(resources):
                    text = json.dumps(granted, sort_keys=True)
                    found[(path, index, r_index)] = tuple(
                        (path, effect, action, condition, text) for action in actions
                    )
        return found

    def functions(self) -> dict[str, FunctionResource]:
        """Our Lambdas by package name (`lambdas.<name>.handler.handler`).

        CDK's custom-resource providers are skipped; any other function is an error,
        since the local stack would silently not run it.
        """
        functions: dict[str, FunctionResource] = {}
        for lid, resource in self.of_type("AWS::Lambda::Function").items():
            path = self.path(lid)
            properties = resource["Properties"]
            handler = properties.get("Handler", "")
            if path.startswith(CDK_PROVIDER_PREFIXES) or path in IDENTITY_PROVIDER_FUNCTIONS:
                continue
            if not handler.startswith(LAMBDA_PACKAGE_PREFIX) or handler.count(".") < 2:
                raise TemplateError(
                    f"Lambda {path} has handler {handler!r}: the local stack runs only "
                    f"`{LAMBDA_PACKAGE_PREFIX}<package>.<module>.<function>` handlers"
                )
            name = handler.split(".")[1]
            if name in functions:
                raise TemplateError(f"two Lambdas run package lambdas.{name}")
            functions[name] = FunctionResource(name, lid, path, properties)
        return functions


def _files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for child in sorted(path.rglob("*")):
        relative = child.relative_to(path)
        if any(part in _SKIP_NAMES or part.startswith(".") for part in relative.parts):
            continue
        if child.is_file() and not child.name.endswith(_SKIP_SUFFIXES):
            yield child


def _iceberg_jar_identity() -> str:
    """Which Iceberg runtime jar the synth uploads: the wheel's version, the jar's name and size.

    Cheaper than hashing its 47 MB; the wheel pins the jar (infra.constants).
    """
    from infra.bundling import iceberg_runtime_jar

    jar = iceberg_runtime_jar()
    return f"{importlib.metadata.version(ICEBERG_WHEEL)}:{jar.name}:{jar.stat().st_size}"


def _cli_version(root: Path) -> str:
    package = root / "node_modules" / "aws-cdk" / "package.json"
    if not package.is_file():
        return "missing"
    return json.loads(package.read_text())["version"]


def input_digest(context: Mapping[str, str], *, root: Path = REPO_ROOT) -> str:
    """A digest of everything that decides the template of `context`, for the cache key."""
    sha = hashlib.sha256()

    def add(name: str, data: bytes) -> None:
        sha.update(name.encode() + b"\0" + hashlib.sha256(data).digest())

    add("format", CACHE_FORMAT.encode())
    add("context", json.dumps(dict(context), sort_keys=True).encode())
    for name in SOURCE_INPUTS:
        for path in _files(root / name):
            add(str(path.relative_to(root)), path.read_bytes())
    for package in TOOL_PACKAGES:
        add(package, importlib.metadata.version(package).encode())
    add("cdk-cli", _cli_version(root).encode())
    add("iceberg-jar", _iceberg_jar_identity().encode())
    return sha.hexdigest()[:20]


def cache_dir(root: Path = REPO_ROOT) -> Path:
    return root / "build" / "template"


@contextlib.contextmanager
def exclusive_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_file` (one synth at a time per checkout: concurrent
    test runs wait and read the result)."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_cached(path: Path) -> StackTemplate | None:
    try:
        data = json.loads(path.read_text())
        return StackTemplate(
            stack_name=data["stack_name"],
            region=data["region"],
            context=data["context"],
            key=data["key"],
            body=data["template"],
        )
    except (OSError, ValueError, KeyError, TypeError):  # absent or unreadable: synthesize
        return None


def _write_cached(path: Path, template: StackTemplate) -> None:
    data = {
        "key": template.key,
        "stack_name": template.stack_name,
        "region": template.region,
        "context": dict(template.context),
        "template": template.body,
    }
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    staging.write_text(json.dumps(data))
    os.replace(staging, path)  # readers see the old file or the whole new one


def synthesize(
    context: Mapping[str, str], *, root: Path = REPO_ROOT, key: str = ""
) -> StackTemplate:
    """Run `cdk synth` (the CLI under node_modules) for `context`; returns the one stack.

    Offline and without credentials, as tests/infra/test_cli_synth.py runs it: AWS_* and
    CDK_* are not passed on, so the account stays `AWS::AccountId` and nothing but the
    context given here reaches the app.
    """
    cli = root / "node_modules" / ".bin" / "cdk"
    if not cli.exists():
        raise TemplateError(
            f"{cli} is missing: the local stack runs what `cdk synth` produces and needs the "
            "pinned CDK CLI (`make setup` runs npm ci)"
        )
    env = {
        name: value for name, value in os.environ.items() if not name.startswith(("AWS_", "CDK_"))
    }
    # Nothing to phone home about from a local build step: no telemetry, no version check.
    env |= {
        "AWS_EC2_METADATA_DISABLED": "true",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "CDK_DISABLE_VERSION_CHECK": "true",
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    }
    flags = [item for name, value in sorted(context.items()) for item in ("-c", f"{name}={value}")]
    outdir = Path(tempfile.mkdtemp(prefix="wap-synth-"))
    try:
        result = subprocess.run(  # noqa: S603 (our own CLI, fixed arguments)
            [str(cli), "synth", "--no-notices", "--quiet", "-o", str(outdir), *flags],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
        if result.returncode != 0:
            raise TemplateError(
                f"cdk synth failed (exit {result.returncode}):\n"
                f"{(result.stderr or result.stdout).strip()[-3000:]}"
            )
        manifest = json.loads((outdir / "manifest.json").read_text())
        stacks = {
            name: artifact
            for name, artifact in manifest["artifacts"].items()
            if artifact["type"] == "aws:cloudformation:stack"
        }
        if len(stacks) != 1:
            raise TemplateError(f"cdk synth produced {len(stacks)} stacks: {sorted(stacks)}")
        ((artifact_id, artifact),) = stacks.items()
        properties = artifact["properties"]
        body = json.loads((outdir / properties["templateFile"]).read_text())
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    return StackTemplate(
        stack_name=properties.get("stackName", artifact_id),
        region=artifact["environment"].rsplit("/", 1)[-1],
        context=dict(context),
        key=key,
        body=body,
    )


def cached_template(context: Mapping[str, str], *, root: Path = REPO_ROOT) -> StackTemplate:
    """The template of `context`: from `build/template/` when its inputs are unchanged."""
    key = input_digest(context, root=root)
    path = cache_dir(root) / f"{key}.json"
    cached = _read_cached(path)
    if cached is not None:
        return cached
    with exclusive_lock(cache_dir(root) / ".lock"):
        cached = _read_cached(path)  # another process may have synthesized it meanwhile
        if cached is not None:
            return cached
        template = synthesize(context, root=root, key=key)
        _write_cached(path, template)
        return template


@functools.cache
def _memoized(context: tuple[tuple[str, str], ...], root: Path) -> StackTemplate:
    return cached_template(dict(context), root=root)


def stack_template(
    context: Mapping[str, str] | None = None, *, root: Path = REPO_ROOT
) -> StackTemplate:
    """The synthesized template of `context`, read once per process (see `cached_template`)."""
    return _memoized(tuple(sorted((context or {}).items())), root)
