"""CloudFormation intrinsics resolved against the local stack's resources.

What CloudFormation fills in on deploy (a bucket's generated name, a function's ARN,
the ALB's DNS name, the account) the local stack binds by construct path to what it
created (`Resolver.bind`). Resolving anything else raises `UnresolvedIntrinsic`
naming the function, the resource and where in the template it was used: a local
value is never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from local.aws.template import StackTemplate, TemplateError

_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


class UnresolvedIntrinsic(LookupError):
    """An intrinsic function or reference with no local value."""


@dataclass(frozen=True)
class Physical:
    """What a resource is locally: its `Ref` value and its `Fn::GetAtt` attributes."""

    ref: str | None = None
    attributes: Mapping[str, str] = field(default_factory=dict)


class Resolver:
    """Resolves template values: bind resources by construct path, then `resolve(value, where)`."""

    def __init__(
        self,
        template: StackTemplate,
        *,
        account_id: str,
        region: str,
        partition: str = "aws",
        url_suffix: str = "amazonaws.com",
    ) -> None:
        self.template = template
        self._pseudo = {
            "AWS::AccountId": account_id,
            "AWS::Region": region,
            "AWS::Partition": partition,
            "AWS::URLSuffix": url_suffix,
            "AWS::StackName": template.stack_name,
        }
        self._bound: dict[str, Physical] = {}

    def bind(self, path: str, ref: str | None = None, **attributes: str) -> str:
        """Give the resource at construct path `path` its local values; returns its logical id."""
        logical_id = self.template.logical_id(path)
        self._bound[logical_id] = Physical(ref, dict(attributes))
        return logical_id

    def resolve(self, value: Any, where: str) -> Any:
        """`value` with every intrinsic replaced; raises UnresolvedIntrinsic naming `where`."""
        if isinstance(value, list):
            return [self.resolve(item, where) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((name, argument),) = value.items()
            if name == "Ref":
                return self._ref(argument, where)
            if name.startswith("Fn::"):
                return self._function(name, argument, where)
        return {key: self.resolve(item, where) for key, item in value.items()}

    def resolve_text(self, value: Any, where: str) -> str:
        resolved = self.resolve(value, where)
        if not isinstance(resolved, str):
            raise UnresolvedIntrinsic(f"{where}: expected a string, resolved to {resolved!r}")
        return resolved

    # ---- the intrinsics ----------------------------------------------------------------

    def _function(self, name: str, argument: Any, where: str) -> Any:
        if name == "Fn::GetAtt":
            logical_id, attribute = (
                argument.split(".", 1) if isinstance(argument, str) else argument
            )
            return self._get_att(logical_id, self.resolve(attribute, where), where)
        if name == "Fn::Join":
            separator, items = argument
            parts = self.resolve(items, where)
            return separator.join(self._text(part, name, where) for part in parts)
        if name == "Fn::Sub":
            text, variables = (argument, {}) if isinstance(argument, str) else argument
            return self._sub(text, {k: self.resolve(v, where) for k, v in variables.items()}, where)
        if name == "Fn::Select":
            index, items = argument
            items = self.resolve(items, where)
            position = int(self.resolve(index, where))
            if not isinstance(items, list) or not 0 <= position < len(items):
                raise UnresolvedIntrinsic(f"{where}: Fn::Select {position} of {items!r}")
            return items[position]
        if name == "Fn::Split":
            separator, source = argument
            return self._text(self.resolve(source, where), name, where).split(separator)
        raise UnresolvedIntrinsic(
            f"{where}: {name} is not supported by the local stack ({name}: {argument!r})"
        )

    def _ref(self, target: str, where: str) -> str:
        if target in self._pseudo:
            return self._pseudo[target]
        physical = self._physical(target, f"Ref {target}", where)
        if physical.ref is None:
            raise UnresolvedIntrinsic(
                f"{where}: Ref {target} ({self._describe(target)}) has no local value"
            )
        return physical.ref

    def _get_att(self, logical_id: str, attribute: str, where: str) -> str:
        physical = self._physical(logical_id, f"Fn::GetAtt {logical_id}.{attribute}", where)
        if attribute not in physical.attributes:
            raise UnresolvedIntrinsic(
                f"{where}: Fn::GetAtt {logical_id}.{attribute} ({self._describe(logical_id)}) "
                f"has no local value (bound: {sorted(physical.attributes)})"
            )
        return physical.attributes[attribute]

    def _physical(self, logical_id: str, intrinsic: str, where: str) -> Physical:
        if logical_id not in self._bound:
            raise UnresolvedIntrinsic(
                f"{where}: {intrinsic} ({self._describe(logical_id)}) has no local value: "
                "the local stack creates no such resource"
            )
        return self._bound[logical_id]

    def _describe(self, logical_id: str) -> str:
        if logical_id in self.template.body.get("Parameters", {}):
            return "a template parameter"
        if logical_id not in self.template.resources:
            return "not in the template"
        resource = self.template.resources[logical_id]
        try:
            path = self.template.path(logical_id)
        except TemplateError:
            path = "?"
        return f"{resource['Type']} at {path}"

    def _sub(self, text: str, variables: Mapping[str, Any], where: str) -> str:
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):  # ${!Literal} stands for the text ${Literal}
                return "${" + name[1:] + "}"
            if name in variables:
                return self._text(variables[name], "Fn::Sub", where)
            if name in self._pseudo:
                return self._pseudo[name]
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return self._get_att(logical_id, attribute, where)
            return self._ref(name, where)

        return _SUB_VARIABLE.sub(replace, text)

    @staticmethod
    def _text(value: Any, intrinsic: str, where: str) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise UnresolvedIntrinsic(f"{where}: {intrinsic} of a non-string {value!r}")
        return str(value)


def substitute_definition(
    definition: str, substitutions: Mapping[str, str], where: str = "DefinitionString"
) -> str:
    """Step Functions' `DefinitionSubstitutions`: each `${Name}` replaced; unknown ones raise."""
    names = set(_PLACEHOLDER.findall(definition))
    missing = sorted(names - set(substitutions))
    if missing:
        raise UnresolvedIntrinsic(f"{where}: no value for substitutions {missing}")
    return _PLACEHOLDER.sub(lambda m: str(substitutions[m.group(1)]), definition)
