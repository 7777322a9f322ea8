"""Cognito's pre token generation trigger (event version V3_0): every access token the
user pool issues carries the caller's catalog roles in a `roles` claim, and its name in
`principal`, the two claims Nessie reads (`quarkus.oidc.roles.role-claim-path=roles`,
`quarkus.oidc.token.principal-claim=principal`).

Why a trigger: Cognito puts a person's groups in `cognito:groups` but a machine client's
access token (client credentials) has no groups, only its scopes
(`<resource server>/<scope>`), and Quarkus reads roles from one claim path. With this
trigger both kinds of caller carry the same claim, the one the local stand-in of the IdP
issues (docs/deploy.md, "Who may do what in the catalog").

Deployed as the function's inline code (infra/identity.py reads this file), so it is
standard library only and self-contained; its tests call `handler` directly.
"""

import json
import os

# The resource server's identifier: a machine client's scope `wap/<role>` is that role.
RESOURCE_SERVER = "wap"
ENV_ROLES = "WAP_CATALOG_ROLES"  # the roles that exist, JSON list (the rules' names)
ROLES_CLAIM = "roles"
PRINCIPAL_CLAIM = "principal"
CLIENT_CREDENTIALS = "TokenGeneration_ClientCredentials"


def catalog_roles(event, known):
    """The roles of the caller of `event`: a machine client's from its granted scopes,
    a person's from their groups; only names in `known`, sorted."""
    request = event.get("request") or {}
    if event.get("triggerSource") == CLIENT_CREDENTIALS:
        prefix = RESOURCE_SERVER + "/"
        names = [s[len(prefix) :] for s in request.get("scopes") or [] if s.startswith(prefix)]
    else:
        names = (request.get("groupConfiguration") or {}).get("groupsToOverride") or []
    return sorted(set(names) & set(known))


def principal(event, roles):
    """A machine client is its role (one client per role); a person is their user name."""
    if event.get("triggerSource") == CLIENT_CREDENTIALS:
        return (
            roles[0]
            if len(roles) == 1
            else "client:" + str((event.get("callerContext") or {}).get("clientId", ""))
        )
    return str(event.get("userName", ""))


def handler(event, context):
    """Add `roles` and `principal` to the access token (and the ID token of a person, which
    the UI's web-app login reads)."""
    known = json.loads(os.environ[ENV_ROLES])
    roles = catalog_roles(event, known)
    claims = {ROLES_CLAIM: roles, PRINCIPAL_CLAIM: principal(event, roles)}
    details = {"accessTokenGeneration": {"claimsToAddOrOverride": claims}}
    if event.get("triggerSource") != CLIENT_CREDENTIALS:
        details["idTokenGeneration"] = {"claimsToAddOrOverride": claims}
    event["response"] = {"claimsAndScopeOverrideDetails": details}
    return event
