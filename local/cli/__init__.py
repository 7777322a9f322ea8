"""The `wap` command line (Typer + rich): `wap = "local.cli:main"` in pyproject.toml."""

from local.cli.app import app, main

__all__ = ["app", "main"]
