"""Nessie `filter` expressions, evaluated by a maintained CEL implementation.

Parsing and evaluation are done by `common-expression-language` (Python bindings of cel-rust):
the whole CEL language (macros such as `exists`/`all`/`has`, ternaries, string and list `+`,
arithmetic, conversions, ...), never Python code. This module adds what Nessie adds around
CEL: the variables each endpoint declares, a maximum length, and the refusals a type-checking
server makes before evaluating anything (unknown variable, unknown attribute of a declared
variable, unknown function). Every refusal, and any error while evaluating an item, is a
BadRequestError (HTTP 400 BAD_REQUEST).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import cel as _cel

from .exceptions import BadRequestError
from .refs import key_to_path_string, key_to_string

MAX_FILTER_LENGTH = 4096

# The fields of the variables Nessie declares (see org.projectnessie.services.cel.CELUtil and
# https://projectnessie.org/develop/cel-filters/). A variable mapped to None is declared, but
# its attributes are only checked when an item is evaluated.
ENTRY_FIELDS = frozenset(
    {"key", "encodedKey", "keyElements", "name", "namespace", "namespaceElements", "contentType"}
)
COMMIT_FIELDS = frozenset(
    {
        "hash",
        "committer",
        "author",
        "authors",
        "signedOffBy",
        "allSignedOffBy",
        "message",
        "commitTime",
        "authorTime",
        "properties",
        "allProperties",
        "parentCommitHashes",
    }
)

Declarations = Mapping[str, frozenset[str] | None]
ENTRIES_DECLARATIONS: Declarations = {"entry": ENTRY_FIELDS}
REFERENCES_DECLARATIONS: Declarations = {
    "ref": None,
    "refType": None,
    "refMeta": None,
    "metadata": None,
    "commit": COMMIT_FIELDS,
}
COMMIT_LOG_DECLARATIONS: Declarations = {"commit": COMMIT_FIELDS, "operations": None}

# CEL's standard functions (operators are checked separately); anything else is refused.
_FUNCTIONS = frozenset(
    {
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "bool",
        "dyn",
        "type",
        "timestamp",
        "duration",
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
    }
)
# How cel-rust names operators in Program.functions().
_OPERATORS = frozenset(
    {
        *(
            f"_{op}_"
            for op in ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]
        ),
        "_?_:_",
        "_[_]",
        "_[?_]",
        "_?._",
        "!_",
        "-_",
        "@in",
        "@not_strictly_false",
    }
)
_STRING_RE = re.compile(
    r"""[rRbB]{0,2}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
)
_MACRO_VAR_RE = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
_SELECT_RE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\.\s*([A-Za-z_]\w*)(?!\s*\()")

Predicate = Callable[[dict[str, Any]], bool]


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())[:300]


def _check(program: Any, text: str, declared: Declarations) -> None:
    """What a CEL type-checker with Nessie's declarations refuses before evaluating."""
    code = _STRING_RE.sub("''", text)
    bound = set(_MACRO_VAR_RE.findall(code))
    for name in program.variables():
        if name not in declared and name not in bound:
            raise BadRequestError(f"Unknown filter variable '{name}'")
    for fn in program.functions():
        if fn not in _OPERATORS and fn not in _FUNCTIONS:
            raise BadRequestError(f"Invalid filter expression: unknown function '{fn}'")
    for name, attr in _SELECT_RE.findall(code):
        fields = declared.get(name)
        if fields is not None and name not in bound and attr not in fields:
            raise BadRequestError(f"Unknown filter attribute '{attr}'")


def compile_filter(text: str, declared: Declarations = ENTRIES_DECLARATIONS) -> Predicate:
    """Compile and check a filter once; call the result with the variables of each item."""
    if len(text) > MAX_FILTER_LENGTH:
        raise BadRequestError("Filter expression too long")
    try:
        program = _cel.compile(text)
    except Exception as exc:
        raise BadRequestError(f"Invalid filter expression: {_message(exc)}") from None
    _check(program, text, declared)

    def evaluate(env: dict[str, Any]) -> bool:
        try:
            result = program.execute(env)
        except KeyError as exc:
            attr = exc.args[0] if exc.args else ""
            raise BadRequestError(f"Unknown filter attribute '{attr}'") from None
        except Exception as exc:
            raise BadRequestError(f"Invalid filter expression: {_message(exc)}") from None
        if not isinstance(result, bool):
            raise BadRequestError(
                f"Invalid filter expression: must evaluate to a bool, not {type(result).__name__}"
            )
        return result

    return evaluate


def entry_variables(key: tuple[str, ...], content: dict[str, Any]) -> dict[str, Any]:
    """The `entry` variable Nessie declares for entries filters (see CELUtil)."""
    ns = list(key[:-1])
    return {
        "entry": {
            "key": key_to_string(key),
            "encodedKey": key_to_path_string(key),
            "keyElements": list(key),
            "name": key[-1],
            "namespace": key_to_string(ns),
            "namespaceElements": ns,
            "contentType": content.get("type"),
        }
    }


def _timestamp(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return value
    return value


def commit_variables(meta: dict[str, Any]) -> dict[str, Any]:
    """A `commit` variable with every CommitMeta field, as Nessie's Jackson registry exposes."""
    authors = list(meta.get("authors") or [])
    signed = list(meta.get("allSignedOffBy") or [])
    props = dict(meta.get("allProperties") or {})
    return {
        "hash": meta.get("hash") or "",
        "committer": meta.get("committer") or "",
        "author": authors[0] if authors else "",
        "authors": authors,
        "signedOffBy": signed[0] if signed else "",
        "allSignedOffBy": signed,
        "message": meta.get("message") or "",
        "commitTime": _timestamp(meta.get("commitTime")),
        "authorTime": _timestamp(meta.get("authorTime")),
        "properties": {k: v[0] for k, v in props.items() if v},
        "allProperties": props,
        "parentCommitHashes": list(meta.get("parentCommitHashes") or []),
    }
