"""SnapStart for the functions behind the API (the ``SnapStart`` parameter): template.yaml's generated parts.

With ``SnapStart=on`` every tool's function and MCP's get ``SnapStart: {ApplyOn: PublishedVersions}``, a
published version (``<Stem>SnapStartVersion``) and an alias ``live`` on it (``<Stem>LiveAlias``), and both APIs
and API Gateway's permissions name the alias: SnapStart applies to published versions only. With ``off``
(the default) none of this exists: the versions and aliases carry the condition ``SnapStartOn``
(``ExperimentalSnapStart`` for the experimental tools'), the property is ``AWS::NoValue``, and the routes and
permissions name the function itself, as before the parameter existed.

Why not SAM's ``AutoPublishAlias``: SAM takes no condition there (a plain string or a ``Ref`` to a parameter,
never empty), so the alias and a version per deploy would exist with SnapStart off too; SAM keeps each version
it replaces (DeletionPolicy Retain), and a SnapStart version is billed for its cached snapshot while it exists;
and SAM publishes a new version only when the function's properties change as written, not when a parameter
they read changes value (aws/serverless-application-model#3820), so the API would keep running a version with
the old settings.

A version is immutable, so a change of what the function runs must publish a new one. CloudFormation
replaces an ``AWS::Lambda::Version`` when its description changes, and the description is a fingerprint of
what the function's configuration is made of (:func:`fingerprint`):

- a digest of the template's text for it: ``Globals.Function``, the function's own properties (not its
  ``Policies``, which its role holds), and the properties and conditions of every resource, condition and
  mapping they reach, transitively (a queue's URL, the collection's name and so its endpoint, the layer);
- the version number of each layer it runs (the layer holds the code: the functions' own folders are
  one-line entries, whose text is not followed), which SAM's LayerVersion changes whenever the layer's
  content does;
- the value of each parameter those reach whose values are bounded (``AllowedValues``, a ``MaxLength``, or a
  ``Number``): LogLevel, Tracing, Stage, OpenSearchStandbyReplicas (the collection's name),
  ExtractionStrategies, ExtractionEveryTurns...

The free-form parameters they reach (an ARN list, a model id, an endpoint: unbounded lengths) cannot enter a
256-character description: :attr:`Fingerprint.untracked` names them, docs/deploy.md ("SnapStart") says what to
do after changing one.

The function carries the same fingerprint in a variable of its own (``SNAPSTART_SNAPSHOT``, only with
SnapStart on), so a new fingerprint is always a new configuration: Lambda publishes a new version rather
than answering with the last one (it publishes none when nothing changed), and CloudFormation deletes the
replaced version after the alias moved, never the one the alias is on. Superseded versions are gone after
each deploy, and with them their cached snapshots (billed per version while it exists).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mnemo.tools.registry import Tool
from mnemo_codegen.template_names import EXPERIMENTAL_CONDITION, condition_of, function_id, resource

#: The parameter's condition, and the condition of the versions and aliases of functions under another one.
CONDITION = "SnapStartOn"
CONDITIONS: dict[str | None, str] = {None: CONDITION, EXPERIMENTAL_CONDITION: "ExperimentalSnapStart"}
#: The alias the APIs invoke.
ALIAS = "live"
#: Hand-written functions behind the API that get SnapStart too, each with the generated block that holds its
#: fingerprint variable: MCP serves every tool, so its cold start imports the most. (The console serves static
#: files; the Bedrock action groups answer agents, not the API.)
HAND_WRITTEN = {"McpFunction": "mcp-snapshot"}
#: The variable that carries the fingerprint in the function's configuration.
MARKER = "SNAPSTART_SNAPSHOT"
#: Lambda's limit on a version's description (and the fingerprint's worst case must fit it).
MAX_DESCRIPTION = 256
#: The length taken for a Number parameter without AllowedValues or MaxValue.
NUMBER_WIDTH = 12
#: Function properties that are not part of a published version: the role's policies, and what SnapStart adds.
_NOT_CONFIGURATION = ("Policies", "SnapStart")
_SUB_NAME = re.compile(r"\$\{(?!!)([A-Za-z0-9:_.]+)\}")
PROPERTY = "SnapStart: !If [SnapStartOn, {ApplyOn: PublishedVersions}, !Ref AWS::NoValue]"


class FingerprintTooLong(ValueError):
    """The fingerprint's worst case would not fit a version's description."""


def stem(logical_id: str) -> str:
    """MemoryAddFunction -> MemoryAdd."""
    return logical_id.removesuffix("Function")


def alias_id(logical_id: str) -> str:
    """The logical id of a function's alias ``live``."""
    return f"{stem(logical_id)}LiveAlias"


def version_id(logical_id: str) -> str:
    """The logical id of a function's published version."""
    return f"{stem(logical_id)}SnapStartVersion"


def snapstart_functions(tools: Sequence[Tool]) -> dict[str, str | None]:
    """Logical id -> condition of each function that gets SnapStart: every tool's, then MCP's."""
    found: dict[str, str | None] = {function_id(tool): condition_of(tool.family) for tool in tools}
    found.update(dict.fromkeys(HAND_WRITTEN))
    return found


# ---------------------------------------------------------------- invocation ---
def _invocations(target: str) -> str:
    return f"!Sub arn:${{AWS::Partition}}:apigateway:${{AWS::Region}}:lambda:path/2015-03-31/functions/${{{target}}}/invocations"


def integration_uri(logical_id: str) -> list[str]:
    """An API body's ``uri`` for a function: its alias with SnapStart, the function itself without."""
    return [
        "uri: !If",
        f"  - {CONDITION}",
        f"  - {_invocations(alias_id(logical_id))}",
        f"  - {_invocations(logical_id + '.Arn')}",
    ]


def permission_target(logical_id: str) -> str:
    """A permission's ``FunctionName``: what the API invokes (the alias's own policy with SnapStart)."""
    return f"!If [{CONDITION}, !Ref {alias_id(logical_id)}, !Ref {logical_id}]"


# --------------------------------------------------------------- fingerprint ---
@dataclass(frozen=True)
class Fingerprint:
    """What a function's published version is made of, as the version's description says it."""

    function: str
    #: The template's text for the function and all it reaches (sha256, 12 hex digits).
    digest: str
    #: The layers it runs (logical ids), each named in the description by its version number.
    layers: tuple[str, ...]
    #: The bounded parameters it reads, in the description's order (their values, by name).
    parameters: tuple[str, ...]
    #: The free-form parameters it reads, which the description cannot hold.
    untracked: tuple[str, ...]

    def text(self) -> str:
        """The description's text, for ``!Sub``: the digest, each layer's version, each parameter's value (in
        the order of :attr:`parameters`, the names sorted)."""
        words = ["mnemo", self.digest, *(f"layer ${{{layer}Version}}" for layer in self.layers)]
        return " ".join(words + [f"${{{name}}}" for name in self.parameters])

    def sub(self) -> list[str]:
        """``!Sub`` of the description: its text, and the layer versions it names (from each layer's ARN)."""
        if not self.layers:
            return [f'!Sub "{self.text()}"']
        return [
            "!Sub",
            f'  - "{self.text()}"',
            *(
                f'  {"- " if n == 0 else "  "}{layer}Version: !Select [7, !Split [":", !Ref {layer}]]'
                for n, layer in enumerate(self.layers)
            ),
        ]


def _names(node: Any) -> tuple[set[str], set[str]]:
    """The names ``node`` refers to (Ref, GetAtt, Sub) and the conditions it evaluates (If, Condition)."""
    names: set[str] = set()
    conditions: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        if len(item) == 1:
            ((key, value),) = item.items()
            if key == "Ref" and isinstance(value, str):
                names.add(value)
                continue
            if key == "GetAtt":
                names.add((value if isinstance(value, str) else value[0]).split(".", 1)[0])
                continue
            if key == "Sub":
                text, local = (value, {}) if isinstance(value, str) else (value[0], value[1])
                names.update(m.split(".", 1)[0] for m in _SUB_NAME.findall(text) if m.split(".", 1)[0] not in local)
                stack.append(local)
                continue
            if key == "If":
                conditions.add(value[0])
                stack.extend(value[1:])
                continue
            if key == "Condition" and isinstance(value, str):
                conditions.add(value)
                continue
            if key == "FindInMap" and isinstance(value, list) and isinstance(value[0], str):
                names.add(f"Mapping:{value[0]}")
                stack.extend(value[1:])
                continue
        stack.extend(item.values())
    return names, conditions


def _configuration(logical_id: str, resource_: Mapping[str, Any]) -> dict[str, Any]:
    """A resource as its published version sees it: a function without its policies, SnapStart or marker."""
    properties = dict(resource_.get("Properties") or {})
    if resource_.get("Type") == "AWS::Serverless::Function":
        for key in _NOT_CONFIGURATION:
            properties.pop(key, None)
        variables = dict((properties.get("Environment") or {}).get("Variables") or {})
        if MARKER in variables:
            del variables[MARKER]
            if variables:
                properties["Environment"] = {**properties["Environment"], "Variables": variables}
            else:
                environment = {k: v for k, v in properties["Environment"].items() if k != "Variables"}
                if environment:
                    properties["Environment"] = environment
                else:
                    del properties["Environment"]
    return {"Type": resource_.get("Type"), "Condition": resource_.get("Condition"), "Properties": properties}


def _width(spec: Mapping[str, Any]) -> int:
    """The most characters a bounded parameter's value takes."""
    if spec.get("AllowedValues"):
        return max(len(str(value)) for value in spec["AllowedValues"])
    if "MaxLength" in spec:
        return int(spec["MaxLength"])
    if "MaxValue" in spec:
        return len(str(spec["MaxValue"]))
    return NUMBER_WIDTH


def _bounded(spec: Mapping[str, Any]) -> bool:
    """Whether a parameter's values have a known longest: AllowedValues, a MaxLength, or a Number."""
    return bool(spec.get("AllowedValues")) or "MaxLength" in spec or spec.get("Type") == "Number"


def fingerprint(template: Mapping[str, Any], logical_id: str) -> Fingerprint:
    """The fingerprint of a function of ``template`` (as
    :func:`mnemo_codegen.cloudformation_yaml.load_template` reads it)."""
    resources = template.get("Resources", {})
    parameters = template.get("Parameters", {})
    conditions = template.get("Conditions", {})
    mappings = template.get("Mappings", {})
    shared = dict((template.get("Globals") or {}).get("Function") or {})
    own = _configuration(logical_id, resources[logical_id])
    hashed: dict[str, Any] = {"Globals.Function": shared, logical_id: own}
    found_parameters: set[str] = set()
    pending = [shared, own]
    seen: set[str] = {logical_id}
    while pending:
        names, evaluated = _names(pending.pop())
        for name in sorted(names | {f"Condition:{c}" for c in evaluated}):
            if name in seen:
                continue
            seen.add(name)
            if name.startswith("Mapping:"):
                hashed[name] = mappings[name.removeprefix("Mapping:")]
            elif name.startswith("Condition:"):
                expression = conditions[name.removeprefix("Condition:")]
                hashed[name] = expression
                pending.append(expression)
            elif name in parameters:
                found_parameters.add(name)
            elif name in resources:
                hashed[name] = _configuration(name, resources[name])
                pending.append(hashed[name])
    layers = tuple(
        layer["Ref"]
        for layer in (own["Properties"].get("Layers") or shared.get("Layers") or [])
        if isinstance(layer, dict) and "Ref" in layer
    )
    digest = hashlib.sha256(json.dumps(hashed, sort_keys=True, default=str).encode()).hexdigest()[:12]
    tracked = tuple(sorted(name for name in found_parameters if _bounded(parameters[name])))
    printed = Fingerprint(
        function=logical_id,
        digest=digest,
        layers=layers,
        parameters=tracked,
        untracked=tuple(sorted(found_parameters - set(tracked))),
    )
    worst = (
        len(printed.text())
        - sum(len(f"${{{name}}}") - _width(parameters[name]) for name in tracked)
        - sum(len(f"${{{layer}Version}}") - 6 for layer in layers)  # a layer's version: up to 6 digits
    )
    if worst > MAX_DESCRIPTION:
        raise FingerprintTooLong(f"{logical_id}: its fingerprint may take {worst} characters (> {MAX_DESCRIPTION})")
    return printed


# ------------------------------------------------------------------ blocks ---
def marker(printed: Fingerprint) -> list[str]:
    """The function's variable that carries its fingerprint, with SnapStart only."""
    sub = printed.sub()
    return [
        f"{MARKER}: !If",
        f"  - {CONDITION}",
        f"  - {sub[0]}",
        *("  " + line for line in sub[1:]),
        "  - !Ref AWS::NoValue",
    ]


def versions(functions: Mapping[str, str | None], prints: Mapping[str, Fingerprint]) -> list[str]:
    """Each function's published version and its alias ``live`` (with SnapStart only)."""
    lines: list[str] = []
    for logical_id, condition in functions.items():
        snapstart = CONDITIONS[condition]
        sub = prints[logical_id].sub()
        lines += resource(version_id(logical_id), "AWS::Lambda::Version", snapstart)
        lines += [
            "  Properties:",
            f"    FunctionName: !Ref {logical_id}",
            f"    Description: {sub[0]}",
            *("    " + line for line in sub[1:]),
            "",
        ]
        lines += resource(alias_id(logical_id), "AWS::Lambda::Alias", snapstart)
        lines += [
            "  Properties:",
            f"    Name: {ALIAS}",
            f"    FunctionName: !Ref {logical_id}",
            f"    FunctionVersion: !GetAtt {version_id(logical_id)}.Version",
            "",
        ]
    return lines[:-1]
