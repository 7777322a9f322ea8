"""`wap --aws login`: sign a person in to the deployed stack's catalog (wap/ops/login.py)."""

from __future__ import annotations

import typer

from wap.cli import command as cmd
from wap.exceptions import OpsError


def login(ctx: typer.Context) -> None:
    """Sign in to the deployed stack (opens the browser: the user pool's login page, then
    back to this command on localhost). Later commands renew the sign-in themselves."""
    from wap.ops import login as signin

    target = cmd.target(ctx)

    def work() -> str:
        if not target.is_aws:
            raise OpsError("login signs in to a deployed stack: wap --aws login")
        from wap.ops.aws_backend import AwsBackend

        backend = AwsBackend.connect(
            target.stack, profile=target.profile, region=target.region, nessie_url=target.nessie_url
        )
        config = signin.LoginConfig.from_outputs(
            backend.outputs, target.stack, backend.session.region_name
        )
        typer.echo("Opening the browser to sign in (MFA included)...", err=True)
        path = signin.login(config)
        return f"Signed in to {target.stack}; the sign-in is kept in {path} (renewed as needed)."

    typer.echo(cmd.run(work))
