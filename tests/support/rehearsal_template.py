"""What CloudFormation would deploy, as the rehearsal needs it: functions, roles and settings.

The SAM transform (tests/infra/sam_transform.py, run in the SAM virtual environment)
turns template.yaml into plain CloudFormation: each function with the Globals merged in,
and the IAM role SAM generates for it from its ``Policies``. ``Resolver`` then resolves
the intrinsics (Ref, Fn::Sub, Fn::GetAtt, Fn::If with the template's conditions,
Fn::FindInMap, Fn::Join, Fn::Select, Fn::Split) to the rehearsal's stand-ins: the
table, bucket and queues on moto, the collection endpoint on osmem-server.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rehearsal_build import REGION, ROOT, SAM_VENV

ACCOUNT = "123456789012"  # moto's default account
NO_VALUE = object()
#: Intrinsic functions as mnemo_codegen.cloudformation_yaml reads their short tags (!If, !Sub...).
_SHORT_FORMS = frozenset({"GetAtt", "Sub", "If", "FindInMap", "Join", "Select", "Split", "Equals", "Not", "And", "Or"})

_TRANSLATE = """
import json, logging, sys
sys.path.insert(0, sys.argv[1])
logging.getLogger("samtranslator").setLevel(logging.ERROR)
from sam_transform import translate
print(json.dumps(translate(sys.argv[2], json.loads(sys.argv[3]))))
"""


def transformed_template(parameters: Mapping[str, str]) -> dict[str, Any]:
    """template.yaml after the SAM transform, with these parameter overrides."""
    done = subprocess.run(
        [
            str(SAM_VENV / "bin" / "python"),
            "-c",
            _TRANSLATE,
            str(ROOT / "tests" / "infra"),
            REGION,
            json.dumps(dict(parameters)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"AWS_DEFAULT_REGION": REGION, "PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the SAM transform failed:\n{done.stderr[-4000:]}")
    translated: dict[str, Any] = json.loads(done.stdout)
    return translated


class Resolver:
    """Resolves CloudFormation intrinsics against parameter values and stand-in resource values."""

    def __init__(
        self,
        template: Mapping[str, Any],
        parameters: Mapping[str, str],
        refs: Mapping[str, str],
        attributes: Mapping[str, str],
    ) -> None:
        self.template = template
        self.parameters = {
            name: str(parameters.get(name, spec.get("Default", "")))
            for name, spec in template.get("Parameters", {}).items()
        }
        self.refs = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "mnemo-rehearsal",
            **self.parameters,
            **refs,
        }
        self.attributes = dict(attributes)
        self._conditions: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            self._conditions[name] = bool(self.resolve(self.template["Conditions"][name]))
        return self._conditions[name]

    def ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name not in self.refs:
            raise KeyError(f"the rehearsal has no value for Ref {name}")
        return self.refs[name]

    def get_att(self, resource: str, attribute: str) -> str:
        key = f"{resource}.{attribute}"
        if key not in self.attributes:
            raise KeyError(f"the rehearsal has no value for Fn::GetAtt {key}")
        return self.attributes[key]

    def _sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                return self.get_att(*name.split(".", 1))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            if key in _SHORT_FORMS:  # template.yaml read as plain YAML (!If -> {"If": ...}), before the transform
                key = f"Fn::{key}"
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::GetAtt":
                resource, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
                return self.get_att(resource, attribute)
            if key == "Fn::Sub":
                if isinstance(argument, str):
                    return self._sub(argument, {})
                text, variables = argument
                return self._sub(text, {k: self.resolve(v) for k, v in variables.items()})
            if key == "Fn::If":
                name, then, otherwise = argument
                return self.resolve(then if self.condition(name) else otherwise)
            if key == "Fn::FindInMap":
                mapping, top, second = (self.resolve(part) for part in argument)
                return self.template["Mappings"][mapping][top][second]
            if key == "Fn::Join":
                separator, parts = argument
                return separator.join(str(part) for part in self.resolve(parts))
            if key == "Fn::Select":
                index, items = argument
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::Split":
                separator, text = argument
                return str(self.resolve(text)).split(separator)
            if key == "Fn::Equals":
                left, right = (self.resolve(part) for part in argument)
                return str(left) == str(right)
            if key == "Fn::Not":
                return not self.resolve(argument[0])
            if key == "Fn::And":
                return all(self.resolve(part) for part in argument)
            if key == "Fn::Or":
                return any(self.resolve(part) for part in argument)
            if key == "Condition":
                return self.condition(argument)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}


@dataclass(frozen=True)
class Function:
    """One deployed function as the rehearsal runs it."""

    logical_id: str
    name: str
    handler: str
    timeout: int
    memory: int
    environment: dict[str, str]
    role_id: str
    policies: list[tuple[str, dict[str, Any]]]
    #: The variables Lambda sets from the function's LoggingConfig: AWS_LAMBDA_LOG_FORMAT, and with JSON
    #: AWS_LAMBDA_LOG_LEVEL, the application level (which Powertools' Logger takes before its own).
    lambda_logging: dict[str, str] = field(default_factory=dict)


def functions(template: Mapping[str, Any], resolver: Resolver) -> dict[str, Function]:
    """Every AWS::Lambda::Function of the transformed template, with its role's inline policies."""
    found: dict[str, Function] = {}
    resources = template["Resources"]
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        if "Condition" in resource and not resolver.condition(resource["Condition"]):
            continue
        properties = resource["Properties"]
        role_id = properties["Role"]["Fn::GetAtt"][0]
        role = resources[role_id]["Properties"]
        policies = [
            (policy["PolicyName"], resolver.resolve(policy["PolicyDocument"])) for policy in role.get("Policies", [])
        ]
        variables = resolver.resolve(properties.get("Environment", {}).get("Variables", {}))
        # Only the format and the level: the log group's Ref has no value here (it stays on this machine).
        logging_config = properties.get("LoggingConfig", {})
        log_format = str(resolver.resolve(logging_config.get("LogFormat", "Text")))
        lambda_logging = {"AWS_LAMBDA_LOG_FORMAT": log_format}
        if log_format == "JSON":
            level = resolver.resolve(logging_config.get("ApplicationLogLevel", "INFO"))
            lambda_logging["AWS_LAMBDA_LOG_LEVEL"] = str(level)
        found[logical_id] = Function(
            logical_id=logical_id,
            name=str(resolver.resolve(properties.get("FunctionName", logical_id))),
            handler=properties["Handler"],
            timeout=int(properties.get("Timeout", 3)),
            memory=int(properties.get("MemorySize", 128)),
            environment={key: str(value) for key, value in variables.items()},
            role_id=role_id,
            policies=policies,
            lambda_logging=lambda_logging,
        )
    logging.getLogger(__name__).debug("rehearsal functions: %s", sorted(found))
    return found
