"""Reading one JSON object field by field; every refusal names the payload and the field.

The models' `from_dict` use this instead of type hints: under Python 3.9 (the job's
interpreter on EMR) annotations such as `str | None` cannot be evaluated at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Refusing unknown fields would make every new field a breaking change; only a
# version the reader does not know is refused (it may mean anything).
_MISSING = object()


class ContractError(ValueError):
    """A payload does not match its contract; the message names the payload and the field."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Reader:
    """Typed reads of the fields of one JSON object, as `where.field` in every error."""

    def __init__(self, data: Any, where: str, error: type[ContractError] = ContractError):
        if not isinstance(data, Mapping):
            raise error(f"{where} must be a JSON object, got {type(data).__name__}")
        self.data = data
        self.where = where
        self.error = error

    def fail(self, name: str, expected: str) -> ContractError:
        """The error for field `name` (not raised: callers `raise reader.fail(...)`)."""
        value = self.data.get(name, _MISSING)
        got = "nothing (the field is missing)" if value is _MISSING else _show(value)
        return self.error(f"{self.where}: {name!r} must be {expected}, got {got}")

    def string(self, name: str, *, required: bool = True) -> str | None:
        """A non-empty string; None for a missing or null optional field."""
        value = self.data.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(
                name, "a non-empty string" if required else "a non-empty string or null"
            )
        return value

    def text(self, name: str) -> str | None:
        """An optional string that may be empty (human text)."""
        value = self.data.get(name)
        if value is None or isinstance(value, str):
            return value
        raise self.fail(name, "a string or null")

    def integer(
        self, name: str, *, required: bool = True, default: Any = None, minimum: int | None = None
    ) -> Any:
        """An integer (a JSON bool is not one); `default` for a missing or null optional."""
        value = self.data.get(name)
        if value is None and not required:
            return default
        bound = "" if minimum is None else f" >= {minimum}"
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or (minimum is not None and value < minimum)
        ):
            raise self.fail(name, f"an integer{bound}" + ("" if required else " or null"))
        return value

    def flag(self, name: str, *, default: bool | None = False) -> bool | None:
        """A boolean; `default` when missing or null."""
        value = self.data.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(name, "true, false or null")
        return value

    def choice(self, name: str, allowed: tuple[str, ...], *, required: bool = True) -> str | None:
        """One of `allowed`; None for a missing or null optional field."""
        value = self.data.get(name)
        if value is None and not required:
            return None
        if value not in allowed:
            raise self.fail(name, "one of " + ", ".join(allowed))
        return value

    def strings(self, name: str) -> tuple[str, ...]:
        """A list of strings; () when missing or null."""
        return self._list_of(name, str, "a list of strings")

    def objects(self, name: str) -> tuple[Mapping[str, Any], ...]:
        """A list of JSON objects; () when missing or null."""
        return self._list_of(name, Mapping, "a list of JSON objects")

    def _list_of(self, name: str, item_type: type, expected: str) -> tuple[Any, ...]:
        """A list whose every item is an `item_type`; () when missing or null."""
        value = self.data.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, item_type) for v in value):
            raise self.fail(name, expected)
        return tuple(value)

    def mapping(self, name: str) -> Mapping[str, Any] | None:
        """A JSON object, or None when missing or null."""
        value = self.data.get(name)
        if value is None or isinstance(value, Mapping):
            return value
        raise self.fail(name, "a JSON object or null")

    def version(self, name: str, known: tuple[int, ...], *, default: int | None = None) -> int:
        """A contract version this code knows; `default` only when the field is absent
        (payloads written before the field existed)."""
        value = self.data.get(name)
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or value not in known:
            raise self.fail(name, "a known version (" + ", ".join(map(str, known)) + ")")
        return value


def drop_none(values: dict[str, Any]) -> dict[str, Any]:
    """`values` without its null entries (fields a payload leaves out when unknown)."""
    return {key: value for key, value in values.items() if value is not None}
