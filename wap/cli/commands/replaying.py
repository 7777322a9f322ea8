"""`wap replay`: an ingest's quarantined rows out to a file of the table's format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contracts.table_config import CsvOptions
from wap.cli import command as cmd
from wap.cli.command import JsonFlag, console
from wap.ops import replay as replay_ops


def replay(
    ctx: typer.Context,
    table: Annotated[str, typer.Argument(help="ns.table whose quarantined rows to take out")],
    ingest: Annotated[str, typer.Argument(help="the ingest id that set them aside")],
    check: Annotated[
        str | None, typer.Option("--check", help="only the rows that failed this check")
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", help="the existing directory to write the file to")
    ] = Path("."),
    as_json: JsonFlag = False,
) -> None:
    """Write an ingest's quarantined rows (of main's `<ns>.<table>__quarantine`) to a file
    of the table's format, without the `_wap_*` columns, to fix and drop again.

    Each export is recorded; rows an earlier export of the ingest took are left out, and a
    second export of the same rows refuses: replayed rows are not published twice.
    """
    cmd.run(lambda: replay_ops.check_out_dir(out))
    target = cmd.target(ctx)
    # The local stack reads the table config under WAP_TABLES_DIR; on AWS the deployed
    # config is not read here, so the source file's extension decides the format.
    configured, options = (None, None) if target.is_aws else _local_config(table)

    def print_done(done: replay_ops.ReplayExport) -> None:
        left = f" ({done.left_out} exported earlier left out)" if done.left_out else ""
        console.print(
            f"{done.rows} quarantined row(s) of ingest {done.ingest_id} written to "
            f"{done.path}{left}",
            markup=False,
            soft_wrap=True,
        )
        console.print(
            f"Fix them, then drop the file again: wap{cmd.home_flag(target)} ingest "
            f"{done.path} --table {done.table}",
            markup=False,
            soft_wrap=True,
        )

    cmd.run_command(
        ctx,
        lambda backend: replay_ops.export_quarantined(
            backend,
            table,
            ingest,
            check=check,
            out_dir=out,
            configured=configured,
            csv_options=options,
        ),
        print_done,
        as_json=as_json,
        document=lambda done: {
            "table": done.table,
            "ingest_id": done.ingest_id,
            "check": done.check,
            "file": str(done.path),
            "format": done.format,
            "rows": done.rows,
            "left_out": done.left_out,
        },
        mutates=True,
    )


def _local_config(table: str) -> tuple[str | None, CsvOptions | None]:
    """The `format:` and `csv:` of the table's config under WAP_TABLES_DIR (None: none)."""
    import yaml

    from contracts.table_config import TableConfigError, config_text, parse_table_config_text
    from wap.exceptions import InvalidInputError
    from wap.ops.ingests import parse_table
    from wap.runtime.embedded_stack import tables_dir_from_env

    def read() -> tuple[str | None, CsvOptions | None]:
        parse_table(table)
        path = tables_dir_from_env() / f"{table}.yaml"
        if not path.is_file():
            return None, None
        try:
            config = parse_table_config_text(
                config_text(path.read_bytes(), str(path)), str(path), yaml=yaml
            )
        except TableConfigError as exc:
            raise InvalidInputError(str(exc)) from exc
        return config.format, config.csv

    return cmd.run(read)
