"""The `wap` command line (Typer + rich): `wap = "wap.cli:main"` in pyproject.toml."""

from wap.cli.app import app, main

__all__ = ["app", "main"]
