"""template.yaml serves the console from the deployed API when asked (Console Enabled), on the tools' origin.

ConsoleFunction answers GET /ui and GET /ui/{proxy+} of whichever API AuthMode deploys. Those two routes have
no authorizer (the page's files hold no data; a browser opening a page sends no credentials), while every
tool route keeps the API's. The console needs a person's bearer token, so the parameter is refused with
AuthMode IAM or API_KEY (a CloudFormation rule). Nothing of it exists by default.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from infra.test_template import (
    APIS,
    CONSOLE_PATHS,
    choose,
    condition,
    functions,
    integrated_function,
    parameters,
    resources_of,
    route_items,
    substitute,
    template,
)
from infra.test_template_auth_modes import DEPLOYED, MODES

ROOT = Path(__file__).resolve().parents[2]
ENABLED = {"Console": "Enabled"}


def _mentions_console(node: Any) -> bool:
    return bool(re.search(r"\bConsole(Function|LogGroup)\b", json.dumps(node)))


def test_console_is_a_parameter_off_by_default() -> None:
    doc = template()
    parameter = doc["Parameters"]["Console"]
    assert parameter["Type"] == "String" and parameter["Default"] == "Disabled"
    assert parameter["AllowedValues"] == ["Enabled", "Disabled"]
    assert "/ui" in parameter["Description"] and "COGNITO or JWT" in parameter["Description"]
    assert doc["Conditions"]["ServeConsole"] == {"Equals": [{"Ref": "Console"}, "Enabled"]}
    assert condition(doc, "ServeConsole", parameters(doc)) is False
    assert condition(doc, "ServeConsole", parameters(doc, **ENABLED)) is True


def _rule_holds(doc: dict[str, Any], params: dict[str, str]) -> bool:
    """Whether ConsoleNeedsSignIn lets a deployment with ``params`` through, as CloudFormation evaluates it."""
    rule = doc["Rules"]["ConsoleNeedsSignIn"]
    assert rule["RuleCondition"] == {"Equals": [{"Ref": "Console"}, "Enabled"]}
    if params["Console"] != "Enabled":
        return True
    (assertion,) = rule["Assertions"]
    allowed, value = assertion["Assert"]["Contains"]
    assert value == {"Ref": "AuthMode"}
    return params["AuthMode"] in allowed


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_console_needs_a_mode_a_person_signs_in_with(mode: str) -> None:
    """A browser cannot sign SigV4 and an API key names no person: only COGNITO and JWT may deploy it."""
    doc = template()
    assert _rule_holds(doc, parameters(doc, **MODES[mode])) is True  # Disabled: any mode
    assert _rule_holds(doc, parameters(doc, **MODES[mode], **ENABLED)) is (mode in ("COGNITO", "JWT"))
    (assertion,) = doc["Rules"]["ConsoleNeedsSignIn"]["Assertions"]
    assert "IAM" in assertion["AssertDescription"] and "API key" in assertion["AssertDescription"]


def test_the_default_deployment_creates_nothing_of_the_console() -> None:
    doc = template()
    default = parameters(doc)
    console = {name for name, resource in doc["Resources"].items() if resource.get("Condition") == "ServeConsole"}
    assert console == {"ConsoleFunction", "ConsoleLogGroup", "ConsoleApiPermission", "ConsoleFilesApiPermission"}
    # No alarm of its own: the API's 5xx sees it fail, the account's Throttles sees it throttled.
    alarms = resources_of(doc, "AWS::CloudWatch::Alarm")
    assert not [name for name, alarm in alarms.items() if _mentions_console(alarm)]
    for name, resource in doc["Resources"].items():
        if "Condition" in resource and not condition(doc, resource["Condition"], default):
            continue
        assert not _mentions_console(choose(doc, resource, default)), f"{name} refers to the console"
    for api in APIS:
        paths = choose(doc, doc["Resources"][api]["Properties"]["DefinitionBody"]["paths"], default)
        assert not CONSOLE_PATHS & set(paths), api
    assert doc["Outputs"]["ConsoleUrl"]["Condition"] == "ServeConsole"


@pytest.mark.parametrize("api", APIS)
def test_both_apis_route_the_console_to_its_function_without_an_authorizer(api: str) -> None:
    doc = template()
    items = route_items(doc, api)
    for path in CONSOLE_PATHS:
        node = doc["Resources"][api]["Properties"]["DefinitionBody"]["paths"][path]
        assert node["If"][0] == "ServeConsole" and node["If"][2] == {"Ref": "AWS::NoValue"}, path
        assert set(items[path]) == {"get"}, path
        assert integrated_function(items[path]) == "ConsoleFunction", path
        operation = items[path]["get"]
        integration = operation["x-amazon-apigateway-integration"]
        assert (integration["type"], integration["httpMethod"]) == ("aws_proxy", "POST"), path
        # An empty security: no authorizer (the tools' routes name theirs).
        assert operation["security"] == [], path
        if api == "MnemoHttpApi":
            assert integration["payloadFormatVersion"] == "2.0", path


@pytest.mark.parametrize("mode", ["COGNITO", "JWT"])
def test_the_tools_keep_their_authorizer_beside_the_console(mode: str) -> None:
    doc = template()
    params = parameters(doc, **MODES[mode], **ENABLED)
    api = DEPLOYED[mode]
    paths = choose(doc, doc["Resources"][api]["Properties"]["DefinitionBody"]["paths"], params)
    assert set(paths) >= CONSOLE_PATHS
    for path, item in paths.items():
        if path in CONSOLE_PATHS:
            continue
        security = item["post"].get("security")
        # Each API's body names its authorizer on every tool's route.
        assert security == ([{"cognito": []}] if mode == "COGNITO" else [{"jwt": []}]), path


def test_the_console_function_serves_the_layers_files_and_may_reach_nothing() -> None:
    doc = template()
    resource = doc["Resources"]["ConsoleFunction"]
    assert resource["Condition"] == "ServeConsole"
    properties = resource["Properties"]
    assert properties["CodeUri"].rstrip("/") == "functions/console"
    assert properties.get("Handler", doc["Globals"]["Function"]["Handler"]) == "app.handler"
    source = (ROOT / "functions" / "console" / "app.py").read_text()
    assert "from mnemo.entry.console_lambda import handler" in source
    assert "Policies" not in properties and "Events" not in properties
    assert "serves no tool" in properties["Description"]
    group = properties["LoggingConfig"]["LogGroup"]["Ref"]
    assert doc["Resources"][group]["Condition"] == "ServeConsole"
    assert choose(doc, doc["Resources"][group]["Properties"]["LogGroupName"], parameters(doc)) == {
        "Sub": "/mnemo/${Stage}/console"
    }
    assert "ConsoleFunction" in functions(doc)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_api_gateway_may_invoke_the_console_on_its_two_routes_only(mode: str) -> None:
    doc = template()
    permissions = [
        r
        for r in resources_of(doc, "AWS::Lambda::Permission").values()
        if r["Properties"]["FunctionName"] == {"Ref": "ConsoleFunction"}
    ]
    params = parameters(doc, **MODES[mode], **ENABLED) | {name: name for name in APIS}  # Ref: the logical id
    arns = set()
    for permission in permissions:
        assert permission["Condition"] == "ServeConsole"
        properties = permission["Properties"]
        assert (properties["Principal"], properties["Action"]) == ("apigateway.amazonaws.com", "lambda:InvokeFunction")
        arns.add(substitute(doc, properties["SourceArn"], params))
    prefix = f"arn:aws:execute-api:eu-west-1:123456789012:{DEPLOYED[mode]}/*/GET"
    assert arns == {f"{prefix}/ui", f"{prefix}/ui/*"}


@pytest.mark.parametrize("mode", ["COGNITO", "JWT"])
def test_the_console_url_is_an_output(mode: str) -> None:
    doc = template()
    params = parameters(doc, **MODES[mode], **ENABLED) | {api: api for api in APIS}
    api_url = substitute(doc, doc["Outputs"]["ApiUrl"]["Value"], params)
    assert substitute(doc, doc["Outputs"]["ConsoleUrl"]["Value"], params) == f"{api_url}/ui/"
