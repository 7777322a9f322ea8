"""Authentication and authorization as Nessie does them: bearer tokens, then CEL rules.

Authentication (Nessie's `nessie.server.authentication.enabled` with Quarkus OIDC): every
API request carries `Authorization: Bearer <JWT>` from the identity provider
(local/idp.py); none, or one that is invalid or expired, is answered 401. The token's
subject is the principal's name (the rules' `role`), its `roles` claim the roles.

Authorization (`nessie.server.authorization.enabled`, type CEL): the rules of
contracts/catalog_authorization.properties, compiled by cel-rust with the variables Nessie
declares (`op`, `role`, `roles`, `ref`, `path`, `contentType`). A check passes when any
rule is true; failures are reported together as Nessie's AccessCheckException is (403,
`FORBIDDEN`, the messages of `CelBatchAccessChecker`). Which endpoint asks for which checks
follows Nessie's `TreeApiImpl`, `ContentApiImpl` and `DiffApiImpl`, written next to each
handler (routes_v1.py, routes_v2.py); `Checks` mirrors `AbstractBatchAccessChecker` (every
check on a reference also asks to view it).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

import cel as _cel

from contracts.catalog_authorization import (
    ASSIGN_REFERENCE_TO_HASH,
    COMMIT_CHANGE_AGAINST_REFERENCE,
    CONTENT_OPERATIONS,
    CREATE_ENTITY,
    CREATE_REFERENCE,
    DELETE_ENTITY,
    DELETE_REFERENCE,
    LIST_COMMIT_LOG,
    OPERATIONS,
    READ_CONTENT_KEY,
    READ_ENTITY_VALUE,
    READ_ENTRIES,
    UPDATE_ENTITY,
    VIEW_REFERENCE,
)
from local.idp import InvalidTokenError, LocalIdentityProvider, Principal

from .exceptions import ForbiddenError, UnauthorizedError
from .refs import key_to_path_string

# Nessie's AUTHORIZATION_RULE_DECLARATIONS (CELUtil): the only variables a rule may use.
RULE_VARIABLES = frozenset({"ref", "path", "contentType", "role", "roles", "op"})
_MACRO_VAR = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
# CompiledAuthorizationRules: without a rule naming VIEW_REFERENCE, everyone views every ref.
_VIEW_ALL_ID = "__ALLOW_VIEWING_REF_ID"
_VIEW_ALL = f"op=='{VIEW_REFERENCE}' && ref.matches('.*')"

_VERIFIED_TOKENS = 1024  # tokens remembered as verified (then the expired ones are dropped)
Key = tuple[str, ...]
Check = tuple[str, str, str, str]  # op, ref, path, contentType


class RuleError(ValueError):
    """A rule that Nessie would refuse to start with."""


class Authorizer:
    """Compiled rules, evaluated per check; remembers which rules allowed something."""

    def __init__(self, rules: Mapping[str, str]) -> None:
        texts = dict(rules)
        if not any(VIEW_REFERENCE in text for text in texts.values()):
            texts[_VIEW_ALL_ID] = _VIEW_ALL
        self.rules = texts
        self._programs: dict[str, Any] = {}
        for rule_id, text in texts.items():
            try:
                program = _cel.compile(text)
            except Exception as exc:
                raise RuleError(
                    f"Failed to compile authorization rule with id '{rule_id}' and expression "
                    f"'{text}' due to: {' '.join(str(exc).split())[:200]}"
                ) from None
            bound = set(_MACRO_VAR.findall(text))
            unknown = set(program.variables()) - RULE_VARIABLES - bound
            if unknown:
                raise RuleError(
                    f"Failed to compile authorization rule with id '{rule_id}': undeclared "
                    f"reference to {sorted(unknown)}"
                )
            self._programs[rule_id] = program
        self.used: Counter[str] = Counter()
        self._lock = threading.Lock()

    def allowing(self, principal: Principal, check: Check) -> list[str]:
        """The ids of the rules that allow `check` for `principal` (Nessie stops at the first;
        all are evaluated here so that tests can tell which rules are used)."""
        op, ref, path, content_type = check
        env = {
            "op": op,
            "role": principal.name,
            "roles": list(principal.roles),
            "ref": ref,
            "path": path,
            "contentType": content_type,
        }
        allowed = []
        for rule_id, program in self._programs.items():
            try:
                result = program.execute(env)
            except Exception as exc:  # Nessie: a RuntimeException, the request fails (500)
                raise RuntimeError(
                    f"Failed to execute authorization rule with id '{rule_id}' due to: {exc}"
                ) from None
            if result is True:
                allowed.append(rule_id)
        if allowed:
            with self._lock:
                self.used.update(allowed)
        return allowed

    def allows(self, principal: Principal, check: Check) -> bool:
        return bool(self.allowing(principal, check))


class Security:
    """One server's authentication (the IdP whose tokens it accepts) and authorization
    (the rules; None: every authenticated caller may do everything)."""

    def __init__(self, idp: LocalIdentityProvider, rules: Mapping[str, str] | None) -> None:
        self.idp = idp
        self.authorizer = Authorizer(rules) if rules is not None else None
        # Verified tokens until they expire: a signature is checked once per token, not
        # once per request (a client sends the same token for up to an hour).
        self._verified: dict[str, Principal] = {}
        self._lock = threading.Lock()

    def authenticate(self, authorization: str | None) -> Principal:
        """The caller of a request with this `Authorization` header; UnauthorizedError."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise UnauthorizedError("Missing or unrecognized credentials")
        token = token.strip()
        now = self.idp.clock()
        with self._lock:
            known = self._verified.get(token)
        if known is not None and now < known.expires_at:
            return known
        try:
            principal = self.idp.verify(token)
        except InvalidTokenError:
            raise UnauthorizedError("Missing or unrecognized credentials", invalid=True) from None
        with self._lock:
            if len(self._verified) >= _VERIFIED_TOKENS:
                self._verified = {t: p for t, p in self._verified.items() if now < p.expires_at}
                if len(self._verified) >= _VERIFIED_TOKENS:
                    self._verified.clear()
            self._verified[token] = principal
        return principal

    def checks(self, principal: Principal | None) -> Checks:
        return Checks(self.authorizer, principal)


class Checks:
    """A batch of access checks (Nessie's BatchAccessChecker): add checks, then
    `check_and_throw()` raises one 403 naming every refused operation."""

    def __init__(self, authorizer: Authorizer | None, principal: Principal | None) -> None:
        self.authorizer = authorizer
        self.principal = principal
        self._checks: dict[Check, None] = {}  # insertion-ordered set

    # ---- Nessie's checks (AbstractBatchAccessChecker) ---------------------------------------

    def can(self, op: str, ref: str, key: Key | None = None, content_type: str | None = None):
        """Add one check (`key` and `content_type` for content operations only)."""
        assert op in OPERATIONS, op
        path = key_to_path_string(key) if key is not None and op in CONTENT_OPERATIONS else ""
        ctype = content_type or "" if op in CONTENT_OPERATIONS else ""
        self._checks[(op, ref, path, ctype)] = None
        return self

    def view(self, ref: str) -> Checks:
        return self.can(VIEW_REFERENCE, ref)

    def create_reference(self, ref: str) -> Checks:
        return self.can(CREATE_REFERENCE, ref)

    def assign(self, ref: str) -> Checks:
        return self.view(ref).can(ASSIGN_REFERENCE_TO_HASH, ref)

    def delete_reference(self, ref: str) -> Checks:
        return self.view(ref).can(DELETE_REFERENCE, ref)

    def read_entries(self, ref: str) -> Checks:
        return self.view(ref).can(READ_ENTRIES, ref)

    def list_commit_log(self, ref: str) -> Checks:
        return self.view(ref).can(LIST_COMMIT_LOG, ref)

    def commit(self, ref: str) -> Checks:
        return self.view(ref).can(COMMIT_CHANGE_AGAINST_REFERENCE, ref)

    def read_content_key(self, ref: str, key: Key, content_type: str | None) -> Checks:
        return self.view(ref).can(READ_CONTENT_KEY, ref, key, content_type)

    def read_entity(self, ref: str, key: Key, content_type: str | None) -> Checks:
        return self.view(ref).can(READ_ENTITY_VALUE, ref, key, content_type)

    def entity_change(self, ref: str, change: str, key: Key, content_type: str | None) -> Checks:
        """CREATE_ENTITY, UPDATE_ENTITY or DELETE_ENTITY (`change`: CREATE, UPDATE, DELETE)."""
        op = {"CREATE": CREATE_ENTITY, "UPDATE": UPDATE_ENTITY, "DELETE": DELETE_ENTITY}[change]
        return self.view(ref).can(op, ref, key, content_type)

    # ---- evaluation ----------------------------------------------------------------------

    def allowed(self, op: str, ref: str, key: Key | None = None, content_type: str | None = None):
        """Whether one check passes, without adding it (lists skip what may not be seen)."""
        if self.authorizer is None or self.principal is None:
            return True
        path = key_to_path_string(key) if key is not None and op in CONTENT_OPERATIONS else ""
        ctype = content_type or "" if op in CONTENT_OPERATIONS else ""
        return self.authorizer.allows(self.principal, (op, ref, path, ctype))

    def failures(self) -> list[str]:
        """The messages of the refused checks (CelBatchAccessChecker's), in the order added."""
        if self.authorizer is None or self.principal is None:
            return []
        role = self.principal.name
        out = []
        for check in self._checks:
            if self.authorizer.allows(self.principal, check):
                continue
            op, ref, path, _ = check
            if op in CONTENT_OPERATIONS:
                out.append(f"'{op}' is not allowed for role '{role}' on content '{path}'")
            else:
                out.append(f"'{op}' is not allowed for role '{role}' on reference '{ref}'")
        return out

    def check_and_throw(self) -> None:
        """Raise ForbiddenError (403) naming every refused check; then start a new batch."""
        failed = self.failures()
        self._checks = {}
        if failed:
            raise ForbiddenError(", ".join(failed))
