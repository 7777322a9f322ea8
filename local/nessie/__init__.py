"""A Nessie-compatible catalog server (SQLite-backed) for tests and the local mode.

Serves the subset of Nessie REST API v2 that Iceberg's Java `NessieCatalog` (Nessie client
0.104.5) uses and the v1 subset `pynessie` 0.67 uses, with Nessie's semantics and error bodies.
Layout: `store.py` (the commit DAG, references, contents, conflict rules), `routes_v2.py` /
`routes_v1.py` (parse and serialise; what both answer alike in `responses.py`), `http.py`
(body limits, gzip, routing, error bodies), `exceptions.py` (Nessie's error codes and
messages), `refs.py` (ref names, ref specs, content keys), `cel.py` (CEL `filter`
parameters, evaluated by cel-rust), `authz.py` (bearer tokens of the local identity
provider, local/idp.py, served under /idp; the authorization rules of
contracts/catalog_authorization.properties at Nessie's check points), `ui/` (the read-only
web UI), `runner.py` / `__main__.py`.

By default the server authenticates every API call (401 without a valid token; a UI page
without a session goes to the login instead) and
authorizes each operation with the service's rules (403 naming what was refused), as
Nessie with `nessie.server.authentication.enabled` and `authorization.enabled` does;
`start_server(secure=False)` serves without either (the Nessie server's own benchmark).

Known differences from real Nessie (clients treat all of these as opaque or unused):
- Commit hashes are sha256 over our own canonical JSON of (parents, metadata, operations), so
  they differ from the hashes real Nessie would compute for the same history. The "no
  ancestor" hash is the same as Nessie's new storage model: sha256("empty"), where a fresh
  repository's default branch starts (`GET /api/v2/config` reports it as `noAncestorHash`).
- Merges always create a merge commit (parents: target head, source hash) carrying the source's
  changes since the merge base, as Nessie 0.104 does; conflict = a key changed on both sides
  since the merge base to different values (FORCE / DROP per-key modes honoured).
- Not implemented: transplant, reflog, repository config, `/recent-changes`, v1 namespace
  endpoints. Nessie's React UI is replaced by a small read-only server-rendered one on the
  same paths (`ui/`), which reads the store itself, for people signed in at the local
  identity provider as Nessie's UI signs them in through its `ui-app` OIDC tenant
  (`ui/session.py`), each page authorized with their roles. CEL filters are
  full CEL (cel-rust) without Nessie's static type-checker: unknown variables, attributes
  and functions are refused up front, other type errors (`entry.name + 1`) only when an item
  is evaluated, and
  `entry.name == 1` is false (CEL's heterogeneous equality) where Nessie refuses it.
- Every commit stores the full key -> content map (fine for catalogs of thousands of tables,
  not for millions of keys); commit headers are cached in memory.
"""
