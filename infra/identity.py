"""Who calls the catalog: an Amazon Cognito user pool (docs/deploy.md, "Who may do what in
the catalog").

- machine callers (the Lambdas, the Spark job): one app client per role with the client
  credentials grant and that role's one scope `wap/<role>`; each client's id, secret and
  token endpoint are one Secrets Manager secret, which only that role's principals may read;
- people: user pool users in a group per role (`wap-operator`, `wap-reader`), who sign in
  to the Nessie UI (a confidential web-app client) and to `wap --aws` (a public client,
  authorization code with PKCE and a localhost redirect);
- the pre token generation trigger (infra/token_roles.py) writes both kinds of caller's
  roles into the `roles` claim Nessie's rules read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, SecretValue, Stack
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import NagSuppressions
from constructs import Construct

from infra import constants
from infra.log_groups import log_group

TOKEN_ROLES_CODE = Path(__file__).with_name("token_roles.py")


@dataclass(frozen=True)
class CatalogRoles:
    """The roles of the rules file: who gets a client of its own, who is a group of people."""

    machines: tuple[str, ...]
    people: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.machines, *self.people)


class CatalogIdentity(Construct):
    """The user pool, its domain (login pages and token endpoint), the clients and the
    client-credential secrets.

    Attributes: `issuer_url` (what Quarkus OIDC discovers the keys from), `token_endpoint`,
    `login_base_url`, `credentials` (role -> secret), `ui_client`, `ui_client_secret`
    (a secret with `client_secret`), `cli_client`.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        roles: CatalogRoles,
        ui_callback_url: str,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        token_roles = lambda_.Function(
            self,
            "TokenRoles",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline(TOKEN_ROLES_CODE.read_text()),
            environment={"WAP_CATALOG_ROLES": json.dumps(list(roles.all))},
            timeout=Duration.seconds(5),
            log_group=log_group(self, "TokenRolesLogs", removal_policy),
        )
        self.user_pool = cognito.UserPool(
            self,
            "Users",
            # V3_0 token customization (machine clients' tokens) needs Essentials or Plus.
            feature_plan=cognito.FeaturePlan.ESSENTIALS,
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(username=True, email=True),
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(sms=False, otp=True),
            password_policy=cognito.PasswordPolicy(
                min_length=14,
                require_digits=True,
                require_lowercase=True,
                require_uppercase=True,
                require_symbols=True,
            ),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            removal_policy=removal_policy,
        )
        self.user_pool.add_trigger(
            cognito.UserPoolOperation.PRE_TOKEN_GENERATION_CONFIG,
            token_roles,
            cognito.LambdaVersion.V3_0,
        )
        # The Cognito domain prefix is global per region: the stack's name and account.
        self.domain = self.user_pool.add_domain(
            "Login",
            cognito_domain=cognito.CognitoDomainOptions(
                domain_prefix=f"{stack.stack_name.lower()}-{stack.account}"
            ),
        )
        self.login_base_url = self.domain.base_url()
        self.token_endpoint = f"{self.login_base_url}/oauth2/token"
        self.issuer_url = (
            f"https://cognito-idp.{stack.region}.{stack.url_suffix}/{self.user_pool.user_pool_id}"
        )

        scopes = {
            role: cognito.ResourceServerScope(
                scope_name=role, scope_description=f"the catalog role {role}"
            )
            for role in roles.machines
        }
        server = self.user_pool.add_resource_server(
            "Catalog", identifier=constants.CATALOG_RESOURCE_SERVER, scopes=list(scopes.values())
        )
        self.credentials: dict[str, secretsmanager.Secret] = {}
        self.client_ids: dict[str, str] = {}
        for role in roles.machines:
            client = self.user_pool.add_client(
                f"{constants.construct_name(role)}Client",
                generate_secret=True,
                o_auth=cognito.OAuthSettings(
                    flows=cognito.OAuthFlows(client_credentials=True),
                    scopes=[cognito.OAuthScope.resource_server(server, scopes[role])],
                ),
                access_token_validity=Duration.hours(1),
                prevent_user_existence_errors=True,
            )
            self.client_ids[role] = client.user_pool_client_id
            self.credentials[role] = self._credentials_secret(role, client, removal_policy)

        for role in roles.people:
            cognito.CfnUserPoolGroup(
                self,
                f"{constants.construct_name(role)}Group",
                user_pool_id=self.user_pool.user_pool_id,
                group_name=role,
                description=f"People with the catalog role {role}",
            )
        people_scopes = [cognito.OAuthScope.OPENID, cognito.OAuthScope.PROFILE]
        self.ui_client = self.user_pool.add_client(
            "UiClient",
            generate_secret=True,
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=people_scopes,
                callback_urls=[ui_callback_url],
            ),
            prevent_user_existence_errors=True,
        )
        self.ui_client_secret = secretsmanager.Secret(
            self,
            "UiClientSecret",
            description="The Nessie UI's Cognito client secret (its web-app login)",
            secret_object_value={
                "client_secret": SecretValue.resource_attribute(
                    self.ui_client.node.default_child.attr_client_secret
                )
            },
            removal_policy=removal_policy,
        )
        NagSuppressions.add_resource_suppressions(
            self.ui_client_secret,
            [
                {
                    "id": "AwsSolutions-SMG4",
                    "reason": "Cognito generates the UI client's secret; rotation is adding a "
                    "second client secret in Cognito, putting it here, restarting Nessie, then "
                    "deleting the old one (docs/deploy.md, rotating the client secrets).",
                }
            ],
        )
        # A public client: a CLI cannot keep a secret; PKCE protects the code instead.
        self.cli_client = self.user_pool.add_client(
            "CliClient",
            generate_secret=False,
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=people_scopes,
                callback_urls=[
                    f"http://localhost:{port}{constants.CLI_LOGIN_PATH}"
                    for port in constants.CLI_LOGIN_PORTS
                ],
            ),
            access_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.hours(12),
            prevent_user_existence_errors=True,
        )
        NagSuppressions.add_resource_suppressions(
            self.user_pool,
            [
                {
                    "id": rule,
                    "reason": "Threat protection (advanced security) needs the Plus plan; the pool "
                    "has no self sign-up, requires MFA, and only operators add people; "
                    "Essentials is what machine clients' token customization needs.",
                }
                for rule in ("AwsSolutions-COG3", "AwsSolutions-COG8")
            ],
            apply_to_children=True,
        )

    def _credentials_secret(
        self, role: str, client: cognito.UserPoolClient, removal_policy: RemovalPolicy
    ) -> secretsmanager.Secret:
        """One role's client credentials, read by that role's principals only."""
        secret = secretsmanager.Secret(
            self,
            f"{constants.construct_name(role)}Credentials",
            description=f"Client credentials of the catalog role {role} (Cognito app client)",
            secret_object_value={
                "client_id": SecretValue.unsafe_plain_text(client.user_pool_client_id),
                "client_secret": SecretValue.resource_attribute(
                    client.node.default_child.attr_client_secret
                ),
                "token_endpoint": SecretValue.unsafe_plain_text(self.token_endpoint),
                "scope": SecretValue.unsafe_plain_text(
                    f"{constants.CATALOG_RESOURCE_SERVER}/{role}"
                ),
            },
            removal_policy=removal_policy,
        )
        NagSuppressions.add_resource_suppressions(
            secret,
            [
                {
                    "id": "AwsSolutions-SMG4",
                    "reason": "Cognito generates the client secret; rotation is adding a second "
                    "client secret in Cognito, putting it here, then deleting the old one "
                    "(docs/deploy.md, rotating the client secrets).",
                }
            ],
        )
        return secret
