"""Handlers run with Lambda's file system: only the temporary directory is writable."""

from __future__ import annotations

import errno
import tempfile
from pathlib import Path

import pytest

from local.aws.lambda_sandbox import Sandbox
from tests.fixtures.local_stack import fake_parquet, wait_for_key


@pytest.fixture
def lambda_home(monkeypatch):
    """A home directory outside /tmp with nothing in it, like a Lambda sandbox user's."""
    home = Path(tempfile.mkdtemp(prefix="lambda-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("NESSIEDIR", raising=False)
    yield home
    import shutil

    shutil.rmtree(home, ignore_errors=True)


def test_writes_outside_tmp_are_refused_like_a_read_only_file_system(lambda_home):
    sandbox, other = Sandbox("one", {}), Sandbox("two", {})
    with sandbox.running():
        with pytest.raises(OSError) as refused:
            (lambda_home / "note.txt").write_text("x")
        with pytest.raises(OSError):
            (lambda_home / ".config").mkdir()
        assert tempfile.gettempdir() == sandbox.tmp  # the function's own /tmp
        scratch = Path(tempfile.gettempdir()) / "lambda-scratch.txt"
        scratch.write_text("ok")  # /tmp stays writable
        with tempfile.NamedTemporaryFile() as handle:
            assert handle.name.startswith(sandbox.tmp)
        with pytest.raises(OSError):  # another function's /tmp is not this one's
            (Path(other.tmp) / "x").write_text("x")
    assert refused.value.errno == errno.EROFS
    assert scratch.read_text() == "ok"
    (lambda_home / "note.txt").write_text("x")  # outside a handler: the harness is not Lambda
    for box in (sandbox, other):
        box.remove()


def test_handlers_that_talk_to_nessie_start_with_a_read_only_home(
    make_stack, lambda_home, monkeypatch, tmp_path
):
    """pynessie's configuration creates `~/.config/nessie`; on Lambda that is EROFS."""
    # The stand-in job (not a Lambda) also uses pynessie: give the harness its own place.
    monkeypatch.setenv("NESSIEDIR", str(tmp_path / "harness-nessie"))
    stack = make_stack()
    stack.drop_file("home/orders/x.parquet", fake_parquet("home"))
    record = wait_for_key(stack, "home/orders/x.parquet")
    stack.wait_idle()

    assert record.status == "PUBLISHED", record
    errors = [c.error for c in stack.dispatcher.invocations if c.error]
    assert errors == [], errors
    assert not (lambda_home / ".config").exists()
