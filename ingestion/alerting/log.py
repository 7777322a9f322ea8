"""The alert Lambda's structured JSON logger (Powertools); one instance for the package."""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger

logger = Logger(service=os.getenv("POWERTOOLS_SERVICE_NAME") or "wap-alert")
