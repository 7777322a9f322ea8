"""Least privilege, proven: every grant of the synthesized template is used by at least
one call the suite made (tests/local/aws/least_privilege.py says which are exempt and why).
"""

from __future__ import annotations

import pytest

from local.aws.iam import SESSION_USAGE
from tests.local.aws.least_privilege import unused_grants
from tests.plugins.xdist_support import runs_on_workers, whole_suite


@pytest.mark.suite_end
def test_every_policy_grant_is_used_by_the_suite(request):
    """Each resource of each statement (CDK merges grants into shared statements, so a
    statement-level check would hide an unused prefix) is used by a recorded call."""
    if not whole_suite(request.config):
        pytest.skip("judges the calls of the whole suite (run `make test`)")
    if runs_on_workers(request.config):
        pytest.skip(
            "judged on xdist's controller over every worker's calls "
            "(tests/plugins/xdist_support.py)"
        )
    used = SESSION_USAGE.used()
    assert used, "no local stack recorded a call: did the suite run?"
    unused = unused_grants(used, SESSION_USAGE.variants())
    assert unused == [], "grants no call used (remove them from infra/):\n" + "\n".join(unused)
