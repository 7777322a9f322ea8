"""Every `${...}` of the definition file must have a value; unknown ones stop synthesis."""

from __future__ import annotations

import shutil

import aws_cdk as cdk
import pytest

from infra import definition
from infra.constants import SourceTree
from infra.settings import DeploySettings
from infra.stack import WapStack
from tests.fixtures.paths import REPO


def test_render_replaces_every_placeholder(tmp_path):
    path = tmp_path / "machine.asl.json"
    path.write_text('{"A": "${OneFunctionArn}", "B": ${Seconds}, "C": "${Seconds}s"}')
    loaded = definition.load(path)
    assert loaded.placeholders == {"OneFunctionArn", "Seconds"}
    assert loaded.render({"OneFunctionArn": "arn:x", "Seconds": "5"}) == (
        '{"A": "arn:x", "B": 5, "C": "5s"}'
    )


def test_unknown_placeholder_is_named(tmp_path):
    path = tmp_path / "machine.asl.json"
    path.write_text('{"A": "${Known}", "B": "${PollEvery}"}')
    with pytest.raises(definition.DefinitionError, match=r"\$\{PollEvery\}"):
        definition.load(path).render({"Known": "x"})


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(definition.DefinitionError, match="does not exist"):
        definition.load(tmp_path / "nope.asl.json")


def test_synthesis_fails_on_an_unknown_substitution(tmp_path):
    for name in ("lambdas", "ingestion", "contracts", "spark_jobs", "tables"):
        (tmp_path / name).symlink_to(REPO / name)
    shutil.copy(REPO / "requirements-lambda.txt", tmp_path)
    shutil.copy(REPO / "requirements-lambda-maintenance.txt", tmp_path)
    (tmp_path / "statemachine").mkdir()
    text = (REPO / "statemachine" / "ingest.asl.json").read_text()
    (tmp_path / "statemachine" / "ingest.asl.json").write_text(
        text.replace('"StartAt"', '"Version": "${DefinitionRevision}",\n  "StartAt"', 1)
    )
    app = cdk.App(outdir=str(tmp_path / "out"))
    with pytest.raises(definition.DefinitionError, match=r"\$\{DefinitionRevision\}"):
        WapStack(
            app,
            "Broken",
            settings=DeploySettings.from_context({}.get),
            source_tree=SourceTree(tmp_path),
            env=cdk.Environment(region="eu-west-1"),
        )
