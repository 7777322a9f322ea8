"""What the suite needs to run on pytest-xdist workers as it runs in one process.

- Least privilege over the whole suite. Every local stack records the grants its calls
  used in `local.aws.iam.SESSION_USAGE`, which lives in one process. In a serial run the
  `suite_end` test reads it last. Under xdist each worker holds only its own share and no
  test runs after every worker: each worker hands its usage to the controller when it
  ends, and the controller judges the union once every worker is down, failing the run
  as a test would.
- The environment a `wap` command sees is the one of a serial run (no COLUMNS).
"""

from __future__ import annotations

import json
import os

import pytest

_USAGE_KEY = "iam_usage"
_VARIANTS_KEY = "iam_variants"  # the template variants whose grants are judged too

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Workers start with COLUMNS=80 and LINES=24 in their environment, which a `wap`
    # command takes as a terminal's width (its tables would wrap unlike in a pipe). Done
    # on import, before any conftest imports the CLI (its console is made on import).
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)


def is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def runs_on_workers(config: pytest.Config) -> bool:
    """Whether this run's tests are spread over xdist workers (this is the controller or
    one of the workers)."""
    return is_xdist_worker(config) or bool(getattr(config.option, "numprocesses", None))


def whole_suite(config: pytest.Config) -> bool:
    """Whether the run holds every test: only then is an unused grant really unused."""
    args = [a for a in config.args if a not in ("tests", "tests/", str(config.rootpath / "tests"))]
    return not args and not config.option.keyword and not config.option.markexpr


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if is_xdist_worker(config):
        from local.aws.iam import SESSION_USAGE

        config.workeroutput[_USAGE_KEY] = json.dumps(sorted(SESSION_USAGE.used()))
        config.workeroutput[_VARIANTS_KEY] = json.dumps(SESSION_USAGE.variants())
    elif runs_on_workers(config) and whole_suite(config) and session.exitstatus in (0, 1):
        _judge_on_controller(session)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist: a worker ended; add the grants its stacks used to the controller's log."""
    from local.aws.iam import SESSION_USAGE

    output = getattr(node, "workeroutput", None) or {}
    SESSION_USAGE.add({tuple(item) for item in json.loads(output.get(_USAGE_KEY, "[]"))})
    for name, body in json.loads(output.get(_VARIANTS_KEY, "{}")).items():
        SESSION_USAGE.add_variant(name, body)


def _judge_on_controller(session: pytest.Session) -> None:
    from local.aws.iam import SESSION_USAGE
    from tests.local.aws.least_privilege import unused_grants

    used = SESSION_USAGE.used()
    unused = unused_grants(used, SESSION_USAGE.variants()) if used else []
    if not used:
        problem: str | None = "no local stack recorded a call: did the suite run?"
    elif unused:
        problem = "\n".join(["grants no call used (remove them from infra/):", *unused])
    else:
        problem = None
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if problem is None:
        if reporter:
            reporter.write_line(
                f"\nleast privilege: every grant was used ({len(used)} grants over all workers)"
            )
        return
    if reporter:
        reporter.write_sep("=", "least privilege (all workers)", red=True)
        reporter.write_line(problem)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
