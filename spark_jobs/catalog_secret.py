"""The job's catalog client, read from Secrets Manager when a run starts.

A run's arguments name the secret by its ARN (`--catalog-credentials-secret`, EMR records
the arguments of every run, so never a value). The secret is the one the stack keeps per
catalog role (infra/identity.py): JSON with `token_endpoint`, `client_id`, `client_secret`.
The job reads it with its own AWS credentials (the EMR job role, the only role granted
`secretsmanager:GetSecretValue` on it) and hands it to the catalog code as the
environment of contracts/catalog_tokens.py, which spark_jobs/catalog.py turns into the run
catalog's OAuth2 settings (`authentication.type=OAUTH2`, in the session's conf). Nothing
of the secret is logged or put in an error.

Python 3.9 and no package beyond boto3, which is imported only when a secret is named.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, MutableMapping
from typing import Any, Optional

from contracts.catalog_tokens import CatalogCredentials
from spark_jobs.errors import CatalogError

# Builds the Secrets Manager client of a region. None: boto3's, with the process's AWS
# credentials (on EMR Serverless the job role's). The local EMR stand-in sets the job
# role's keys here, as it reads the run's S3 inputs with them.
client_factory: Optional[Callable[[str], Any]] = None  # noqa: UP045 (Python 3.9)


def _region(secret_arn: str) -> str:
    parts = secret_arn.split(":")
    if len(parts) < 7 or parts[2] != "secretsmanager":
        raise CatalogError(f"--catalog-credentials-secret {secret_arn!r} is not a secret's ARN")
    return parts[3]


def read_catalog_secret(secret_arn: str) -> CatalogCredentials:
    """The catalog client kept in `secret_arn`; CatalogError naming the secret (and why)
    when it cannot be read or lacks a field."""
    region = _region(secret_arn)
    if client_factory is not None:
        client = client_factory(region)
    else:
        import boto3

        client = boto3.client("secretsmanager", region_name=region)
    try:
        text = client.get_secret_value(SecretId=secret_arn)["SecretString"]
    except Exception as exc:  # botocore's errors, without importing botocore here
        code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")
        raise CatalogError(
            f"cannot read the job's catalog credentials {secret_arn}: {code or type(exc).__name__}"
        ) from None
    try:
        value = json.loads(text)
        credentials = CatalogCredentials(
            token_endpoint=value["token_endpoint"],
            client_id=value["client_id"],
            client_secret=value["client_secret"],
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CatalogError(
            f"the secret {secret_arn} is not JSON with token_endpoint, client_id and client_secret"
        ) from None
    return credentials


def use_catalog_secret(
    secret_arn: Optional[str],  # noqa: UP045 (Python 3.9)
    environ: Optional[MutableMapping[str, str]] = None,  # noqa: UP045
) -> Optional[CatalogCredentials]:  # noqa: UP045
    """Read the run's catalog client (if its arguments name one) into the job's environment,
    where the catalog code finds it; returns it."""
    if not secret_arn:
        return None
    credentials = read_catalog_secret(secret_arn)
    target = os.environ if environ is None else environ
    target.update(credentials.environment())
    return credentials
