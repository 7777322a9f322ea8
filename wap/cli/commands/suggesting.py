"""`wap suggest`: a commented table config from sample files (wap/ops/suggest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from wap.cli import command as cmd
from wap.cli import render
from wap.cli.command import console


def suggest(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="sample files: .parquet, .csv, .jsonl or .ndjson (text ones also .gz), or any "
            "name with --format",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="write the config here (tables/<ns>.<table>.yaml), not stdout"
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite --output")] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="an existing table config whose format:, csv:, parse: and schema: "
            "say how to read the files",
        ),
    ] = None,
    file_format: Annotated[
        str | None, typer.Option("--format", help="read every file as parquet, csv or jsonl")
    ] = None,
    delimiter: Annotated[str | None, typer.Option(help="csv: the delimiter")] = None,
    header: Annotated[
        bool | None, typer.Option("--header/--no-header", help="csv: first line is a header")
    ] = None,
    null_value: Annotated[str | None, typer.Option(help="csv: the text of a null")] = None,
    encoding: Annotated[str | None, typer.Option(help="csv: utf-8 or latin-1")] = None,
    timestamp_format: Annotated[
        str | None, typer.Option(help="parse: Spark datetime pattern of timestamps")
    ] = None,
    date_format: Annotated[
        str | None, typer.Option(help="parse: Spark datetime pattern of dates")
    ] = None,
    time_zone: Annotated[
        str | None, typer.Option(help="parse: zone of timestamps without one")
    ] = None,
    as_json: cmd.JsonFlag = False,
) -> None:
    """Profile sample files and suggest a commented table config: the schema, not_null,
    unique keys, accepted values, ranges with margins and anomaly checks, each saying
    what in the sample supports it. Read as the job reads them (local Spark)."""
    from wap.ops.suggest import suggest_config

    overrides: dict[str, Any] = {}
    if file_format is not None:
        overrides["format"] = file_format
    csv = {
        "delimiter": delimiter,
        "header": header,
        "null_value": null_value,
        "encoding": encoding,
    }
    parse = {
        "timestamp_format": timestamp_format,
        "date_format": date_format,
        "time_zone": time_zone,
    }
    for key, section in (("csv", csv), ("parse", parse)):
        given = {name: value for name, value in section.items() if value is not None}
        if given:
            overrides[key] = given

    def work() -> None:
        suggested = suggest_config(
            files, config_path=config, overrides=overrides, output=output, force=force
        )
        if as_json:
            typer.echo(render.to_json(suggested.document()))
        elif output is None:
            typer.echo(suggested.text, nl=False)
        else:
            console.print(
                f"wrote {output}: {len(suggested.profile.columns)} columns, "
                f"{len(suggested.checks)} checks from {suggested.profile.rows:,} rows",
                soft_wrap=True,
            )
        if output is not None:
            from wap.runtime.embedded_stack import unread_config_note

            note = unread_config_note(output)
            if note:
                typer.echo(note, err=True)

    cmd.run(work)
