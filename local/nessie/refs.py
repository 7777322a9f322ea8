"""Reference names, reference specs (`name`, `name@hash`, `@hash`, `-`, `~N`/`^N`/`*T`) and
content-key path strings, parsed the way Nessie's `Validation`, `ParsedReference` and
`Util.fromPathString` do."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from contracts.naming import NESSIE_REF_NAME_PATTERN, NESSIE_REF_NAME_RULE, is_ref_name

from .exceptions import BadRequestError

# Nessie's Validation.REF_NAME_REGEX and its message.
REF_NAME_MESSAGE = NESSIE_REF_NAME_RULE
HASH_RE = re.compile(r"^[0-9a-fA-F]{8,64}$")
_REL = (
    r"(?P<rel>(?:[~*^](?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.][0-9]{1,9})?Z"
    r"|[0-9]+))*)"
)
_REF_SPEC_RE = re.compile(
    r"^(?P<name>" + NESSIE_REF_NAME_PATTERN + "|-)?"
    r"(?P<at>@(?P<hash>[0-9a-fA-F]{8,64})?)?" + _REL + "$"
)
_HASH_SPEC_RE = re.compile(r"^(?P<hash>[0-9a-fA-F]{8,64})?" + _REL + "$")
# Nessie's Validation.HASH_OR_RELATIVE_COMMIT_SPEC_MESSAGE.
HASH_SPEC_MESSAGE = (
    "Hash with optional relative part must consist of either a valid commit hash (which in "
    "turn must consist of the hex representation of 4-32 bytes), or a valid relative part "
    "(which must be either '~' + a number representing the n-th predecessor of a commit, "
    "'^' + a number representing the n-th parent within a commit, or '*' + a number "
    "representing the created timestamp of a commit, in milliseconds since epoch or in "
    "ISO-8601 format), or both."
)
_REL_RE = re.compile(
    r"([~*^])([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.][0-9]{1,9})?Z|[0-9]+)"
)
MAX_KEY_ELEMENTS = 20
MAX_KEY_LENGTH = 500


@dataclass(frozen=True)
class RefSpec:
    """A parsed reference spec; `name` None means detached, "-" is resolved by the store."""

    name: str | None
    hash: str | None = None
    relative: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def validate_ref_name(name: str) -> str:
    """Return `name` if it is a valid Nessie reference name, else raise BAD_REQUEST."""
    if not is_ref_name(name):
        raise BadRequestError(f"{REF_NAME_MESSAGE} - but was: {name}")
    return name


def validate_hash(hash_: str, what: str = "hash") -> str:
    """Return a lower-cased hash (8..64 hex chars), else raise BAD_REQUEST."""
    if not isinstance(hash_, str) or not HASH_RE.match(hash_):
        raise BadRequestError(f"Invalid {what} '{hash_}': must be 8 to 64 hex characters")
    return hash_.lower()


def parse_ref_spec(spec: str) -> RefSpec:
    """Parse a v2 path reference: `name`, `name@hash`, `@hash`, `-`, trailing `@`, `~N` etc."""
    if not spec:
        raise BadRequestError("An empty reference parameter is not valid")
    m = _REF_SPEC_RE.match(spec)
    if m is None:
        raise BadRequestError(f"{REF_NAME_MESSAGE} - but was: {spec}")
    name = m.group("name")
    hash_ = m.group("hash")
    relative = tuple((op, arg) for op, arg in _REL_RE.findall(m.group("rel") or ""))
    # `@~1` is DETACHED without a starting commit: the operation decides how to refuse it.
    if name is None and hash_ is None and not relative:
        raise BadRequestError(f"Illegal reference specification '{spec}': no name and no hash")
    return RefSpec(name=name, hash=hash_.lower() if hash_ else None, relative=relative)


def parse_hash_spec(text: str | None, name: str | None = None) -> RefSpec:
    """A body's hash with optional relative part (`hash`, `hash~1`, `~1`...) on ref `name`.

    None or "" means no hash was sent; `require_unambiguous` decides whether that is allowed.
    """
    if not text:
        return RefSpec(name)
    m = _HASH_SPEC_RE.match(text) if isinstance(text, str) else None
    if m is None:
        raise BadRequestError(f"{HASH_SPEC_MESSAGE} - but was: {text}")
    hash_ = m.group("hash")
    relative = tuple((op, arg) for op, arg in _REL_RE.findall(m.group("rel") or ""))
    return RefSpec(name, hash_.lower() if hash_ else None, relative)


def require_unambiguous(spec: RefSpec, what: str) -> RefSpec:
    """Nessie's `HashValidator.hashMustBeUnambiguous`: writes need a starting commit ID, so the
    commit they act on cannot move while the request is in flight."""
    if spec.hash is None:
        if not spec.relative:
            raise BadRequestError(f"{what} must be provided.")
        raise BadRequestError(f"{what} must contain a starting commit ID.")
    return spec


def key_from_path_string(encoded: str) -> list[str]:
    """Nessie's `Util.fromPathString`: '.'-separated, GS/NUL for dots, '.'-prefixed escapes."""
    elements: list[str] = []
    buf: list[str] = []
    escaped = False
    i = 0
    n = len(encoded)
    while i < n:
        c = encoded[i]
        if c == ".":
            if not escaped:
                if not buf:
                    escaped = True
                else:
                    elements.append("".join(buf))
                    buf = []
            else:
                i += 1
                nxt = encoded[i] if i < n else ""
                replacement = {"_": ".", "{": "/", "}": "\\", "[": "%"}.get(nxt)
                if replacement is not None:
                    buf.append(replacement)
                elif nxt == ".":
                    elements.append("".join(buf))
                    buf = []
                else:
                    i -= 1
                    elements.append("".join(buf))
                    buf = []
        elif c in ("\u001d", "\u0000"):
            buf.append(".")
        else:
            buf.append(c)
        i += 1
    if buf:
        elements.append("".join(buf))
    return validate_key(elements)


def key_to_path_string(elements: list[str] | tuple[str, ...]) -> str:
    """Nessie's `Util.toPathString` (dots inside elements become the group separator)."""
    return ".".join(e.replace(".", "\u001d").replace("\u0000", "\u001d") for e in elements)


def key_to_string(elements: list[str] | tuple[str, ...]) -> str:
    """How Nessie prints a key in messages (`ContentKey.toString()`)."""
    return ".".join(elements)


def validate_key(elements: object) -> list[str]:
    """Content-key rules: 1..20 non-empty elements, no control characters, bounded length."""
    if (
        not isinstance(elements, list)
        or not elements
        or not all(isinstance(e, str) for e in elements)
    ):
        raise BadRequestError("Content key must have at least one element")
    if len(elements) > MAX_KEY_ELEMENTS or sum(len(e) for e in elements) > MAX_KEY_LENGTH:
        raise BadRequestError(
            f"Content key too long: at most {MAX_KEY_ELEMENTS} elements and "
            f"{MAX_KEY_LENGTH} characters"
        )
    for e in elements:
        if not e:
            raise BadRequestError("An object key must not contain an empty element.")
        if any(ord(ch) < 0x20 for ch in e):
            raise BadRequestError("Content key elements must not contain control characters")
    return list(elements)
