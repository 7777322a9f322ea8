"""Handlers run with Lambda's file system: only the temporary directory is writable."""

from __future__ import annotations

import errno
import tempfile
from pathlib import Path

import pytest

from local.aws.lambda_sandbox import read_only_except_tmp
from tests.orchestration.conftest import fake_parquet, wait_for_key


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
    with read_only_except_tmp():
        with pytest.raises(OSError) as refused:
            (lambda_home / "note.txt").write_text("x")
        with pytest.raises(OSError):
            (lambda_home / ".config").mkdir()
        scratch = Path(tempfile.gettempdir()) / "lambda-scratch.txt"
        scratch.write_text("ok")  # /tmp stays writable
        scratch.unlink()
    assert refused.value.errno == errno.EROFS
    (lambda_home / "note.txt").write_text("x")  # outside a handler: the harness is not Lambda


def test_handlers_that_talk_to_nessie_start_with_a_read_only_home(make_stack, lambda_home):
    """pynessie's configuration creates `~/.config/nessie`; on Lambda that is EROFS."""
    stack = make_stack()
    stack.drop_file("home/orders/x.parquet", fake_parquet("home"))
    record = wait_for_key(stack, "home/orders/x.parquet")
    stack.wait_idle()

    assert record["status"] == "PUBLISHED", record
    errors = [c.error for c in stack.dispatcher.invocations if c.error]
    assert errors == [], errors
    assert not (lambda_home / ".config").exists()
