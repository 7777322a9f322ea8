"""URLs the alert links to: the Nessie UI, the Step Functions and S3 consoles."""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from contracts.catalog_ui import branch_url as nessie_branch_url
from contracts.catalog_ui import table_url as nessie_table_url

__all__ = ["nessie_branch_url", "nessie_table_url"]  # contracts/catalog_ui.py, for the alert

_EXECUTION_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):states:(?P<region>[a-z0-9-]+):\d{12}:"
    r"(?:execution|express):[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)?$"
)
_CONSOLE_DOMAINS = {
    "aws": "console.aws.amazon.com",
    "aws-us-gov": "console.amazonaws-us-gov.com",
    "aws-cn": "console.amazonaws.cn",
}


def execution_console_url(execution_arn: str) -> str | None:
    """The Step Functions console page of an execution, None for anything not an execution ARN."""
    match = _EXECUTION_ARN.match(execution_arn)
    if not match or match["partition"] not in _CONSOLE_DOMAINS:
        return None
    region = match["region"]
    domain = _CONSOLE_DOMAINS[match["partition"]]
    return (
        f"https://{region}.{domain}/states/home?region={region}"
        f"#/v2/executions/details/{execution_arn}"
    )


def s3_console_url(uri: str, *, prefix: bool = False) -> str | None:
    """The S3 console page of an object (or, with `prefix`, of a folder) named by an s3:// URI."""
    parts = urlsplit(uri)
    if parts.scheme != "s3" or not parts.netloc:
        return None
    key = quote(parts.path.lstrip("/"), safe="/")
    bucket = quote(parts.netloc, safe="")
    view = "buckets" if prefix else "object"
    return f"https://s3.console.aws.amazon.com/s3/{view}/{bucket}?prefix={key}"


def browsable_url(uri: str, *, prefix: bool = False) -> str | None:
    """A link a person can open for a report or log URI: S3 console, or the http(s) URI itself."""
    scheme = urlsplit(uri).scheme
    if scheme == "s3":
        return s3_console_url(uri, prefix=prefix)
    if scheme in ("http", "https"):
        return uri
    return None
