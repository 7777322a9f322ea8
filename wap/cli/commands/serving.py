"""What `wap` serves until Ctrl-C: the home's catalog (`wap serve`) and the quality
dashboard (`wap dashboard`)."""

from __future__ import annotations

from typing import Annotated

import typer

from contracts.catalog_ui import branch_diff_url, branch_url
from ingestion.naming import BRANCH_PREFIX
from wap.cli import command as cmd
from wap.cli.command import console
from wap.runtime.catalog_server import ENV_CATALOG_PORT, catalog_port, start_catalog
from wap.runtime.home import WapHome


def serve(
    ctx: typer.Context,
    port: Annotated[
        int | None,
        typer.Option(
            min=1, max=65535, help=f"port on 127.0.0.1 (default ${ENV_CATALOG_PORT} or 19120)"
        ),
    ] = None,
) -> None:
    """Serve the home's catalog (Nessie API + UI) until Ctrl-C: the links in alerts open here."""
    target = cmd.target(ctx)
    if target.is_aws:
        raise cmd.fail(
            "serve is for local mode: a deployed stack's Nessie serves its own UI "
            "(stack output NessieUiUrl)"
        )

    def work() -> None:
        home = WapHome.resolve(target.home)
        configured = catalog_port()
        server = start_catalog(home, port or configured)
        try:
            base = server.url
            console.print(
                f"Catalog of {home.root} on {base}: UI {branch_url(base, 'main')}, "
                f"Nessie API {base}/api/v2 (Ctrl-C to stop)",
                soft_wrap=True,
                markup=False,
            )
            if server.port != configured:
                console.print(
                    f"Links in alerts and `wap show` name port {configured}: run commands "
                    f"with {ENV_CATALOG_PORT}={server.port} to make them point here.",
                    markup=False,
                )
            for ref in server.store.list_refs():
                if ref.type == "BRANCH" and ref.name.startswith(BRANCH_PREFIX):
                    console.print(
                        f"  {ref.name}: {branch_url(base, ref.name)}   "
                        f"diff: {branch_diff_url(base, ref.name)}",
                        soft_wrap=True,
                        markup=False,
                    )
            while not server.wait(timeout=1):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()

    cmd.run(work)


def dashboard(
    ctx: typer.Context,
    port: Annotated[int, typer.Option(help="local port to serve on", min=1, max=65535)] = 8501,
    open_browser: Annotated[bool, typer.Option("--open", help="open a browser tab")] = False,
) -> None:
    """Serve the quality dashboard (Streamlit) on 127.0.0.1 until Ctrl-C."""
    from wap.dashboard import launch

    target = cmd.target(ctx)
    if not target.is_aws:  # its table pages read the local configs: a bad setting ends here
        from wap.runtime.embedded_stack import tables_dir_from_env

        cmd.run(tables_dir_from_env)
    console.print(f"Dashboard on http://127.0.0.1:{port}/ (Ctrl-C to stop)")
    raise typer.Exit(
        launch(
            target.home,
            aws=target.aws,
            profile=target.profile,
            port=port,
            open_browser=open_browser,
            region=target.region,
            stack=target.stack,
            nessie_url=target.nessie_url,
        )
    )
