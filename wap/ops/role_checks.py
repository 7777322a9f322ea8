"""`wap doctor`'s catalog role checks: each role's token gets exactly what the rules file says.

For every role it has a token of, the doctor checks:
- the token's `roles` claim is exactly that role (what the identity provider's mapping,
  Cognito's pre token generation trigger on AWS, must produce);
- Nessie, asked live, accepts the token and lets it read `main` (every role may);
- judged dry, by the rules file for that claim: creating a `wap_*` branch, committing to
  `main`, deleting `main` and deleting a `wap_*` branch. These are not sent: Nessie looks
  up a call's hashes and references before it checks them (a made-up hash answers 404
  whoever asks), and a real one would change the catalog for a role that may.
What each role should get is the rules file's own answer
(contracts/catalog_authorization.properties, evaluated as the local catalog evaluates it);
the rules Nessie runs are that file's lines (infra/catalog.py deploys them verbatim).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contracts import catalog_authorization as authz

PROBE_BRANCH = "wap_doctor_probe"
_TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class Probe:
    """One call that changes nothing, and the checks (op, ref) Nessie makes for it."""

    what: str
    checks: tuple[tuple[str, str], ...]
    method: str
    path: str  # below /api/v2/
    body: Any = None


PROBES = (Probe("read main", ((authz.VIEW_REFERENCE, "main"),), "GET", "trees/main"),)
# Judged by the rules for the token's roles claim, not sent (see above).
DRY = (
    Probe(
        "create a wap_ branch",
        ((authz.VIEW_REFERENCE, "main"), (authz.CREATE_REFERENCE, PROBE_BRANCH)),
        "POST",
        "",
    ),
    Probe("commit to main", ((authz.COMMIT_CHANGE_AGAINST_REFERENCE, "main"),), "POST", ""),
    Probe("delete main", ((authz.DELETE_REFERENCE, "main"),), "DELETE", ""),
    Probe("delete a wap_ branch", ((authz.DELETE_REFERENCE, PROBE_BRANCH),), "DELETE", ""),
)

Send = Callable[[str, str, str, Any], int]  # (method, url, token, body) -> HTTP status


def expected(
    rules: Mapping[str, str], role: str, probe: Probe, roles: tuple[str, ...] | None = None
) -> bool:
    """Whether the rules let a principal named `role` holding `roles` (default: just that
    role) make `probe`."""
    from local.idp import Principal
    from local.nessie.authz import Authorizer

    authorizer = Authorizer(rules)
    principal = Principal(role, (role,) if roles is None else roles)
    return all(authorizer.allows(principal, (op, ref, "", "")) for op, ref in probe.checks)


def token_roles(token: str) -> tuple[str, ...] | None:
    """The `roles` claim of a JWT (its payload read, not verified: Nessie verifies), or None
    when it has none."""
    import base64

    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    roles = claims.get(authz.ROLES_CLAIM) if isinstance(claims, dict) else None
    return tuple(roles) if isinstance(roles, list) else None


def send(method: str, url: str, token: str, body: Any) -> int:
    """One Nessie call with `token`; its HTTP status."""
    request = urllib.request.Request(  # noqa: S310 - the stack's Nessie URL
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:  # noqa: S310
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@dataclass(frozen=True)
class RoleVerdict:
    """One role's probes: ok when every one was answered as the rules say."""

    role: str
    ok: bool
    detail: str


def check_roles(
    nessie_v2: str,
    tokens: Mapping[str, Callable[[], str]],
    *,
    rules: Mapping[str, str] | None = None,
    http: Send = send,
) -> list[RoleVerdict]:
    """Probe Nessie at `nessie_v2` (its API v2 URL) with each role's token."""
    rules = authz.load_rules() if rules is None else rules
    verdicts = []
    for role, token_of in tokens.items():
        try:
            token = token_of()
        except Exception as exc:  # the role's client or secret: say why, check the others
            verdicts.append(RoleVerdict(role, False, f"no token: {exc}"))
            continue
        wrong, seen = [], []
        claimed = token_roles(token)
        if claimed != (role,):
            wrong.append(f"the token's {authz.ROLES_CLAIM} claim is {claimed!r}, not [{role!r}]")
        for probe in DRY:
            allowed = expected(rules, role, probe, claimed or ())
            seen.append(f"{probe.what} {'allowed' if allowed else 'refused'} (by the rules)")
        for probe in PROBES:
            allowed = expected(rules, role, probe)
            url = f"{nessie_v2.rstrip('/')}/{probe.path}"
            try:
                status = http(probe.method, url, token, probe.body)
            except (urllib.error.URLError, OSError) as exc:
                wrong.append(f"{probe.what}: Nessie unreachable ({exc})")
                break
            if status == 401:
                wrong.append(f"{probe.what}: the token was not accepted (401)")
                continue
            refused = status == 403
            seen.append(f"{probe.what} {'refused' if refused else 'allowed'}")
            if refused == allowed:
                should = "allowed" if allowed else "refused"
                wrong.append(f"{probe.what}: should be {should}, got HTTP {status}")
        verdicts.append(
            RoleVerdict(role, not wrong, "; ".join(wrong) if wrong else ", ".join(seen))
        )
    return verdicts
