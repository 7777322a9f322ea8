"""What the synthesized template promises, asserted on properties (never on logical ids)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Match

from tests.fixtures.functions import OUR_FUNCTIONS
from tests.fixtures.paths import REPO

ASL_FILE = REPO / "statemachine" / "ingest.asl.json"


def _ref_id(value: Any) -> str | None:
    """The logical id behind {"Ref": id} or {"Fn::GetAtt": [id, attr]}."""
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            return value["Fn::GetAtt"][0]
    return None


def _referenced_ids(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        if (ref := _ref_id(value)) is not None:
            found.add(ref)
        for item in value.values():
            found |= _referenced_ids(item)
    elif isinstance(value, list):
        for item in value:
            found |= _referenced_ids(item)
    return found


def _functions_by_handler(synth) -> dict[str, tuple[str, dict[str, Any]]]:
    """Our Lambdas keyed by package name (CDK's own custom-resource handlers left out)."""
    found = {}
    for logical_id, resource in synth.of_type("AWS::Lambda::Function").items():
        match = re.fullmatch(r"lambdas\.(\w+)\.handler\.handler", resource["Properties"]["Handler"])
        if match:
            found[match.group(1)] = (logical_id, resource["Properties"])
    return found


def _statements_of_role(synth, role_id: str) -> list[dict[str, Any]]:
    statements = []
    for policy in synth.of_type("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"].get("Roles", []):
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    actions: set[str] = set()
    for statement in statements:
        value = statement.get("Action", [])
        actions |= {value} if isinstance(value, str) else set(value)
    return actions


def _buckets(synth) -> dict[str, dict[str, Any]]:
    return synth.of_type("AWS::S3::Bucket")


def _source_bucket_id(synth) -> str:
    """The bucket with EventBridge notifications switched on."""
    (notification,) = [
        r for r in synth.resources.values() if r["Type"] == "Custom::S3BucketNotifications"
    ]
    props = notification["Properties"]
    assert "EventBridgeConfiguration" in props["NotificationConfiguration"]
    return _ref_id(props["BucketName"])


# ---- storage ----------------------------------------------------------------------------


def test_every_bucket_is_encrypted_private_and_ssl_only(synthesized):
    buckets = _buckets(synthesized)
    assert len(buckets) >= 4  # source, lake, artifacts, access logs
    policies = {
        _ref_id(p["Properties"]["Bucket"]): p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesized.of_type("AWS::S3::BucketPolicy").values()
    }
    for logical_id, bucket in buckets.items():
        props = bucket["Properties"]
        (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        ssl_denials = [
            s
            for s in policies.get(logical_id, [])
            if s["Effect"] == "Deny"
            and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        ]
        assert ssl_denials, f"bucket {logical_id} accepts plain HTTP"


def test_data_buckets_log_access_and_expire_reports_and_logs(synthesized):
    buckets = _buckets(synthesized)
    logged = [b for b in buckets.values() if "LoggingConfiguration" in b["Properties"]]
    assert len(logged) == len(buckets) - 1  # all but the access-log bucket itself
    synthesized.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Prefix": "reports/",
                                "Status": "Enabled",
                                "ExpirationInDays": Match.any_value(),
                            }
                        ),
                        Match.object_like(
                            {
                                "Prefix": "emr-logs/",
                                "Status": "Enabled",
                                "ExpirationInDays": Match.any_value(),
                            }
                        ),
                    ]
                )
            }
        },
    )


def test_what_garbage_collection_deletes_in_the_lake_is_freed_after_a_recovery_window(synthesized):
    # The lake is versioned: a deleted file stays as a noncurrent version until this rule.
    synthesized.template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Id": "free-collected-files",
                                "Prefix": "warehouse/",
                                "Status": "Enabled",
                                "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
                                "ExpiredObjectDeleteMarker": True,
                            }
                        )
                    ]
                )
            }
        },
    )


def test_source_bucket_is_versioned(synthesized):
    source = _buckets(synthesized)[_source_bucket_id(synthesized)]
    assert source["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}


# ---- pipeline -----------------------------------------------------------------------------


def test_object_created_in_source_bucket_reaches_trigger_with_retry_and_dlq(synthesized):
    source_id = _source_bucket_id(synthesized)
    trigger_id, _ = _functions_by_handler(synthesized)["trigger"]
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.s3"],
                "detail-type": ["Object Created"],
                "detail": {"bucket": {"name": [{"Ref": source_id}]}},
            },
            "Targets": [
                Match.object_like(
                    {
                        "Arn": {"Fn::GetAtt": [trigger_id, "Arn"]},
                        "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [Match.any_value(), "Arn"]}},
                        "RetryPolicy": Match.object_like(
                            {"MaximumRetryAttempts": Match.any_value()}
                        ),
                    }
                )
            ],
        },
    )


# What holds data or identity: kept when the stack is updated or deleted, but removed when a
# first create rolls back, so `cdk deploy` can simply be run again (no "already exists").
STATEFUL_TYPES = (
    "AWS::S3::Bucket",
    "AWS::DynamoDB::Table",
    "AWS::SecretsManager::Secret",
    "AWS::Logs::LogGroup",
    "AWS::KMS::Key",
)


def test_stateful_resources_are_retained_except_when_a_first_create_rolls_back(synthesized):
    stateful = {
        logical_id: resource
        for logical_id, resource in synthesized.resources.items()
        if resource["Type"] in STATEFUL_TYPES
    }
    assert {r["Type"] for r in stateful.values()} >= {"AWS::S3::Bucket", "AWS::DynamoDB::Table"}
    wrong = {
        logical_id: (r.get("DeletionPolicy"), r.get("UpdateReplacePolicy"))
        for logical_id, r in stateful.items()
        if (r.get("DeletionPolicy"), r.get("UpdateReplacePolicy"))
        != ("RetainExceptOnCreate", "Retain")
    }
    assert not wrong


def test_sweeper_runs_on_a_schedule(synthesized):
    sweeper_id, _ = _functions_by_handler(synthesized)["sweeper"]
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": Match.string_like_regexp(r"rate\(\d+ minutes?\)"),
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [sweeper_id, "Arn"]}})],
        },
    )


def _maintenance_grants(synth) -> tuple[str, dict[str, Any], list[tuple[set[str], str]]]:
    """The maintenance Lambda's logical id, its properties and its role's (actions, resource)
    pairs."""
    logical_id, props = _functions_by_handler(synth)["maintenance"]
    pairs = []
    for statement in _statements_of_role(synth, _ref_id(props["Role"])):
        resources = statement["Resource"]
        for resource in resources if isinstance(resources, list) else [resources]:
            pairs.append((_actions([statement]), json.dumps(resource)))
    return logical_id, props, pairs


def test_maintenance_runs_daily_in_the_vpc_and_only_reports_by_default(synthesized):
    maintenance_id, props, pairs = _maintenance_grants(synthesized)
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "cron(0 3 * * ? *)",  # daily at 03:00 UTC (issue 42)
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [maintenance_id, "Arn"]}})],
        },
    )
    assert "VpcConfig" in props  # Nessie's API is inside the VPC
    assert props["Timeout"] == 900
    # `wap --aws maintain` finds it by the stack's output.
    synthesized.template.has_output("MaintenanceFunctionName", {"Value": {"Ref": maintenance_id}})
    variables = props["Environment"]["Variables"]
    assert variables["WAP_GC_DELETE"] == "false"
    assert "/warehouse/" in json.dumps(variables["WAP_WAREHOUSE_URI"])
    # s3://<lake>/warehouse/: {"Fn::Join": ["", ["s3://", {"Ref": lake}, "/warehouse/"]]}
    lake_id = _ref_id(variables["WAP_WAREHOUSE_URI"]["Fn::Join"][1][1])
    on_lake = {(frozenset(actions), resource) for actions, resource in pairs if lake_id in resource}
    assert on_lake == {
        (frozenset({"s3:ListBucket"}), json.dumps({"Fn::GetAtt": [lake_id, "Arn"]})),
        (
            frozenset({"s3:GetObject"}),
            json.dumps({"Fn::Join": ["", [{"Fn::GetAtt": [lake_id, "Arn"]}, "/warehouse/*"]]}),
        ),
    }
    # It writes only its summary (the compaction job writes its own result) and deletes
    # nothing. Compaction: it starts and reads job runs (never cancels one), passes the
    # job's role, and starts the next queued ingest's execution.
    writes = [resource for actions, resource in pairs if "s3:PutObject" in actions]
    assert len(writes) == 1 and "/reports/maintenance/*" in writes[0]
    granted = {a for actions, _ in pairs for a in actions}
    assert {a for a in granted if a.startswith("emr-serverless:")} == {
        "emr-serverless:StartJobRun",
        "emr-serverless:TagResource",
        "emr-serverless:GetJobRun",
    }
    assert {a for a in granted if a.startswith("states:")} == {"states:StartExecution"}
    assert "iam:PassRole" in granted
    assert not any(a.startswith("s3:Delete") for a in granted)


def test_gc_delete_lets_the_maintenance_run_delete_under_warehouse_only(
    synthesized_external_nessie,
):
    _, props, pairs = _maintenance_grants(synthesized_external_nessie)
    assert props["Environment"]["Variables"]["WAP_GC_DELETE"] == "true"
    deletes = [resource for actions, resource in pairs if actions & {"s3:DeleteObject"}]
    assert len(deletes) == 1 and deletes[0].endswith('"/warehouse/*"]]}')
    assert not [
        a
        for actions, _ in pairs
        for a in actions
        if a.startswith("s3:Delete") and a != "s3:DeleteObject"
    ]


def test_ledger_table_matches_the_ledger_module_and_has_pitr(synthesized):
    # ingestion/ledger.py defines the table once: keys, indexes and the TTL attribute.
    from ingestion.ledger import TTL_ATTRIBUTE, table_schema

    schema = table_schema()
    (ledger,) = [
        t["Properties"]
        for t in synthesized.of_type("AWS::DynamoDB::Table").values()
        if "TableName" not in t["Properties"]
    ]
    assert ledger["KeySchema"] == schema["KeySchema"]
    assert sorted(ledger["AttributeDefinitions"], key=str) == sorted(
        schema["AttributeDefinitions"], key=str
    )
    assert sorted(ledger["GlobalSecondaryIndexes"], key=lambda i: i["IndexName"]) == sorted(
        schema["GlobalSecondaryIndexes"], key=lambda i: i["IndexName"]
    )
    assert ledger["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
    assert ledger["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert ledger["SSESpecification"] == {"SSEEnabled": True}


def test_every_lambda_is_python312_traced_and_has_the_contract_environment(synthesized):
    contracts = (REPO / "docs" / "contracts.md").read_text()
    section = contracts.split("## Lambda environment", 1)[1].split("\n## ", 1)[0]
    contract_names = set(re.findall(r"`((?:WAP|POWERTOOLS)_[A-Z_]+)`", section))
    # Optional ones (e.g. the local Slack stand-in's URL) stay unset on AWS.
    optional = set(re.findall(r"`((?:WAP|POWERTOOLS)_[A-Z_]+)` \(optional", section))
    assert len(contract_names - optional) >= 18
    functions = _functions_by_handler(synthesized)
    assert set(functions) == OUR_FUNCTIONS
    for name, (_, props) in functions.items():
        assert props["Runtime"] == "python3.12"
        assert props["TracingConfig"] == {"Mode": "Active"}
        variables = set(props["Environment"]["Variables"])
        assert contract_names - optional <= variables <= contract_names, name


def _render(value: Any) -> str:
    """A template string value with every CloudFormation token shown as `<token>`."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        return "".join(_render(part) for part in value["Fn::Join"][1])
    if isinstance(value, dict) and isinstance(value.get("Fn::Sub"), str):
        return re.sub(r"\$\{[^}]+\}", "<token>", value["Fn::Sub"])
    return "<token>"


def _job_spark_conf(synth) -> dict[str, str]:
    """The `--conf` pairs of the job's sparkSubmitParameters, as the Lambdas pass them."""
    _, props = _functions_by_handler(synth)["trigger"]
    text = _render(props["Environment"]["Variables"]["WAP_JOB_SPARK_PARAMETERS"])
    return dict(item.split("=", 1) for item in text.replace("--conf ", "\n").split() if "=" in item)


def _runtime_jar_asset(synth) -> tuple[str, Path]:
    """spark.jars' `bucket/key` and the file the cloud assembly uploads there."""
    jar_uri = _job_spark_conf(synth)["spark.jars"]
    assert jar_uri.startswith("s3://") and "," not in jar_uri, jar_uri
    location = jar_uri.removeprefix("s3://")
    key = location.split("/", 1)[1]
    manifest = json.loads((synth.outdir / f"{synth.artifact_id}.assets.json").read_text())
    (entry,) = [
        e
        for e in manifest["files"].values()
        if any(d["objectKey"] == key for d in e["destinations"].values())
    ]
    assert entry["source"].get("packaging", "file") == "file"  # uploaded as is, not zipped
    return location, synth.outdir / entry["source"]["path"]


def test_spark_parameters_are_the_job_conf_local_runs_use(synthesized):
    from spark_jobs.conf import job_spark_conf

    conf = _job_spark_conf(synthesized)
    assert conf == job_spark_conf(
        iceberg_jar=conf["spark.jars"],
        nessie_uri_v2="http://<token>/api/v2",
        warehouse_uri="s3://<token>/warehouse/",
    )
    assert conf["spark.sql.catalog.lake"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf["spark.sql.catalog.lake.catalog-impl"] == "org.apache.iceberg.nessie.NessieCatalog"
    assert conf["spark.sql.catalog.lake.ref"] == "main"
    assert conf["spark.sql.extensions"] == (
        "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
    )


def test_lake_catalog_reads_and_writes_through_hadoop_file_io(synthesized):
    # The shipped runtime jar has no AWS SDK v2, which S3FileIO needs; Hadoop's FileSystem
    # (EMRFS on s3://) is on EMR's classpath, as the local runs use it on file://.
    conf = _job_spark_conf(synthesized)
    assert conf["spark.sql.catalog.lake.io-impl"] == "org.apache.iceberg.hadoop.HadoopFileIO"
    assert conf["spark.sql.catalog.lake.warehouse"] == "s3://<token>/warehouse/"
    assert "S3FileIO" not in json.dumps(synthesized.template.to_json())


def test_spark_session_time_zone_is_utc_on_emr_as_locally(synthesized):
    assert _job_spark_conf(synthesized)["spark.sql.session.timeZone"] == "UTC"


def test_spark_jars_is_the_iceberg_runtime_jar_the_local_runs_use(synthesized):
    from local.spark import iceberg_runtime_jar

    _, staged = _runtime_jar_asset(synthesized)
    local = iceberg_runtime_jar()
    assert staged.name.endswith(".jar")
    assert (
        hashlib.sha256(staged.read_bytes()).hexdigest()
        == hashlib.sha256(local.read_bytes()).hexdigest()
    )
    # EMR's own Iceberg build stays off the classpath: nothing names it.
    assert "/usr/share/aws/iceberg" not in json.dumps(synthesized.template.to_json())
    (application,) = synthesized.of_type("AWS::EMRServerless::Application").values()
    assert "RuntimeConfiguration" not in application["Properties"]


def test_job_role_may_read_the_runtime_jar_object_only(synthesized):
    location, _ = _runtime_jar_asset(synthesized)
    (role_id,) = [
        logical_id
        for logical_id, role in synthesized.of_type("AWS::IAM::Role").items()
        if "emr-serverless.amazonaws.com"
        in json.dumps(role["Properties"]["AssumeRolePolicyDocument"])
    ]
    statements = _statements_of_role(synthesized, role_id)
    on_asset_bucket = [s for s in statements if "cdk-" in json.dumps(s["Resource"])]
    (statement,) = on_asset_bucket
    assert _actions([statement]) == {"s3:GetObject"}
    assert _render(statement["Resource"]) == f"arn:<token>:s3:::{location}"


def test_region_is_the_readmes_default_whatever_the_cdk_cli_exports(synthesized):
    from tests.fixtures.synth import CLI_FALLBACK_REGION

    row = re.search(r"^\| `region` \| ([^|]+) \|", (REPO / "README.md").read_text(), re.M)
    (promised,) = re.findall(r"`([a-z]{2}-[a-z]+-\d)`", row.group(1))
    assert promised == "eu-west-1"
    # The fixture synthesized with CDK_DEFAULT_REGION set, as the CLI always does.
    assert synthesized.region == promised != CLI_FALLBACK_REGION


def test_state_machine_is_the_tested_definition_file(synthesized):
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine").values()
    props = machine["Properties"]
    file_text = ASL_FILE.read_text()
    placeholders = set(re.findall(r"\$\{(\w+)\}", file_text))
    substitutions = props["DefinitionSubstitutions"]
    assert set(substitutions) == placeholders
    # Each *FunctionArn resolves to the Lambda of that package.
    functions = _functions_by_handler(synthesized)
    fake = {}
    for name in placeholders:
        if name.endswith("FunctionArn"):
            package = re.sub(r"(?<!^)(?=[A-Z])", "_", name[: -len("FunctionArn")]).lower()
            assert substitutions[name] == {"Fn::GetAtt": [functions[package][0], "Arn"]}
            fake[name] = f"arn:aws:lambda:eu-west-1:123456789012:function:{package}"
        else:
            assert re.fullmatch(r"\d+", substitutions[name]), (name, substitutions[name])
            fake[name] = substitutions[name]

    def render(text: str) -> Any:
        return json.loads(re.sub(r"\$\{(\w+)\}", lambda m: fake[m.group(1)], text))

    assert render(props["DefinitionString"]) == render(file_text)
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert props["TracingConfiguration"] == {"Enabled": True}


def test_job_timeout_of_the_state_machine_matches_the_lambdas(synthesized):
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine").values()
    seconds = int(machine["Properties"]["DefinitionSubstitutions"]["JobTimeoutSeconds"])
    _, trigger = _functions_by_handler(synthesized)["trigger"]
    minutes = int(trigger["Environment"]["Variables"]["WAP_JOB_TIMEOUT_MINUTES"])
    assert seconds == minutes * 60


def test_state_machine_arn_given_to_lambdas_is_the_named_machine(synthesized):
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine").values()
    name = machine["Properties"]["StateMachineName"]
    _, finish = _functions_by_handler(synthesized)["finish"]
    arn = finish["Environment"]["Variables"]["WAP_STATE_MACHINE_ARN"]
    assert arn["Fn::Join"][1][-1] == f":stateMachine:{name}"


# ---- compute ------------------------------------------------------------------------------


def test_emr_serverless_application(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::EMRServerless::Application",
        {
            "ReleaseLabel": "emr-7.12.0",
            "Type": "SPARK",
            "AutoStartConfiguration": {"Enabled": True},
            "AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": Match.any_value()},
            "MaximumCapacity": {
                "Cpu": Match.any_value(),
                "Memory": Match.any_value(),
                "Disk": Match.any_value(),
            },
            "NetworkConfiguration": Match.object_like({"SubnetIds": Match.any_value()}),
            "InitialCapacity": Match.absent(),
        },
    )


def test_the_emr_start_up_settings_synthesize_and_default_to_emrs_own(
    synthesized, synthesized_external_nessie
):
    # Default: EMR's 15 idle minutes, no warm workers, the price table's rates.
    synthesized.template.has_resource_properties(
        "AWS::EMRServerless::Application",
        {"AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": 15}},
    )
    # -c emrIdleStopMinutes=5 -c emrPreInitializedExecutors=2 -c emrPrices=...
    synthesized_external_nessie.template.has_resource_properties(
        "AWS::EMRServerless::Application",
        {
            "AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": 5},
            "InitialCapacity": Match.array_with(
                [
                    Match.object_like(
                        {"Key": "Driver", "Value": Match.object_like({"WorkerCount": 1})}
                    )
                ]
            ),
        },
    )
    prices = "vcpu=0.06,memory=0.0066,storage=0.00012"
    # finish prices each run's billed resources (ingestion/job_cost.py).
    [_, finish] = _functions_by_handler(synthesized_external_nessie)["finish"]
    assert finish["Environment"]["Variables"]["WAP_EMR_PRICES"] == prices
    [_, finish] = _functions_by_handler(synthesized)["finish"]
    assert "WAP_EMR_PRICES" not in finish["Environment"]["Variables"]


def test_pre_initialized_capacity_is_a_parameter(synthesized_external_nessie):
    synthesized_external_nessie.template.has_resource_properties(
        "AWS::EMRServerless::Application",
        {
            "InitialCapacity": Match.array_with(
                [
                    Match.object_like(
                        {"Key": "Executor", "Value": Match.object_like({"WorkerCount": 2})}
                    )
                ]
            )
        },
    )


def test_job_code_and_table_configs_are_deployed_to_the_artifacts_bucket(synthesized):
    deployments = [
        r["Properties"]
        for r in synthesized.resources.values()
        if r["Type"] == "Custom::CDKBucketDeployment"
    ]
    prefixes = {d.get("DestinationBucketKeyPrefix") for d in deployments}
    assert "jobs/" in prefixes
    if list((REPO / "tables").glob("*.yaml")):
        assert "tables/" in prefixes


# ---- catalog ------------------------------------------------------------------------------


def test_nessie_runs_a_pinned_image_on_dynamodb2(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::ECS::TaskDefinition",
        {
            "ContainerDefinitions": [
                Match.object_like(
                    {
                        "Image": Match.string_like_regexp(
                            r"^ghcr\.io/projectnessie/nessie:0\.10\d\.\d+$"
                        ),
                        "Environment": Match.array_with(
                            [
                                {"Name": "NESSIE_VERSION_STORE_TYPE", "Value": "DYNAMODB2"},
                                {
                                    "Name": "NESSIE_VERSION_STORE_PERSIST_DYNAMODB_TABLE_PREFIX",
                                    "Value": "WapIngest-nessie",
                                },
                            ]
                        ),
                        "PortMappings": Match.array_with(
                            [
                                Match.object_like({"ContainerPort": 19120}),
                                Match.object_like({"ContainerPort": 9000}),
                            ]
                        ),
                    }
                )
            ]
        },
    )
    # Nessie's dynamodb2 backend: tables "<prefix>_refs" / "<prefix>_objs", hash key "k".
    for suffix in ("refs", "objs"):
        synthesized.template.has_resource_properties(
            "AWS::DynamoDB::Table",
            {
                "TableName": f"WapIngest-nessie_{suffix}",
                "KeySchema": [{"AttributeName": "k", "KeyType": "HASH"}],
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            },
        )


def test_nessie_task_role_reaches_only_its_tables(synthesized):
    (task,) = synthesized.of_type("AWS::ECS::TaskDefinition").values()
    role_id = _ref_id(task["Properties"]["TaskRoleArn"])
    nessie_tables = {
        logical_id
        for logical_id, t in synthesized.of_type("AWS::DynamoDB::Table").items()
        if "nessie" in str(t["Properties"].get("TableName"))
    }
    dynamodb_statements = [
        s
        for s in _statements_of_role(synthesized, role_id)
        if any(a.startswith("dynamodb:") for a in _actions([s]))
    ]
    assert dynamodb_statements
    for statement in dynamodb_statements:
        assert _referenced_ids(statement["Resource"]) <= nessie_tables
        assert statement["Resource"] != "*"


def test_internal_alb_health_checks_the_management_port(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::LoadBalancer", {"Scheme": "internal"}
    )
    synthesized.template.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::TargetGroup",
        {"Port": 19120, "HealthCheckPort": "9000", "HealthCheckPath": "/q/health/ready"},
    )


def test_external_nessie_deploys_no_catalog(synthesized_external_nessie):
    synth = synthesized_external_nessie
    assert synth.of_type("AWS::ECS::Service") == {}
    assert synth.of_type("AWS::ElasticLoadBalancingV2::LoadBalancer") == {}
    (_, trigger) = _functions_by_handler(synth)["trigger"]
    assert trigger["Environment"]["Variables"]["WAP_NESSIE_URI"] == (
        "https://nessie.example.internal:19120/api/v1"
    )
    synth.template.has_output("NessieUiUrl", {"Value": "https://nessie.example.internal:19120"})


# ---- permissions --------------------------------------------------------------------------


def test_no_policy_grants_wildcard_actions_on_data_buckets(synthesized):
    bucket_ids = set(_buckets(synthesized))
    policies = [
        p["Properties"]["PolicyDocument"] for p in synthesized.of_type("AWS::IAM::Policy").values()
    ]
    for role in synthesized.of_type("AWS::IAM::Role").values():
        policies += [p["PolicyDocument"] for p in role["Properties"].get("Policies", [])]
    checked = 0
    for document in policies:
        for statement in document["Statement"]:
            actions = _actions([statement])
            assert "*" not in actions
            if _referenced_ids(statement.get("Resource", [])) & bucket_ids:
                checked += 1
                assert not {a for a in actions if a == "s3:*" or a.endswith(":*")}, statement
    assert checked > 5


def test_each_lambda_only_gets_the_permissions_it_uses(synthesized):
    functions = _functions_by_handler(synthesized)

    def actions_of(name: str) -> set[str]:
        return _actions(_statements_of_role(synthesized, _ref_id(functions[name][1]["Role"])))

    assert {"emr-serverless:StartJobRun", "states:StartExecution", "iam:PassRole"} <= actions_of(
        "trigger"
    )
    assert {"emr-serverless:GetJobRun"} <= actions_of("job_status")
    assert not {
        "emr-serverless:StartJobRun",
        "states:StartExecution",
        "iam:PassRole",
        "secretsmanager:GetSecretValue",
    } & actions_of("job_status")
    assert "secretsmanager:GetSecretValue" in actions_of("alert")
    assert not {
        a
        for a in actions_of("alert")
        if a.startswith(("emr-serverless:", "states:", "dynamodb:Put", "dynamodb:Update"))
    }
    # Rejections are alerted by the trigger itself (ingestion.alerts -> Slack).
    assert "secretsmanager:GetSecretValue" in actions_of("trigger")
    assert not {a for a in actions_of("job_status") if a.startswith("dynamodb:")}
    assert "states:StartExecution" not in actions_of("publish")
    # publish reads its catalog client credentials only, never the Slack token.
    slack_id = _ref_id(synthesized.template.to_json()["Outputs"]["SlackSecretArn"]["Value"])
    publish_secrets = [
        s
        for s in _statements_of_role(synthesized, _ref_id(functions["publish"][1]["Role"]))
        if "secretsmanager:GetSecretValue" in _actions([s])
    ]
    assert not [s for s in publish_secrets if slack_id in json.dumps(s["Resource"])]


def test_the_job_role_may_be_passed_to_emr_serverless_only(synthesized):
    passing = [
        s
        for policy in synthesized.of_type("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if "iam:PassRole" in _actions([s])
    ]
    assert passing and all(
        s["Condition"] == {"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}}
        for s in passing
    )


def test_job_role_is_assumable_by_emr_serverless_only(synthesized):
    synthesized.template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Principal": {"Service": "emr-serverless.amazonaws.com"},
                            "Condition": Match.object_like({"StringEquals": Match.any_value()}),
                        }
                    )
                ]
            }
        },
    )


# ---- alerts and outputs -------------------------------------------------------------------


def test_slack_secret_is_created_empty(synthesized):
    slack_id = _ref_id(synthesized.template.to_json()["Outputs"]["SlackSecretArn"]["Value"])
    secret = synthesized.of_type("AWS::SecretsManager::Secret")[slack_id]
    assert "GenerateSecretString" not in secret["Properties"]
    assert "SecretString" not in secret["Properties"]


def test_alarms_watch_executions_dlq_and_every_lambda(synthesized):
    alarms = [a["Properties"] for a in synthesized.of_type("AWS::CloudWatch::Alarm").values()]
    topics = set(synthesized.of_type("AWS::SNS::Topic"))
    for alarm in alarms:
        assert {_ref_id(action) for action in alarm["AlarmActions"]} <= topics
    metrics = [
        m.get("MetricStat", {}).get("Metric", {}).get("MetricName")
        for a in alarms
        for m in a.get("Metrics", [])
    ]
    metrics += [a.get("MetricName") for a in alarms]
    assert {"ExecutionsFailed", "ExecutionsTimedOut"} <= set(metrics)
    assert "ApproximateNumberOfMessagesVisible" in metrics
    assert metrics.count("Errors") == len(OUR_FUNCTIONS)


def test_a_queue_waiting_too_long_raises_the_alarm(synthesized, synthesized_external_nessie):
    def queue_alarm(template):
        [alarm] = [
            a["Properties"]
            for a in template.of_type("AWS::CloudWatch::Alarm").values()
            if a["Properties"].get("MetricName") == "OldestQueuedAgeSeconds"
        ]
        return alarm

    alarm = queue_alarm(synthesized)
    assert alarm["Namespace"] == "WAP/Ingest" and alarm["Statistic"] == "Maximum"
    assert alarm["Threshold"] == 60 * 60
    assert alarm["Period"] == 5 * 60  # one sweep: the age is measured once per sweep
    sweeper = [
        f["Properties"]
        for f in synthesized.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "lambdas.sweeper.handler.handler"
    ]
    variables = sweeper[0]["Environment"]["Variables"]
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "WAP/Ingest"
    assert alarm["Dimensions"] == [
        {"Name": "service", "Value": variables["POWERTOOLS_SERVICE_NAME"]}
    ]
    assert queue_alarm(synthesized_external_nessie)["Threshold"] == 45 * 60  # queueAlarmMinutes


def test_uploads_create_tables_only_when_the_deploy_says_so(
    synthesized, synthesized_external_nessie
):
    def flags(synth) -> set[str]:
        return {
            props["Environment"]["Variables"]["WAP_CREATE_TABLES_FROM_UPLOADS"]
            for _, props in _functions_by_handler(synth).values()
        }

    assert flags(synthesized) == {"false"}  # an unknown table is refused by default
    assert flags(synthesized_external_nessie) == {"true"}  # -c createTablesFromUploads=true


def test_outputs(synthesized):
    outputs = synthesized.template.to_json()["Outputs"]
    assert {
        "SourceBucketName",
        "LakeBucketName",
        "ArtifactsBucketName",
        "NessieApiUrl",
        "NessieUiUrl",
        "StateMachineArn",
        "LedgerTableName",
    } <= set(outputs)
    # The wap CLI finds the ledger through this output (wap/ops/aws_backend.py).
    ledger_ref = outputs["LedgerTableName"]["Value"]["Ref"]
    assert synthesized.template.to_json()["Resources"][ledger_ref]["Type"] == "AWS::DynamoDB::Table"


def test_state_machine_may_invoke_exactly_the_lambdas_its_definition_names(synthesized):
    (machine,) = synthesized.of_type("AWS::StepFunctions::StateMachine").values()
    role_id = _ref_id(machine["Properties"]["RoleArn"])
    invoked = set()
    for statement in _statements_of_role(synthesized, role_id):
        if "lambda:InvokeFunction" in _actions([statement]):
            invoked |= _referenced_ids(statement["Resource"])
    named = set(re.findall(r"\$\{(\w+)FunctionArn\}", ASL_FILE.read_text()))
    functions = _functions_by_handler(synthesized)
    expected = {functions[re.sub(r"(?<!^)(?=[A-Z])", "_", n).lower()][0] for n in named}
    assert invoked == expected
    assert functions["trigger"][0] not in invoked


def test_grants_match_what_each_function_calls(synthesized):
    """Issue #16's IAM gaps: what the code calls is granted, what nothing calls is not."""
    functions = _functions_by_handler(synthesized)

    def actions_of(name: str) -> set[str]:
        return _actions(_statements_of_role(synthesized, _ref_id(functions[name][1]["Role"])))

    # The sweeper cancels orphaned job runs (GetJobRun first), and no longer stops or
    # lists executions (nothing calls either).
    assert {"emr-serverless:GetJobRun", "emr-serverless:CancelJobRun"} <= actions_of("sweeper")
    assert not {"states:StopExecution", "states:ListExecutions"} & actions_of("sweeper")
    # finish alerts an ingest that cannot start (start_or_fail): it reads the Slack token.
    assert "secretsmanager:GetSecretValue" in actions_of("finish")
    # finish cancels the job run of an ingest given up, and nothing more on EMR.
    assert {a for a in actions_of("finish") if a.startswith("emr-serverless:")} >= {
        "emr-serverless:CancelJobRun"
    }
    assert "emr-serverless:GetJobRun" not in actions_of("finish")


def test_the_job_role_may_look_before_it_writes_a_report(synthesized):
    (role_id,) = [i for i, r in synthesized.of_type("AWS::IAM::Role").items() if "JobRole" in i]
    statements = _statements_of_role(synthesized, role_id)
    on_reports = [s for s in statements if "reports/*" in json.dumps(s.get("Resource"))]
    actions = _actions(on_reports)
    assert "s3:PutObject" in actions
    assert any(a.startswith("s3:GetObject") for a in actions)  # HEAD before the write
    # It reads the staged copy, never the source bucket.
    source_id = _source_bucket_id(synthesized)
    assert not [s for s in statements if source_id in json.dumps(s.get("Resource"))]
