"""The rules file is Nessie's configuration format, one rule a line, over the declared roles."""

from __future__ import annotations

import re

import pytest

from contracts import catalog_authorization as authz

RULE = authz.RULE_PREFIX


def test_the_rules_file_loads_as_rule_ids_and_cel():
    rules = authz.load_rules()
    assert set(rules) == {"read", "branch", "write", "publish", "discard", "smoke"}
    assert all(authz.RULE_ID.fullmatch(rule_id) for rule_id in rules)
    keys = authz.nessie_properties(rules)
    assert all(key.startswith("nessie.server.authorization.rules.") for key in keys)


def test_the_rules_name_only_declared_roles_and_operations():
    text = " ".join(authz.load_rules().values())
    quoted = set(re.findall(r"'([^']*)'", text))
    names = {q for q in quoted if q.isupper()}
    roles = {q for q in quoted if q.startswith("wap-") and not q.endswith("-")}
    assert names <= set(authz.OPERATIONS)
    assert roles == set(authz.ROLES)
    assert set(authz.COMPONENT_ROLES.values()) <= set(authz.ROLES)


def test_nothing_may_assign_a_reference_or_change_the_repository_config():
    text = " ".join(authz.load_rules().values())
    assert authz.ASSIGN_REFERENCE_TO_HASH not in text
    assert authz.UPDATE_REPOSITORY_CONFIG not in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"{RULE}a=true\n{RULE}a=true", "twice"),
        ("quarkus.oidc.client-id=x", "not a line"),
        (f"{RULE}Read_All=true", "one lower-case word"),
        (f"{RULE}a=op == \\", "continued"),
        (f"{RULE}a=", "no expression"),
        ("# only a comment", "no rules"),
    ],
)
def test_a_malformed_rules_file_is_refused(text, message):
    with pytest.raises(authz.RulesFileError, match=message):
        authz.parse_rules(text)
