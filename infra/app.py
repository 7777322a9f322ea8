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
    def context(key: str) -> object:
        value = app.node.try_get_context(key)
        if key == "region" and not value:
            # Without -c region, deploy where the CLI's profile points (else the default).
            return os.environ.get("CDK_DEFAULT_REGION")
        return value

    settings = DeploySettings.from_context(context)
    WapStack(
        app, settings.stack_name, settings=settings,
        env=cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"),
                            region=settings.region),
        description="Write-Audit-Publish ingestion: S3 -> EMR Serverless (Iceberg on Nessie) "
                    "-> audited merge",
    )
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app


def main() -> None:
    build_app().synth()


if __name__ == "__main__":
    main()
