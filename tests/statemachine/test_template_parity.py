"""The local stack runs what `cdk synth` produces (DESIGN.md: Parity).

Each Lambda's handler, memory, timeout and environment, the state machine definition
and its substitutions, and the job's submit parameters come from the synthesized
template; the only departures are the ones listed in local/aws/overrides.py.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shutil

import pytest

from ingestion.alerting.config import AlertConfig
from ingestion.config import load_settings
from local.aws import template as template_module
from local.aws.emr_serverless import (
    SubmitParametersError,
    check_submission,
    parse_spark_submit,
)
from local.aws.intrinsics import Resolver, UnresolvedIntrinsic
from local.aws.lambda_sandbox import reserved_environment
from local.aws.overrides import OVERRIDES, LocalParityError
from local.aws.stack import ACCOUNT_ID, StackSettings
from local.aws.template import StackTemplate, input_digest, stack_template
from tests.fixtures.functions import OUR_FUNCTIONS
from tests.fixtures.local_stack import CREATE_TABLES, fake_parquet, wait_for_key
from tests.fixtures.paths import REPO

# The knobs tests and the CLI turn (poll every second, no backoff sleeps, fast timeouts...).
EXPECTED_OVERRIDES = {
    "WAP_NESSIE_UI_URL",
    "WAP_SLACK_API_URL",
    "WAP_JOB_TIMEOUT_MINUTES",
    "JobTimeoutSeconds",
    "PollIntervalSeconds",
    "WAP_JOB_RETRY_BASE_SECONDS",
    "WAP_MAX_PUBLISH_ATTEMPTS",
    "WAP_BLOCKED_START_SECONDS",
    "WAP_AWS_CONSOLE_LINKS",
    "WAP_LINEAGE_URL",
}
NO_OVERRIDES = {
    "poll_interval_seconds": None,
    "job_retry_base_seconds": None,
    "slack_api_url": None,
    "aws_console_links": True,
    # No catalog client in the functions' sandboxes (their identity, added like their AWS
    # credentials; these tests call no Nessie).
    "catalog_credentials": None,
}


@pytest.fixture(scope="module")
def local_template() -> StackTemplate:
    """The template the local stacks of this session run (synthesized once, then cached)."""
    return stack_template(
        StackSettings(
            nessie_api_v1="http://unused/api/v1", job=None, create_tables=CREATE_TABLES
        ).deploy_context()
    )


def _with_variable(template: StackTemplate, name: str, value: object) -> StackTemplate:
    """`template` with `name` added to every Lambda's environment, as an infra change would."""
    body = copy.deepcopy(dict(template.body))
    for function in template.functions().values():
        variables = body["Resources"][function.logical_id]["Properties"]["Environment"]
        variables["Variables"][name] = value
    return dataclasses.replace(template, body=body, key="edited")


# ---- Lambda configuration ---------------------------------------------------------------


def test_lambdas_are_created_with_the_template_configuration(make_stack, local_template):
    stack = make_stack(**NO_OVERRIDES)
    functions = local_template.functions()
    assert set(functions) == OUR_FUNCTIONS

    for name, function in functions.items():
        config = stack.client("lambda").get_function_configuration(FunctionName=name)
        props = function.properties
        assert (config["Handler"], config["Runtime"], config["MemorySize"], config["Timeout"]) == (
            props["Handler"],
            props["Runtime"],
            props["MemorySize"],
            props["Timeout"],
        ), name
        variables = config["Environment"]["Variables"]
        assert set(variables) == set(props["Environment"]["Variables"]), name
        for key, raw in props["Environment"]["Variables"].items():
            if isinstance(raw, str):  # literal in the template: the same value locally
                assert variables[key] == raw, (name, key)


def test_handlers_run_with_their_function_s_memory_and_timeout(make_stack, local_template):
    stack = make_stack()
    seen = {}

    def recording(handler):
        def run(event, context):
            seen["context"] = context
            return handler(event, context)

        return run

    stack.dispatcher.interceptors["sweeper"] = recording
    stack.invoke("sweeper", {})

    props = local_template.functions()["sweeper"].properties
    context = seen["context"]
    assert context.memory_limit_in_mb == props["MemorySize"]
    assert context.timeout_seconds == props["Timeout"]
    assert context.invoked_function_arn == stack.functions["sweeper"].arn
    assert ":eu-west-1:" in context.invoked_function_arn


def test_template_references_resolve_to_the_local_resources(make_stack, nessie):
    stack = make_stack()
    env = stack.env

    assert env["WAP_NESSIE_URI"] == nessie.api_v1
    assert env["WAP_LEDGER_TABLE"] == stack.settings.ledger_table
    assert env["WAP_ARTIFACTS_BUCKET"] == stack.settings.artifacts_bucket
    assert env["WAP_TABLES_CONFIG_PREFIX"] == "s3://wap-artifacts/tables/"
    assert env["WAP_REPORTS_PREFIX"] == "s3://wap-artifacts/reports/"
    assert env["WAP_JOB_ENTRYPOINT"] == "s3://wap-artifacts/jobs/wap_job.py"
    assert env["WAP_JOB_PY_FILES"] == "s3://wap-artifacts/jobs/spark_jobs.zip"
    assert env["WAP_EMR_APPLICATION_ID"] == stack.application_id
    assert env["WAP_STATE_MACHINE_ARN"] == stack.state_machine_arn
    assert env["WAP_STATE_MACHINE_ARN"].endswith(":stateMachine:WapIngest-ingest")
    assert env["WAP_SLACK_CHANNEL"] == "#wap-alerts"  # -c slackChannel of the local deploy
    secret = stack.client("secretsmanager").describe_secret(SecretId=env["WAP_SLACK_SECRET_ARN"])
    assert secret["ARN"] == env["WAP_SLACK_SECRET_ARN"]
    role = env["WAP_EMR_EXECUTION_ROLE_ARN"].rsplit("/", 1)[-1]
    assert (
        stack.client("iam").get_role(RoleName=role)["Role"]["Arn"]
        == (env["WAP_EMR_EXECUTION_ROLE_ARN"])
    )
    conf = dict(
        item.split("=", 1) for item in env["WAP_JOB_SPARK_PARAMETERS"].split() if "=" in item
    )
    assert conf["spark.sql.catalog.lake.uri"] == nessie.api_v2
    assert conf["spark.sql.catalog.lake.warehouse"] == "s3://wap-lake/warehouse/"
    assert conf["spark.jars"].startswith(f"s3://cdk-hnb659fds-assets-{ACCOUNT_ID}-eu-west-1/")


def test_every_function_gets_what_its_handler_reads_from_the_template(make_stack):
    """Handlers share one process environment locally: each function's own must suffice."""
    stack = make_stack(**NO_OVERRIDES)
    for name in OUR_FUNCTIONS:
        variables = stack.client("lambda").get_function_configuration(FunctionName=name)[
            "Environment"
        ]["Variables"]
        load_settings(variables)  # raises ConfigError naming any missing variable
        AlertConfig.from_env(variables)


def test_each_handler_sees_its_own_template_environment_and_nothing_else(make_stack):
    """As on Lambda: the function's variables (its own log service name among them), the
    runtime's reserved ones (its role's credentials among them), nothing from the harness."""
    stack = make_stack(**NO_OVERRIDES)
    reserved = set(
        reserved_environment(
            function_name="x", handler="x", memory_mb=1, region="x", credentials={}, runtime="x"
        )
    )
    credentials = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}
    services = set()
    for name in OUR_FUNCTIONS:
        environment = stack.dispatcher.sandboxes[name].environment
        template = stack.client("lambda").get_function_configuration(FunctionName=name)[
            "Environment"
        ]["Variables"]
        assert set(environment) - {"NESSIEDIR"} == (
            set(template) | reserved | credentials | {"TMPDIR"}
        ), name
        assert {k: environment[k] for k in template} == template
        assert environment["AWS_LAMBDA_FUNCTION_NAME"] == name
        services.add(environment["POWERTOOLS_SERVICE_NAME"])
    assert len(services) == len(OUR_FUNCTIONS)


# ---- overrides --------------------------------------------------------------------------


def test_the_override_list_is_short_and_explained():
    assert {o.name for o in OVERRIDES} == EXPECTED_OVERRIDES
    assert len(OVERRIDES) <= 10  # 10th: the lineage receiver, whose port varies per run
    assert all(len(o.why) > 20 for o in OVERRIDES)


def _generated_ids_masked(stack) -> dict[str, str]:
    """The shared environment with ids moto generates per stack replaced by placeholders."""
    # Secrets Manager ends each secret's ARN with 6 random characters (the Slack token's,
    # the catalog clients').
    return {
        key: re.sub(
            r"(:secret:[\w/+=.@-]+)-\w{6}$",
            r"\1-<id>",
            value.replace(stack.application_id, "<app>"),
        )
        for key, value in stack.env.items()
    }


def _template_definition(stack, template: StackTemplate, **changed: str) -> dict:
    """The template's definition with its substitutions (function ARNs: the stack's), rendered
    here, independently of the local stack's resolver."""
    _, props = template.only("AWS::StepFunctions::StateMachine")
    by_logical_id = {fn.logical_id: name for name, fn in template.functions().items()}
    values = {}
    for key, raw in props["DefinitionSubstitutions"].items():
        if isinstance(raw, str):
            values[key] = raw
        else:
            logical_id, attribute = raw["Fn::GetAtt"]
            assert attribute == "Arn"
            values[key] = stack.functions[by_logical_id[logical_id]].arn
    values.update(changed)
    return json.loads(
        re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], props["DefinitionString"])
    )


def test_only_listed_overrides_differ_from_the_template(make_stack, local_template):
    plain = make_stack(**NO_OVERRIDES)
    plain_env = _generated_ids_masked(plain)
    assert json.loads(plain.state_machine_definition) == _template_definition(plain, local_template)
    plain.stop()
    tuned = make_stack(
        job_timeout_seconds=3, max_publish_attempts=2, nessie_ui_url="http://127.0.0.1:19120"
    )
    tuned_env = _generated_ids_masked(tuned)

    changed = {
        key
        for key in plain_env.keys() | tuned_env.keys()
        if plain_env.get(key) != tuned_env.get(key)
    }
    assert changed == {
        "WAP_JOB_TIMEOUT_MINUTES",
        "WAP_JOB_RETRY_BASE_SECONDS",
        "WAP_MAX_PUBLISH_ATTEMPTS",
        "WAP_NESSIE_UI_URL",
        "WAP_SLACK_API_URL",
        "WAP_AWS_CONSOLE_LINKS",
    }
    assert changed <= EXPECTED_OVERRIDES
    assert json.loads(tuned.state_machine_definition) == _template_definition(
        tuned, local_template, PollIntervalSeconds="1", JobTimeoutSeconds="3"
    )


def test_an_override_of_a_value_the_template_lacks_is_refused(make_stack, local_template):
    body = copy.deepcopy(dict(local_template.body))
    for function in local_template.functions().values():
        del body["Resources"][function.logical_id]["Properties"]["Environment"]["Variables"][
            "WAP_MAX_PUBLISH_ATTEMPTS"
        ]
    edited = dataclasses.replace(local_template, body=body, key="edited")
    with pytest.raises(LocalParityError, match="WAP_MAX_PUBLISH_ATTEMPTS"):
        make_stack(template=edited, max_publish_attempts=2)


# ---- the state machine --------------------------------------------------------------------


def test_the_state_machine_is_the_template_s_definition(make_stack, local_template):
    stack = make_stack(**NO_OVERRIDES)
    _, props = local_template.only("AWS::StepFunctions::StateMachine")

    described = stack.client("stepfunctions").describe_state_machine(
        stateMachineArn=stack.state_machine_arn
    )
    assert described["name"] == props["StateMachineName"]
    assert json.loads(described["definition"]) == _template_definition(stack, local_template)


# ---- the job ------------------------------------------------------------------------------


def _ingest_one(stack, key: str) -> tuple[dict, dict]:
    """Drop one file and wait for the stack to settle: (its ledger record, its EMR job run)."""
    stack.drop_file(key, fake_parquet(key))
    record = wait_for_key(stack, key)
    stack.wait_idle()
    run = stack.client("emr-serverless").get_job_run(
        applicationId=stack.application_id, jobRunId=record.job_run_id
    )["jobRun"]
    return record, run


def test_the_template_s_spark_parameters_reach_the_job_run(make_stack):
    stack = make_stack()
    record, run = _ingest_one(stack, "submit/orders/x.parquet")

    assert record.status == "PUBLISHED", record
    submit = run["jobDriver"]["sparkSubmit"]
    assert submit["entryPoint"] == stack.env["WAP_JOB_ENTRYPOINT"]
    assert submit["sparkSubmitParameters"] == (
        f"{stack.env['WAP_JOB_SPARK_PARAMETERS']} --py-files {stack.env['WAP_JOB_PY_FILES']}"
    )
    parsed = stack.emr.submissions[record.job_run_id]
    assert parsed.conf["spark.sql.session.timeZone"] == "UTC"
    assert parsed.options["--py-files"] == [stack.env["WAP_JOB_PY_FILES"]]


def test_submit_parameters_spark_submit_would_refuse_fail_the_run(make_stack, local_template):
    edited = _with_variable(
        local_template,
        "WAP_JOB_SPARK_PARAMETERS",
        "--conf spark.sql.session.timeZone=UTC --deploy-mode cluster",
    )
    stack = make_stack(template=edited)
    record, run = _ingest_one(stack, "badsubmit/orders/x.parquet")

    assert record.status == "JOB_FAILED", record
    assert run["state"] == "FAILED"
    assert "unrecognized option '--deploy-mode'" in run["stateDetails"]


@pytest.mark.parametrize("parameters", ["--conf", "--conf novalue", "stray", "--jars"])
def test_malformed_submit_parameters_are_refused(parameters):
    with pytest.raises(SubmitParametersError):
        parse_spark_submit("s3://a/jobs/wap_job.py", parameters)


def test_the_real_job_refuses_conf_its_session_does_not_run_with():
    session = {
        "spark.sql.session.timeZone": "UTC",
        "spark.jars": "/local/iceberg.jar",
        "spark.sql.catalog.lake.warehouse": "file:///tmp/warehouse/",
    }
    submitted = parse_spark_submit(
        "s3://a/jobs/wap_job.py",
        (
            "--conf spark.jars=s3://assets/x.jar --conf spark.sql.session.timeZone=UTC "
            "--conf spark.sql.catalog.lake.warehouse=s3://lake/warehouse/ "
            "--py-files s3://a/jobs/spark_jobs.zip"
        ),
    )
    check_submission(submitted, session.get, "spark_jobs.zip")  # only locations differ

    drifted = dataclasses.replace(
        submitted, conf={**submitted.conf, "spark.sql.session.timeZone": "Europe/Paris"}
    )
    with pytest.raises(SubmitParametersError, match=r"spark\.sql\.session\.timeZone"):
        check_submission(drifted, session.get, "spark_jobs.zip")
    with pytest.raises(SubmitParametersError, match="--py-files"):
        check_submission(submitted, session.get, "other.zip")


# ---- a change in infra reaches the handlers -------------------------------------------


def _sweeper_sees(stack, variable: str) -> str | None:
    """The value of `variable` in the sweeper's environment while it runs."""
    seen = {}

    def recording(handler):
        def run(event, context):
            seen["value"] = os.environ.get(variable)
            return handler(event, context)

        return run

    stack.dispatcher.interceptors["sweeper"] = recording
    stack.invoke("sweeper", {})
    return seen["value"]


def test_a_variable_added_to_the_template_reaches_the_handlers(make_stack, local_template):
    edited = _with_variable(
        local_template,
        "WAP_EXAMPLE_BUCKET_URI",
        {"Fn::Join": ["", ["s3://", {"Ref": local_template.logical_id("Storage/Lake")}, "/x"]]},
    )
    stack = make_stack(template=edited)
    assert _sweeper_sees(stack, "WAP_EXAMPLE_BUCKET_URI") == "s3://wap-lake/x"


def test_an_unresolvable_reference_is_named_not_defaulted(make_stack, local_template):
    service = local_template.logical_id("Catalog/Service/Service")
    edited = _with_variable(local_template, "WAP_NESSIE_SERVICE", {"Fn::GetAtt": [service, "Name"]})
    with pytest.raises(UnresolvedIntrinsic) as raised:
        make_stack(template=edited)
    message = str(raised.value)
    assert f"Fn::GetAtt {service}.Name" in message
    assert "WAP_NESSIE_SERVICE" in message and "Pipeline/" in message
    assert "AWS::ECS::Service" in message


@pytest.mark.parametrize(
    "intrinsic",
    [
        {"Fn::If": ["Cond", "a", "b"]},
        {"Fn::ImportValue": "shared-vpc"},
        {"Ref": "BootstrapVersion"},
    ],
)
def test_intrinsics_the_local_stack_cannot_evaluate_raise(local_template, intrinsic):
    resolver = Resolver(local_template, account_id=ACCOUNT_ID, region="eu-west-1")
    with pytest.raises(UnresolvedIntrinsic, match=re.escape(next(iter(intrinsic)))):
        resolver.resolve({"Fn::Join": ["", ["x", intrinsic]]}, "here")


def test_intrinsics_resolve_like_cloudformation(local_template):
    resolver = Resolver(local_template, account_id=ACCOUNT_ID, region="eu-west-1")
    lake = resolver.bind("Storage/Lake", "wap-lake", Arn="arn:aws:s3:::wap-lake")
    assert resolver.resolve({"Fn::Sub": "${AWS::Region}:${AWS::AccountId}:${!Keep}"}, "w") == (
        f"eu-west-1:{ACCOUNT_ID}:${{Keep}}"
    )
    assert resolver.resolve({"Fn::Sub": ["${B}/${X}", {"X": {"Ref": lake}, "B": "b"}]}, "w") == (
        "b/wap-lake"
    )
    assert resolver.resolve({"Fn::Sub": f"${{{lake}.Arn}}"}, "w") == "arn:aws:s3:::wap-lake"
    assert resolver.resolve({"Fn::Select": [1, {"Fn::Split": ["/", "a/b/c"]}]}, "w") == "b"
    assert resolver.resolve({"Fn::GetAtt": f"{lake}.Arn"}, "w") == "arn:aws:s3:::wap-lake"
    with pytest.raises(UnresolvedIntrinsic, match=r"Fn::GetAtt .*DomainName"):
        resolver.resolve({"Fn::GetAtt": [lake, "DomainName"]}, "w")


# ---- synthesis and its cache ----------------------------------------------------------


def test_the_template_is_synthesized_once_per_process(make_stack, monkeypatch, local_template):
    def no_synth(*args, **kwargs):
        raise AssertionError("synthesized again")

    monkeypatch.setattr(template_module, "synthesize", no_synth)
    monkeypatch.setattr(template_module, "cached_template", no_synth)
    first = make_stack()
    first.stop()
    second = make_stack()
    assert first.template is second.template is local_template


def test_the_cache_key_follows_the_inputs(tmp_path):
    for name in template_module.SOURCE_INPUTS:
        source = REPO / name
        if source.is_dir():
            (tmp_path / name).mkdir()
            (tmp_path / name / "a.py").write_text("x = 1\n")
        else:
            (tmp_path / name).write_text("{}")
    context = {"slackChannel": "#wap-alerts"}
    key = input_digest(context, root=tmp_path)
    (tmp_path / "lambdas" / "__pycache__").mkdir()
    (tmp_path / "lambdas" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert input_digest(context, root=tmp_path) == key  # build by-products do not count

    for changed in (
        "infra/a.py",
        "statemachine/a.py",
        "tables/a.py",
        "cdk.json",
        "requirements-lambda.txt",
    ):
        original = (tmp_path / changed).read_text()
        (tmp_path / changed).write_text(original + "\n# changed\n")
        assert input_digest(context, root=tmp_path) != key, changed
        (tmp_path / changed).write_text(original)
    assert input_digest(context, root=tmp_path) == key
    assert input_digest({"slackChannel": "#other"}, root=tmp_path) != key


@pytest.mark.slow
def test_a_variable_added_in_infra_reaches_the_handlers_without_touching_local(
    tmp_path, make_stack
):
    """Edit infra/stack.py in a copy of the repository, synthesize it with the CDK CLI, run it."""
    for name in template_module.SOURCE_INPUTS:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(
                source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy(source, tmp_path / name)
    for shared in (".venv", "node_modules", "build/lambda", "build/spark"):  # bundling caches
        (tmp_path / shared).parent.mkdir(exist_ok=True)
        (tmp_path / shared).symlink_to(REPO / shared)
    stack_py = tmp_path / "infra" / "stack.py"
    marker = '"WAP_NESSIE_URI": nessie_v1,'
    assert marker in stack_py.read_text()
    stack_py.write_text(
        stack_py.read_text().replace(
            marker, marker + ' "WAP_EXAMPLE_FROM_INFRA": storage.reports_prefix,'
        )
    )
    context = StackSettings(
        nessie_api_v1="http://x/api/v1", job=None, create_tables=CREATE_TABLES
    ).deploy_context()

    edited = template_module.cached_template(context, root=tmp_path)
    stack = make_stack(template=edited)
    assert _sweeper_sees(stack, "WAP_EXAMPLE_FROM_INFRA") == "s3://wap-artifacts/reports/"
