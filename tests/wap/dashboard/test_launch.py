"""`launch()`: the `streamlit run` command line, and the options the app reads back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wap.dashboard import APP_PATH, build_command
from wap.dashboard.options import parse_args, to_args
from wap.ops.backends import Target


def _app_args(command: list[str]) -> list[str]:
    return command[command.index("--") + 1 :]


def test_local_command_runs_our_app_headless_on_loopback(tmp_path):
    command = build_command(str(tmp_path / "home"), port=8600)

    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(APP_PATH)]
    options = dict(
        zip(command[5 : command.index("--") : 2], command[6 : command.index("--") : 2], strict=True)
    )
    assert options["--server.port"] == "8600"
    assert options["--server.address"] == "127.0.0.1"
    assert options["--server.headless"] == "true"
    assert options["--browser.gatherUsageStats"] == "false"
    assert _app_args(command) == ["--home", str(tmp_path / "home")]


def test_relative_home_becomes_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command = build_command(".wap")
    assert _app_args(command) == ["--home", str(tmp_path / ".wap")]


def test_open_browser_turns_headless_off():
    command = build_command(open_browser=True)
    assert command[command.index("--server.headless") + 1] == "false"


def test_aws_switches_are_passed_through():
    command = build_command(profile="ops", region="eu-west-1", stack="Wap2")
    assert _app_args(command) == ["--profile", "ops", "--region", "eu-west-1", "--stack", "Wap2"]
    assert _app_args(build_command(aws=True)) == ["--aws"]


@pytest.mark.parametrize("port", [0, 65536, -1])
def test_bad_port_is_refused(port):
    with pytest.raises(ValueError, match="port must be"):
        build_command(port=port)


@pytest.mark.parametrize(
    "target",
    [
        Target(),
        Target(home="/x/.wap"),
        Target(aws=True, region="us-west-2"),
        Target(profile="ops", stack="Other", nessie_url="http://localhost:19120/api/v2"),
    ],
)
def test_options_round_trip(target, monkeypatch):
    for name in ("WAP_HOME", "WAP_STACK", "WAP_NESSIE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert parse_args(to_args(target)) == target


def test_environment_fills_what_the_command_line_leaves_out(monkeypatch):
    monkeypatch.setenv("WAP_HOME", "/srv/wap")
    monkeypatch.setenv("WAP_STACK", "Staging")
    assert parse_args([]) == Target(home="/srv/wap", stack="Staging")
    assert parse_args(["--home", "/other"]).home == "/other"


def test_unknown_option_is_a_clear_error():
    with pytest.raises(ValueError, match="bad dashboard arguments"):
        parse_args(["--homer", "x"])


def test_app_script_exists_next_to_its_views():
    assert APP_PATH.is_file()
    assert {p.name for p in (Path(APP_PATH).parent / "views").glob("*.py")} >= {
        "overview.py",
        "ingest.py",
        "table.py",
    }


def test_launch_runs_streamlit_and_returns_its_exit_code(tmp_path, capfd):
    """With the port taken, Streamlit refuses to start: launch reports its failure code."""
    import socket

    from wap.dashboard import launch

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert launch(str(tmp_path / "home"), port=port) != 0
    assert f"Port {port} is not available" in capfd.readouterr().err
