"""CDK entry point (`cdk.json`: `.venv/bin/python -m infra.app`)."""

from __future__ import annotations

import os

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.settings import DeploySettings
from infra.stack import WapStack


def build_app(app: cdk.App | None = None) -> cdk.App:
    """The app with the one stack, configured from context (`-c key=value`)."""
    app = app or cdk.App()
    # The region is `-c region` or DEFAULT_REGION, never CDK_DEFAULT_REGION: the CLI always
    # exports one (us-east-1 when no profile names a region), so following it would send an
    # unconfigured deploy somewhere nobody chose.
    settings = DeploySettings.from_context(app.node.try_get_context)
    WapStack(
        app,
        settings.stack_name,
        settings=settings,
        env=cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=settings.region),
        description="Write-Audit-Publish ingestion: S3 -> EMR Serverless (Iceberg on Nessie) "
        "-> audited merge",
    )
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app


def main() -> None:
    build_app().synth()


if __name__ == "__main__":
    main()
