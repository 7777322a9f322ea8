"""One structured JSON logger for the orchestration Lambdas (Powertools)."""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME") or "wap", use_rfc3339=True)
