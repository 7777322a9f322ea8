"""Nessie REST API v1 (the subset pynessie 0.67 calls). Filled in below."""

from __future__ import annotations

from .http import Route

ROUTES: list[Route] = []
