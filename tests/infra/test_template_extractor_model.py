"""ExtractorModelId may name a foundation model or an inference profile, and the functions that run
build_memory_from_text are granted exactly what that needs (Bedrock user guide, "Geographic cross-Region
inference" and "Prerequisites for inference profiles"): the foundation model in this region for a plain
id; for a profile, the profile and its model in any region it routes to, only through that profile."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aws_fixtures import load_template

TEMPLATE = load_template()
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012"}
EXTRACTING = (
    "BuildMemoryFromTextFunction",
    "MemoryExtractFunction",
    "McpFunction",
    "BedrockGraphFunction",
    "BedrockLearningFunction",
    "ExtractionFunction",
)
NO_VALUE = object()
APP_PROFILE = "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3"


def evaluate(node: Any, params: dict[str, str]) -> Any:
    """The value CloudFormation gives ``node`` with these parameters (the functions this template uses)."""
    if isinstance(node, list):
        return [value for item in node if (value := evaluate(item, params)) is not NO_VALUE]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        ((name, arg),) = node.items()
        if name == "Ref":
            return NO_VALUE if arg == "AWS::NoValue" else params.get(arg, PSEUDO.get(arg, f"<{arg}>"))
        if name == "Condition" and isinstance(arg, str):
            return condition(arg, params)
        if name == "If":
            return evaluate(arg[1] if condition(arg[0], params) else arg[2], params)
        if name == "Equals":
            left, right = evaluate(arg, params)
            return left == right
        if name in ("Or", "And"):
            found = [bool(evaluate(item, params)) for item in arg]
            return any(found) if name == "Or" else all(found)
        if name == "Select":
            index, values = evaluate(arg, params)
            return values[int(index)]
        if name == "Split":
            separator, text = evaluate(arg, params)
            return str(text).split(separator)
        if name == "Sub" and isinstance(arg, str):
            return re.sub(r"\$\{([^}!]+)\}", lambda m: str(evaluate({"Ref": m[1]}, params)), arg)
    return {key: value for key, raw in node.items() if (value := evaluate(raw, params)) is not NO_VALUE}


def condition(name: str, params: dict[str, str]) -> bool:
    return bool(evaluate(TEMPLATE["Conditions"][name], params))


def model_statements(function: str, model_id: str) -> list[dict[str, Any]]:
    params = {key: str(spec.get("Default", "")) for key, spec in TEMPLATE["Parameters"].items()}
    params["ExtractorModelId"] = model_id
    policies = evaluate(TEMPLATE["Resources"][function]["Properties"]["Policies"], params)
    statements = [s for policy in policies for s in policy.get("Statement", [])]
    return [s for s in statements if str(s.get("Sid", "")).startswith("Extract")]


@pytest.mark.parametrize("function", EXTRACTING)
def test_a_foundation_model_id_grants_that_model_here_and_nothing_else(function: str) -> None:
    (statement,) = model_statements(function, "amazon.nova-lite-v1:0")
    assert statement["Action"] == "bedrock:InvokeModel"
    assert statement["Resource"] == "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-lite-v1:0"
    assert "Condition" not in statement


@pytest.mark.parametrize("function", EXTRACTING)
@pytest.mark.parametrize("profile", ["eu.amazon.nova-lite-v1:0", "global.amazon.nova-2-lite-v1:0", "apac.x.y-v1:0"])
def test_a_cross_region_profile_grants_the_profile_and_its_model_only_through_it(function: str, profile: str) -> None:
    direct, routed = model_statements(function, profile)
    profile_arn = f"arn:aws:bedrock:eu-west-1:123456789012:inference-profile/{profile}"
    assert direct["Resource"] == profile_arn
    # Every region (the global profile's model ARN has none), any model: the condition pins the profile.
    assert routed["Resource"] == "arn:aws:bedrock:*::foundation-model/*"
    assert routed["Condition"] == {"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}}
    assert direct["Action"] == routed["Action"] == "bedrock:InvokeModel"


@pytest.mark.parametrize("function", EXTRACTING)
def test_an_application_profile_arn_is_granted_as_given(function: str) -> None:
    direct, routed = model_statements(function, APP_PROFILE)
    assert direct["Resource"] == APP_PROFILE
    assert routed["Condition"] == {"StringEquals": {"bedrock:InferenceProfileArn": APP_PROFILE}}


def test_the_parameter_accepts_profile_ids_and_arns() -> None:
    spec = TEMPLATE["Parameters"]["ExtractorModelId"]
    for value in ("amazon.nova-lite-v1:0", "eu.amazon.nova-lite-v1:0", "global.amazon.nova-2-lite-v1:0", APP_PROFILE):
        assert re.fullmatch(spec["AllowedPattern"], value), value
    assert not re.fullmatch(spec["AllowedPattern"], "amazon.nova lite")


def test_only_the_extracting_functions_may_invoke_the_extraction_model() -> None:
    params = {key: str(spec.get("Default", "")) for key, spec in TEMPLATE["Parameters"].items()}
    granted = set()
    for name, resource in TEMPLATE["Resources"].items():
        policies = resource.get("Properties", {}).get("Policies")
        if resource["Type"] == "AWS::Serverless::Function" and isinstance(policies, list):
            statements = [s for p in evaluate(policies, params) for s in p.get("Statement", [])]
            if any(str(s.get("Sid", "")).startswith("Extract") for s in statements):
                granted.add(name)
    assert granted == set(EXTRACTING)


def test_no_function_behind_the_api_outlives_the_gateway_and_the_long_tools_keep_a_deadline() -> None:
    """API Gateway waits 29 s for its integration by default (docs/deploy.md): a function behind it that runs
    longer works on after the client has been answered TIMEOUT."""
    default = TEMPLATE["Globals"]["Function"].get("Timeout", 3)
    for name in ("BuildMemoryFromTextFunction", "SyncNowFunction", "McpFunction"):
        properties = TEMPLATE["Resources"][name]["Properties"]
        assert properties.get("Timeout", default) <= 29, name
        deadline = float(properties["Environment"]["Variables"]["MNEMO_REQUEST_DEADLINE_SECONDS"])
        assert deadline < properties["Timeout"], name
