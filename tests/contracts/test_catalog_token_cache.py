"""The process's token caches are per function (contracts/catalog_tokens.shared_cache): on
Lambda each function is a process of its own that reads its role's secret itself, so the
local stack, which runs every function in one process, keeps one cache per function too."""

from __future__ import annotations

from contracts.catalog_tokens import CatalogCredentials, shared_cache

PUBLISHER = CatalogCredentials(
    token_endpoint="https://wap.auth.eu-west-1.amazoncognito.com/oauth2/token",
    client_id="publisher-client",
    client_secret_arn="arn:aws:secretsmanager:eu-west-1:123456789012:secret:pub-AbCdEf",
)


def test_functions_of_one_role_each_have_their_own_cache(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "publish")
    publish = shared_cache(PUBLISHER)
    assert shared_cache(PUBLISHER) is publish  # warm invocations reuse it
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "finish")
    assert shared_cache(PUBLISHER) is not publish
