"""`wap doctor`: can the stack ingest? Run right after `cdk deploy`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wap.cli import command as cmd
from wap.cli import render


def doctor(
    ctx: typer.Context,
    timeout: Annotated[int, typer.Option(help="seconds to wait for the smoke job")] = 900,
    as_json: cmd.JsonFlag = False,
) -> None:
    """Check that the stack can ingest: outputs, Lambdas, Slack secret, Nessie from the
    VPC, and a smoke job on EMR Serverless. Run it right after `cdk deploy`."""
    from wap.ops import doctor as checkup

    def read(backend: Any) -> tuple[list[Any], str]:
        if backend.kind == "aws":
            where = checkup.AwsDoctorTarget(
                backend.session,
                cmd.target(ctx).stack,
                backend.outputs,
                nessie_url=cmd.target(ctx).nessie_url,
            )
            return checkup.run_doctor(where, timeout=timeout), where.label
        where = checkup.LocalDoctorTarget(backend.stack.aws)
        return checkup.run_doctor(where, timeout=timeout, poll_seconds=0.5), where.label

    cmd.run_command(
        ctx,
        read,
        lambda found: typer.echo(checkup.render(*found)),
        as_json=as_json,
        document=lambda found: render.doctor_json(*found),
        exit_code=lambda found: 0 if all(check.ok for check in found[0]) else 1,
        run_ingests=True,
        mutates=True,
        create=True,
    )
