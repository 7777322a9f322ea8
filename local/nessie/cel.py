"""A small, safe evaluator for the subset of CEL that Nessie clients send as `filter`.

Supported: string/int/bool literals, lists, member access (`entry.contentType`), `size(x)`,
`x.startsWith(s)` / `endsWith` / `contains` / `matches`, `==`, `!=`, `<`, `<=`, `>`, `>=`,
`in`, `!`, `&&`, `||`, parentheses. Anything else is a BAD_REQUEST, never evaluated as code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .exceptions import BadRequestError
from .refs import key_to_path_string, key_to_string

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<num>\d+)
  | (?P<op>&&|\|\||==|!=|<=|>=|[<>!().,\[\]])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
""",
    re.VERBOSE,
)
MAX_FILTER_LENGTH = 4096


def _tokenize(text: str) -> list[tuple[str, str]]:
    pos = 0
    out: list[tuple[str, str]] = []
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise BadRequestError(f"Invalid filter expression at position {pos}: {text!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append((kind, m.group()))
    out.append(("end", ""))
    return out


def _unquote(token: str) -> str:
    body = token[1:-1]
    return re.sub(r"\\(.)", lambda m: m.group(1), body)


Node = Callable[[dict[str, Any]], Any]


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i]

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.tokens[self.i]
        if value is not None and tok[1] != value:
            raise BadRequestError(
                f"Invalid filter expression: expected '{value}', got '{tok[1] or 'end'}'"
            )
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.or_()
        if self.peek()[0] != "end":
            raise BadRequestError(f"Invalid filter expression near '{self.peek()[1]}'")
        return node

    def or_(self) -> Node:
        left = self.and_()
        while self.peek()[1] == "||":
            self.take()
            right = self.and_()
            left = (lambda a, b: lambda env: bool(a(env)) or bool(b(env)))(left, right)
        return left

    def and_(self) -> Node:
        left = self.cmp()
        while self.peek()[1] == "&&":
            self.take()
            right = self.cmp()
            left = (lambda a, b: lambda env: bool(a(env)) and bool(b(env)))(left, right)
        return left

    def cmp(self) -> Node:
        left = self.unary()
        ops: dict[str, Callable[[Any, Any], bool]] = {
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
            "in": lambda a, b: a in b,
        }
        tok = self.peek()[1]
        if tok in ops:
            self.take()
            right = self.unary()
            fn = ops[tok]

            def compare(env: dict[str, Any], a: Node = left, b: Node = right) -> bool:
                try:
                    return fn(a(env), b(env))
                except TypeError as exc:
                    raise BadRequestError(f"Invalid filter expression: {exc}") from exc

            return compare
        return left

    def unary(self) -> Node:
        if self.peek()[1] == "!":
            self.take()
            inner = self.unary()
            return lambda env: not inner(env)
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while self.peek()[1] == ".":
            self.take()
            name = self.take()[1]
            if self.peek()[1] == "(":
                self.take("(")
                arg = self.or_()
                self.take(")")
                node = self._method(node, name, arg)
            else:
                node = (lambda base, attr: lambda env: _member(base(env), attr))(node, name)
        return node

    @staticmethod
    def _method(target: Node, name: str, arg: Node) -> Node:
        methods: dict[str, Callable[[str, str], bool]] = {
            "startsWith": str.startswith,
            "endsWith": str.endswith,
            "contains": lambda s, x: x in s,
            "matches": lambda s, x: re.search(x, s) is not None,
        }
        if name not in methods:
            raise BadRequestError(f"Unsupported filter function '{name}'")
        fn = methods[name]

        def call(env: dict[str, Any]) -> bool:
            value, other = target(env), arg(env)
            if not isinstance(value, str) or not isinstance(other, str):
                raise BadRequestError(f"Filter function '{name}' needs strings")
            return fn(value, other)

        return call

    def primary(self) -> Node:
        kind, value = self.take()
        if kind == "str":
            text = _unquote(value)
            return lambda env: text
        if kind == "num":
            number = int(value)
            return lambda env: number
        if value == "(":
            node = self.or_()
            self.take(")")
            return node
        if value == "[":
            items: list[Node] = []
            while self.peek()[1] != "]":
                items.append(self.or_())
                if self.peek()[1] == ",":
                    self.take()
            self.take("]")
            return lambda env: [item(env) for item in items]
        if kind == "ident":
            if value in ("true", "false"):
                flag = value == "true"
                return lambda env: flag
            if value == "size" and self.peek()[1] == "(":
                self.take("(")
                arg = self.or_()
                self.take(")")
                return lambda env: len(arg(env))
            name = value

            def variable(env: dict[str, Any]) -> Any:
                if name not in env:
                    raise BadRequestError(f"Unknown filter variable '{name}'")
                return env[name]

            return variable
        raise BadRequestError(f"Invalid filter expression near '{value or 'end'}'")


def _member(value: Any, attr: str) -> Any:
    if isinstance(value, dict):
        if attr not in value:
            raise BadRequestError(f"Unknown filter attribute '{attr}'")
        return value[attr]
    raise BadRequestError(f"Cannot read '{attr}' in filter expression")


def compile_filter(text: str) -> Node:
    """Compile a filter expression once; call the result with the variables per item."""
    if len(text) > MAX_FILTER_LENGTH:
        raise BadRequestError("Filter expression too long")
    try:
        node = _Parser(text).parse()
    except RecursionError:
        raise BadRequestError("Invalid filter expression: nested too deeply") from None

    def evaluate(env: dict[str, Any]) -> Any:
        try:
            return node(env)
        except (TypeError, ValueError, re.error, RecursionError) as exc:
            raise BadRequestError(f"Invalid filter expression: {exc}") from None

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
