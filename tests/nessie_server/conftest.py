"""Helpers for the Nessie server acceptance tests: an HTTP client, Nessie's OpenAPI spec
(read from the Iceberg runtime jar, the same spec real Nessie is built from), small builders."""

from __future__ import annotations

import uuid
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import yaml

from bench.nessie_requests import operations_body
from local.spark import iceberg_runtime_jar

# sha256("empty"): Nessie's "no ancestor" hash, where a fresh repository's main starts.
EMPTY_HASH = "2e1cfa82b035c26cbbbdae632cea070514eb8b773f616aaeaf668e2f0be8f10d"


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def api(nessie) -> Iterator[httpx.Client]:
    """An HTTP client on API v2 that asks for Nessie's error details (spec 2)."""
    with httpx.Client(
        base_url=nessie.api_v2, headers={"Nessie-Client-Spec": "2"}, timeout=30
    ) as client:
        yield client


def head(api: httpx.Client, ref: str = "main") -> str:
    resp = api.get(f"/trees/{ref}")
    assert resp.status_code == 200, resp.text
    return resp.json()["reference"]["hash"]


def create_branch(api: httpx.Client, name: str, from_ref: str = "main") -> str:
    source = api.get(f"/trees/{from_ref}").json()["reference"]
    resp = api.post("/trees", params={"name": name, "type": "BRANCH"}, json=source)
    assert resp.status_code == 200, resp.text
    return resp.json()["reference"]["hash"]


def commit(
    api: httpx.Client,
    branch: str,
    expected: str,
    *ops: dict[str, Any],
    message: str = "test commit",
) -> httpx.Response:
    return api.post(
        f"/trees/{branch}@{expected}/history/commit", json=operations_body(message, *ops)
    )


@pytest.fixture(scope="session")
def openapi_spec() -> dict[str, Any]:
    with zipfile.ZipFile(iceberg_runtime_jar()) as jar:
        return yaml.safe_load(jar.read("META-INF/openapi/openapi.yaml"))


def _discriminated(schema: Any) -> Any:
    """OpenAPI `oneOf` + `discriminator` -> JSON Schema `if/then` on the discriminator value.

    Nessie's Branch/Tag schemas are structurally identical, so plain `oneOf` cannot tell them
    apart; the discriminator is what real OpenAPI tooling uses.
    """
    if isinstance(schema, list):
        return [_discriminated(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _discriminated(v) for k, v in schema.items()}
    disc = out.pop("discriminator", None)
    if disc and ("oneOf" in out or "anyOf" in out):
        out.pop("oneOf", None)
        out.pop("anyOf", None)
        prop = disc["propertyName"]
        out["allOf"] = [*out.get("allOf", []), {"required": [prop]}] + [
            {"if": {"properties": {prop: {"const": value}}}, "then": {"$ref": ref}}
            for value, ref in disc["mapping"].items()
        ]
    return out


@pytest.fixture(scope="session")
def validate(openapi_spec) -> Callable[[str, Any], None]:
    """validate(schema_name, instance): raise if `instance` does not match the named schema."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    root = {"components": _discriminated(openapi_spec["components"])}
    registry = Registry().with_resource("urn:nessie", Resource(root, DRAFT202012))

    def check(name: str, instance: Any) -> None:
        assert name in openapi_spec["components"]["schemas"], name
        schema = {"$ref": f"urn:nessie#/components/schemas/{name}"}
        Draft202012Validator(
            schema, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER
        ).validate(instance)

    return check
