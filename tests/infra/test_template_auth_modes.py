"""template.yaml serves one tools API per AuthMode and ApiType, and gives every function the same identity settings.

IAM is served by an HTTP API (MnemoHttpApi) with IAM authorization, or with ApiType REST by the REST API
(MnemoApi); API_KEY and COGNITO by the REST API whatever ApiType says; JWT by the HTTP API with a JWT
authorizer (JWT with ApiType REST is refused by a rule). Each mode is checked for what CloudFormation would
create with its parameters, evaluated with the template's own conditions (tests/infra/test_template.py).
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
    DEPLOYED_API,
    IDENTITY_VARIABLES,
    choose,
    condition,
    functions,
    integrated_function,
    parameters,
    route_items,
    substitute,
    template,
)

ROOT = Path(__file__).resolve().parents[2]
ISSUER = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example1"
MODES: dict[str, dict[str, str]] = {
    "IAM": {},
    "API_KEY": {"AuthMode": "API_KEY"},
    "COGNITO": {
        "AuthMode": "COGNITO",
        "CognitoUserPoolArn": "arn:aws:cognito-idp:eu-west-1:123456789012:userpool/eu-west-1_Example1",
    },
    "JWT": {"AuthMode": "JWT", "JwtIssuer": ISSUER, "JwtAudience": "client-a,client-b"},
}
#: The API each mode deploys with ApiType's default (HTTP), and the one it must not.
DEPLOYED = {mode: DEPLOYED_API[mode, "HTTP"] for mode in MODES}
#: Every valid (AuthMode, ApiType): the parameters and the API it deploys.
CASES = {
    f"{mode}-{api_type}": (MODES[mode] | {"ApiType": api_type}, api) for (mode, api_type), api in DEPLOYED_API.items()
}
SIGV4 = {"type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4"}


def _created(doc: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
    """The resources and outputs CloudFormation would create with ``params``, every !If resolved."""
    found = {}
    for section in ("Resources", "Outputs"):
        for name, node in doc[section].items():
            if "Condition" in node and not condition(doc, node["Condition"], params):
                continue
            found[f"{section}.{name}"] = choose(doc, node, params)
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_mode_creates_one_api_and_nothing_refers_to_the_other(case: str) -> None:
    doc = template()
    overrides, deployed = CASES[case]
    params = parameters(doc, **overrides)
    created = _created(doc, params)
    (other,) = set(APIS) - {deployed}
    assert f"Resources.{deployed}" in created and f"Resources.{other}" not in created
    for name, node in created.items():
        assert not re.search(rf"\b{other}\b", json.dumps(node)), f"{case}: {name} refers to {other}"


def test_api_type_is_a_parameter_for_iam_and_jwt_refuses_rest() -> None:
    doc = template()
    spec = doc["Parameters"]["ApiType"]
    assert spec["Default"] == "HTTP" and spec["AllowedValues"] == ["HTTP", "REST"]
    description = " ".join(spec["Description"].split())
    for words in (
        "API keys and usage plans",
        "AWS WAF",
        "private endpoints",
        "API_KEY and COGNITO always use the REST",
    ):
        assert words in description, words
    rule = doc["Rules"]["JwtNeedsHttpApi"]
    assert rule["RuleCondition"] == {"Equals": [{"Ref": "AuthMode"}, "JWT"]}
    assert [a["Assert"] for a in rule["Assertions"]] == [{"Equals": [{"Ref": "ApiType"}, "HTTP"]}]
    # Every other combination is valid, and deploys exactly one API.
    for mode in MODES:
        for api_type in ("HTTP", "REST"):
            params = parameters(doc, **MODES[mode], ApiType=api_type)
            if (mode, api_type) not in DEPLOYED_API:
                assert mode == "JWT" and api_type == "REST"
                continue
            assert condition(doc, "UseHttpApi", params) is (DEPLOYED_API[mode, api_type] == "MnemoHttpApi")
            assert condition(doc, "UseRestApi", params) is (DEPLOYED_API[mode, api_type] == "MnemoApi")


@pytest.mark.parametrize("mode", ["IAM", "JWT"])
def test_the_http_api_authorizes_every_tool_route_and_mcp_for_its_mode(mode: str) -> None:
    """IAM: IAM authorization (SigV4) on every route but the console's; JWT: the JWT authorizer."""
    doc = template()
    params = parameters(doc, **MODES[mode], ApiType="HTTP", ExperimentalTools="true", Console="Enabled")
    body = choose(doc, doc["Resources"]["MnemoHttpApi"]["Properties"]["DefinitionBody"], params)
    schemes = body["components"]["securitySchemes"]
    if mode == "IAM":
        assert schemes == {"sigv4": SIGV4}
    else:
        assert schemes == {
            "jwt": {
                "type": "oauth2",
                "x-amazon-apigateway-authorizer": {
                    "type": "jwt",
                    "identitySource": "$request.header.Authorization",
                    "jwtConfiguration": {
                        "issuer": {"Ref": "JwtIssuer"},
                        "audience": {"Split": [",", {"Ref": "JwtAudience"}]},
                    },
                },
            }
        }
    (scheme,) = schemes
    for path, item in body["paths"].items():
        (operation,) = item.values()
        assert operation["security"] == ([] if path in CONSOLE_PATHS else [{scheme: []}]), path
    assert "Auth" not in doc["Resources"]["MnemoHttpApi"]["Properties"]  # SAM's Auth cannot follow AuthMode


def test_both_apis_have_the_same_routes_on_the_same_functions() -> None:
    doc = template()
    rest = {path: integrated_function(item) for path, item in route_items(doc, "MnemoApi").items()}
    http = {path: integrated_function(item) for path, item in route_items(doc, "MnemoHttpApi").items()}
    assert http == rest
    rest_paths = doc["Resources"]["MnemoApi"]["Properties"]["DefinitionBody"]["paths"]
    http_paths = doc["Resources"]["MnemoHttpApi"]["Properties"]["DefinitionBody"]["paths"]
    # The experimental tools' routes exist only with ExperimentalTools, the console's with Console, on either API.
    for params in (parameters(doc), parameters(doc, ExperimentalTools="true", Console="Enabled")):
        assert set(choose(doc, http_paths, params)) == set(choose(doc, rest_paths, params))


def test_the_http_api_sends_payload_format_2_0_to_lambda_proxy_integrations() -> None:
    doc = template()
    for path, item in route_items(doc, "MnemoHttpApi").items():
        assert set(item) == ({"get"} if path in CONSOLE_PATHS else {"post"}), path
        (operation,) = item.values()
        integration = operation["x-amazon-apigateway-integration"]
        assert (integration["type"], integration["httpMethod"]) == ("aws_proxy", "POST"), path
        assert integration["payloadFormatVersion"] == "2.0", path
        if path in CONSOLE_PATHS:  # the page's files: no authorizer (tests/infra/test_template_console.py)
            assert operation["security"] == [], path
        else:
            assert operation["security"] == {"If": ["UseJwtAuth", [{"jwt": []}], [{"sigv4": []}]]}, path


def test_jwt_mode_authorizes_every_route_with_the_issuer_and_audiences() -> None:
    doc = template()
    api = doc["Resources"]["MnemoHttpApi"]
    assert api["Type"] == "AWS::Serverless::HttpApi" and api["Condition"] == "UseHttpApi"
    assert doc["Resources"]["MnemoApi"]["Condition"] == "UseRestApi"
    for mode in MODES:
        params = parameters(doc, **MODES[mode])
        assert condition(doc, "UseJwtAuth", params) is (mode == "JWT")
        assert condition(doc, "UseHttpApi", params) is (mode in ("JWT", "IAM"))  # ApiType HTTP, the default
    # The JWT authorizer, with the issuer and audiences: test_the_http_api_authorizes_every_tool_route_and_mcp...
    # The same throttling as the REST API's every method.
    (rest_limits,) = doc["Resources"]["MnemoApi"]["Properties"]["MethodSettings"]
    limits = api["Properties"]["DefaultRouteSettings"]
    assert limits["ThrottlingBurstLimit"] == rest_limits["ThrottlingBurstLimit"]
    assert limits["ThrottlingRateLimit"] == rest_limits["ThrottlingRateLimit"]
    assert api["Properties"]["StageName"] == {"Ref": "Stage"}  # the same URL shape as the REST API's


def test_jwt_mode_needs_its_issuer_and_audience() -> None:
    doc = template()
    rule = doc["Rules"]["JwtNeedsIssuerAndAudience"]
    assert rule["RuleCondition"] == {"Equals": [{"Ref": "AuthMode"}, "JWT"]}
    asserted = [assertion["Assert"] for assertion in rule["Assertions"]]
    assert asserted == [
        {"Not": [{"Equals": [{"Ref": "JwtIssuer"}, ""]}]},
        {"Not": [{"Equals": [{"Ref": "JwtAudience"}, ""]}]},
    ]
    for name in ("JwtIssuer", "JwtAudience", "JwtClaimMapping", "TrustedDelegateArns"):
        assert doc["Parameters"][name]["Default"] == "", name


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("JwtIssuer", ISSUER, True),
        ("JwtIssuer", "https://login.microsoftonline.com/0b3c1a2d-0000-4000-8000-000000000000/v2.0", True),
        ("JwtIssuer", "https://example.okta.com/oauth2/default", True),
        ("JwtIssuer", "https://example.eu.auth0.com/", True),
        ("JwtIssuer", "http://issuer.example", False),
        ("JwtIssuer", "https://a.example,https://b.example", False),
        ("JwtAudience", "client-a", True),
        ("JwtAudience", "client-a,api://mnemo", True),
        ("JwtAudience", "client-a,", False),
        ("JwtAudience", "client a", False),
        ("JwtClaimMapping", "user=email", True),
        ("JwtClaimMapping", "user=email,tenant=org_id,roles=https://example.com/roles", True),
        ("JwtClaimMapping", "user=email,", False),
        ("JwtClaimMapping", "user email", False),
        ("TrustedDelegateArns", "arn:aws:iam::123456789012:role/AgentRole", True),
        (
            "TrustedDelegateArns",
            "arn:aws:iam::123456789012:role/AgentRole,arn:aws-us-gov:iam::123456789012:role/service/AgentRole2",
            True,
        ),
        ("TrustedDelegateArns", "arn:aws:iam::123456789012:user/alice", False),
        ("TrustedDelegateArns", "arn:aws:sts::123456789012:assumed-role/AgentRole/task-1", False),
        ("TrustedDelegateArns", "arn:aws:iam::123456789012:role/*", False),
        ("TrustedDelegateArns", "*", False),
        ("TrustedDelegateArns", "arn:aws:iam::123456789012:role/A, arn:aws:iam::123456789012:role/B", False),
    ],
)
def test_parameter_patterns(name: str, value: str, accepted: bool) -> None:
    pattern = template()["Parameters"][name]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, value)) is accepted
    assert re.fullmatch(pattern, "")  # the default


def test_every_function_gets_the_same_identity_settings() -> None:
    """An API key's tenant is the account on every function (/mcp included): one key, one dataset. The
    delegates and the claim mapping reach every function that reads identity."""
    doc = template()
    env = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert env["MNEMO_API_KEY_TENANT"] == {
        "If": ["HasApiKeyTenant", {"Ref": "ApiKeyTenant"}, {"Ref": "AWS::AccountId"}]
    }
    assert env["MNEMO_TRUSTED_DELEGATES"] == {"Ref": "TrustedDelegateArns"}
    assert env["MNEMO_JWT_CLAIMS"] == {"Ref": "JwtClaimMapping"}
    for name, resource in functions(doc).items():
        own = resource["Properties"].get("Environment", {}).get("Variables", {})
        assert not IDENTITY_VARIABLES & set(own), f"{name} overrides an identity setting"
    source = "".join(path.read_text() for path in (ROOT / "layers/shared/mnemo/entry/identity").glob("*.py"))
    for variable in IDENTITY_VARIABLES:
        assert f'"{variable}"' in source, f"mnemo.entry.identity reads no {variable}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_and_the_5xx_alarm_follow_the_deployed_api(case: str) -> None:
    doc = template()
    overrides, deployed = CASES[case]
    params = parameters(doc, **overrides, Alarms="on") | {api: api for api in APIS}  # an API's Ref: its logical id
    url = substitute(doc, doc["Outputs"]["ApiUrl"]["Value"], params)
    assert url == f"https://{deployed}.execute-api.eu-west-1.AWS::URLSuffix/dev"
    assert choose(doc, doc["Outputs"]["ApiType"]["Value"], params) == ("HTTP" if deployed == "MnemoHttpApi" else "REST")
    # One 5xx alarm, on the deployed API's own metric: REST's 5XXError by ApiName, the HTTP API's 5xx by ApiId.
    (alarm,) = [
        choose(doc, r["Properties"], params)
        for r in doc["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and r["Properties"].get("Namespace") == "AWS/ApiGateway"
        and condition(doc, r["Condition"], params)
    ]
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    if deployed == "MnemoHttpApi":
        assert alarm["MetricName"] == "5xx"
        assert dimensions == {"ApiId": {"Ref": "MnemoHttpApi"}, "Stage": {"Ref": "Stage"}}
    else:
        assert alarm["MetricName"] == "5XXError"
        assert dimensions == {"ApiName": {"Sub": "mnemo-${Stage}"}, "Stage": {"Ref": "Stage"}}
