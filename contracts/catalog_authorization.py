"""The catalog's roles and authorization rules, defined once (catalog_authorization.properties).

The rules file is Nessie's own configuration (`nessie.server.authorization.rules.<id>=<CEL>`):
the stack deploys its lines verbatim, the local catalog (local/nessie/authz.py) evaluates the
same CEL. This module reads it (`load_rules`: rule id -> CEL text) and names what the rules
speak of: the roles a token carries in its `roles` claim, which component acts as which role,
and Nessie's operation names (org.projectnessie.services.authz.Check.CheckType).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

RULES_FILE = Path(__file__).with_name("catalog_authorization.properties")
RULE_PREFIX = "nessie.server.authorization.rules."
# Rule ids are one lower-case word: the id survives Quarkus' mapping of environment variables
# (NESSIE_SERVER_AUTHORIZATION_RULES_<ID>) to map keys unchanged.
RULE_ID = re.compile(r"[a-z][a-z0-9]*")

# The token claim Nessie reads the roles from (quarkus.oidc.roles.role-claim-path).
ROLES_CLAIM = "roles"

TRIGGER = "wap-trigger"
JOB = "wap-job"
PUBLISHER = "wap-publisher"
MAINTENANCE = "wap-maintenance"
OPERATOR = "wap-operator"
READER = "wap-reader"
ROLES: tuple[str, ...] = (TRIGGER, JOB, PUBLISHER, MAINTENANCE, OPERATOR, READER)

# Which role each calling component acts as (one client, and so one secret, per role).
COMPONENT_ROLES: Mapping[str, str] = {
    "trigger": TRIGGER,
    "job": JOB,
    "finish": PUBLISHER,
    "publish": PUBLISHER,
    "sweeper": PUBLISHER,
    "maintenance": MAINTENANCE,
    "cli": OPERATOR,
    "dashboard": READER,
}

# Nessie's operations (Check.CheckType), spelled as its rules see them in `op`.
VIEW_REFERENCE = "VIEW_REFERENCE"
CREATE_REFERENCE = "CREATE_REFERENCE"
ASSIGN_REFERENCE_TO_HASH = "ASSIGN_REFERENCE_TO_HASH"
DELETE_REFERENCE = "DELETE_REFERENCE"
READ_ENTRIES = "READ_ENTRIES"
READ_CONTENT_KEY = "READ_CONTENT_KEY"
LIST_COMMIT_LOG = "LIST_COMMIT_LOG"
COMMIT_CHANGE_AGAINST_REFERENCE = "COMMIT_CHANGE_AGAINST_REFERENCE"
READ_ENTITY_VALUE = "READ_ENTITY_VALUE"
CREATE_ENTITY = "CREATE_ENTITY"
UPDATE_ENTITY = "UPDATE_ENTITY"
DELETE_ENTITY = "DELETE_ENTITY"
READ_REPOSITORY_CONFIG = "READ_REPOSITORY_CONFIG"
UPDATE_REPOSITORY_CONFIG = "UPDATE_REPOSITORY_CONFIG"
OPERATIONS: tuple[str, ...] = (
    VIEW_REFERENCE,
    CREATE_REFERENCE,
    ASSIGN_REFERENCE_TO_HASH,
    DELETE_REFERENCE,
    READ_ENTRIES,
    READ_CONTENT_KEY,
    LIST_COMMIT_LOG,
    COMMIT_CHANGE_AGAINST_REFERENCE,
    READ_ENTITY_VALUE,
    CREATE_ENTITY,
    UPDATE_ENTITY,
    DELETE_ENTITY,
    READ_REPOSITORY_CONFIG,
    UPDATE_REPOSITORY_CONFIG,
)
# Operations about a content key (Nessie sets `path` and `contentType` for these only).
CONTENT_OPERATIONS = frozenset(
    {READ_CONTENT_KEY, READ_ENTITY_VALUE, CREATE_ENTITY, UPDATE_ENTITY, DELETE_ENTITY}
)


class RulesFileError(ValueError):
    """The rules file is not what Nessie would accept as authorization rules."""


def parse_rules(text: str, source: str = "rules") -> dict[str, str]:
    """Rule id -> CEL text from properties `text`: `#`/`!` comments and blank lines skipped,
    every other line `nessie.server.authorization.rules.<id>=<CEL>` (one line each)."""
    rules: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        where = f"{source}:{number}"
        if not sep or not key.startswith(RULE_PREFIX):
            raise RulesFileError(f"{where}: not a line `{RULE_PREFIX}<id>=<CEL>`")
        if value.endswith("\\"):
            raise RulesFileError(f"{where}: continued lines are not supported, keep a rule on one")
        rule_id = key[len(RULE_PREFIX) :]
        if not RULE_ID.fullmatch(rule_id):
            raise RulesFileError(f"{where}: rule id {rule_id!r} is not one lower-case word")
        if rule_id in rules:
            raise RulesFileError(f"{where}: rule {rule_id!r} is defined twice")
        if not value:
            raise RulesFileError(f"{where}: rule {rule_id!r} has no expression")
        rules[rule_id] = value
    if not rules:
        raise RulesFileError(f"{source}: no rules")
    return rules


def load_rules(path: Path = RULES_FILE) -> dict[str, str]:
    """The rules of `path` (the service's rules file by default): rule id -> CEL text."""
    return parse_rules(path.read_text(encoding="utf-8"), str(path))


def nessie_properties(rules: Mapping[str, str]) -> dict[str, str]:
    """Nessie's configuration keys for `rules` (what a deployment sets, beside
    `nessie.server.authorization.enabled=true`)."""
    return {RULE_PREFIX + rule_id: text for rule_id, text in rules.items()}
