"""The alert Lambda's configuration, read once from the environment and validated there.

Candidates for `ingestion/config.py`: the env names are the shared ones of docs/contracts.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ingestion.alerting.exceptions import AlertConfigError

ENV_SLACK_SECRET_ARN = "WAP_SLACK_SECRET_ARN"  # noqa: S105 (a variable name)
ENV_SLACK_CHANNEL = "WAP_SLACK_CHANNEL"
ENV_SLACK_API_URL = "WAP_SLACK_API_URL"
ENV_NESSIE_UI_URL = "WAP_NESSIE_UI_URL"
# "false" where there is no AWS console to open (the local stack sets it, see
# local/aws/overrides.py): the report, logs and execution are named, not linked.
ENV_AWS_CONSOLE_LINKS = "WAP_AWS_CONSOLE_LINKS"
_FLAGS = {"true": True, "false": False}


def _optional(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _http_url(env: Mapping[str, str], name: str) -> str | None:
    value = _optional(env, name)
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AlertConfigError(f"{name} must be an http(s) URL, got {value!r}")
    if any(ch in value for ch in "<>|\"' "):
        raise AlertConfigError(f"{name} contains characters not allowed in a URL: {value!r}")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    value = _optional(env, name)
    if value is None:
        return default
    if value.lower() not in _FLAGS:
        raise AlertConfigError(f"{name} must be true or false, got {value!r}")
    return _FLAGS[value.lower()]


@dataclass(frozen=True)
class AlertConfig:
    """Where alerts go and how links in them are built."""

    slack_secret_arn: str | None = None
    slack_channel: str | None = None
    slack_api_url: str | None = None  # base URL ending in /api/; None = Slack itself
    nessie_ui_url: str | None = None
    aws_console_links: bool = True  # link the report, logs and execution in the AWS console

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AlertConfig:
        """Read and validate the WAP_* variables; raise AlertConfigError naming the bad one."""
        env = os.environ if env is None else env
        api_url = _http_url(env, ENV_SLACK_API_URL)
        if api_url is not None and not api_url.endswith("/"):
            api_url += "/"
        ui_url = _http_url(env, ENV_NESSIE_UI_URL)
        return cls(
            slack_secret_arn=_optional(env, ENV_SLACK_SECRET_ARN),
            slack_channel=_optional(env, ENV_SLACK_CHANNEL),
            slack_api_url=api_url,
            nessie_ui_url=ui_url.rstrip("/") if ui_url else None,
            aws_console_links=_flag(env, ENV_AWS_CONSOLE_LINKS, default=True),
        )
