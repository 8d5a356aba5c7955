"""template.yaml agrees with the catalog, the settings and the project's deployment rules.

The template is read as plain YAML (intrinsic tags become one-key dicts such as {"If": [...]}).
Where a property depends on a parameter, the tests evaluate the template's own Conditions for
chosen parameter values and pick the branch CloudFormation would, so each deployment mode is
checked for what it would really create.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_fixtures import CloudFormationLoader

from mnemo.files.scopes import WORKSPACE_ROOT
from mnemo.knowledge.documents import ROOT as KNOWLEDGE_ROOT
from mnemo.outbox import STREAM_LABEL
from mnemo.settings import Settings
from mnemo.sync.service import LOCK_RENEW_SECONDS, LOCK_SECONDS
from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, Tool, load_catalog
from mnemo.tools.rights import Rights
from mnemo_codegen.template_snapstart import alias_id

ROOT = Path(__file__).resolve().parents[2]
TITAN_V2 = "amazon.titan-embed-text-v2:0"
EXTRACTOR_MODEL = "amazon.nova-lite-v1:0"  # ExtractorModelId's default, as the setting's


@cache
def _load() -> str:
    return (ROOT / "template.yaml").read_text()


def template() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load(_load(), Loader=CloudFormationLoader)
    return loaded


def resources_of(doc: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in doc["Resources"].items() if r["Type"] == kind}


def collection_policies(doc: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
    """The vector collection's security and access policies, by logical id, as deployed with ``params``."""
    found = {}
    for kind in ("AWS::OpenSearchServerless::SecurityPolicy", "AWS::OpenSearchServerless::AccessPolicy"):
        for name, resource in resources_of(doc, kind).items():
            found[name] = json.loads(substitute(doc, resource["Properties"]["Policy"], params))
    return found


def functions(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return resources_of(doc, "AWS::Serverless::Function")


#: The tools API of each kind: REST (API_KEY, COGNITO, IAM with ApiType REST) and HTTP API (JWT, IAM with ApiType
#: HTTP, the default).
APIS = ("MnemoApi", "MnemoHttpApi")
#: (AuthMode, ApiType) -> the API deployed: ApiType chooses for IAM only; JWT with REST is refused by a rule
#: (tests/infra/test_template_auth_modes.py).
DEPLOYED_API = {
    ("IAM", "HTTP"): "MnemoHttpApi",
    ("IAM", "REST"): "MnemoApi",
    ("API_KEY", "HTTP"): "MnemoApi",
    ("API_KEY", "REST"): "MnemoApi",
    ("COGNITO", "HTTP"): "MnemoApi",
    ("COGNITO", "REST"): "MnemoApi",
    ("JWT", "HTTP"): "MnemoHttpApi",
}
#: The console's routes (GET, Console Enabled): tests/infra/test_template_console.py.
CONSOLE_PATHS = frozenset({"/ui", "/ui/{proxy+}"})


def route_items(doc: dict[str, Any], api: str = "MnemoApi") -> dict[str, dict[str, Any]]:
    """Path -> its path item in the API's body, a conditional one (the experimental tools', the console's) taken
    from its !If."""
    found = {}
    for path, item in doc["Resources"][api]["Properties"]["DefinitionBody"]["paths"].items():
        if set(item) == {"If"}:
            _, item, _ = item["If"]
        found[path] = item
    return found


def integration_uri(item: dict[str, Any]) -> str:
    """The ``Sub`` of the invocation URI of a path item's Lambda proxy integration (its one method's) without
    SnapStart: with it, a tool's or MCP's URI names the function's alias live
    (tests/infra/test_template_snapstart.py)."""
    (operation,) = item.values()
    uri = operation["x-amazon-apigateway-integration"]["uri"]
    if "Sub" in uri:  # a function without SnapStart (the console's)
        return str(uri["Sub"])
    condition_name, on, off = uri["If"]
    (function,) = re.findall(r"\$\{(\w+)\.Arn\}", off["Sub"])
    assert condition_name == "SnapStartOn", function
    assert on["Sub"] == off["Sub"].replace(f"${{{function}.Arn}}", f"${{{alias_id(function)}}}"), function
    return str(off["Sub"])


def integrated_function(item: dict[str, Any]) -> str:
    """The logical id of the function a path item's Lambda proxy integration invokes (its one method's)."""
    (function,) = re.findall(r"\$\{(\w+)\.Arn\}", integration_uri(item))
    return function


def permitted_function(permission: dict[str, Any]) -> Any:
    """What a Lambda permission lets its principal invoke without SnapStart: an API's permission names the
    function's alias live with it (``!If [SnapStartOn, alias, function]``)."""
    name = permission["Properties"]["FunctionName"]
    if isinstance(name, dict) and set(name) == {"If"} and name["If"][0] == "SnapStartOn":
        _, on, off = name["If"]
        assert on == {"Ref": alias_id(off["Ref"])}, name
        return off
    return name


def integrated_routes(doc: dict[str, Any], api: str = "MnemoApi") -> dict[str, list[str]]:
    """Function logical id -> the tool names whose path the API's body integrates with it.

    Every route carries its integration in the body (no function has an Api event): each API exists only
    in its AuthModes, and SAM would give an event's permission no condition."""
    found: dict[str, list[str]] = {}
    for path, item in route_items(doc, api).items():
        if path.startswith("/v1/tools/"):
            found.setdefault(integrated_function(item), []).append(path.removeprefix("/v1/tools/"))
    return found


def served_routes(doc: dict[str, Any], name: str) -> list[str]:
    """The tool names function ``name`` serves through POST /v1/tools/{name}."""
    return integrated_routes(doc).get(name, [])


def tool_functions(doc: dict[str, Any]) -> dict[str, list[str]]:
    """Tool name -> logical ids of the functions that serve it."""
    found: dict[str, list[str]] = {}
    for name in functions(doc):
        for tool in served_routes(doc, name):
            found.setdefault(tool, []).append(name)
    return found


def experimental_tools() -> set[str]:
    return {name for name, tool in load_catalog(experimental=True).items() if tool.family in EXPERIMENTAL_FAMILIES}


# ------------------------------------------------------- evaluating conditions ---
def parameters(doc: dict[str, Any], **overrides: str) -> dict[str, str]:
    values = {name: str(spec.get("Default", "")) for name, spec in doc["Parameters"].items()}
    unknown = set(overrides) - set(values)
    assert not unknown, f"no such parameters: {unknown}"
    values.update(overrides)
    return values


def _value(node: Any, params: dict[str, str]) -> Any:
    if isinstance(node, dict) and set(node) == {"Ref"}:
        return params[node["Ref"]]
    if isinstance(node, dict) and set(node) == {"Select"}:
        index, values = node["Select"]
        return _value(values, params)[int(index)]
    if isinstance(node, dict) and set(node) == {"Split"}:
        separator, text = node["Split"]
        return str(_value(text, params)).split(separator)
    return node


def condition(doc: dict[str, Any], name: str, params: dict[str, str]) -> bool:
    return _evaluate(doc, doc["Conditions"][name], params)


def _evaluate(doc: dict[str, Any], node: Any, params: dict[str, str]) -> bool:
    ((function, args),) = node.items()
    if function == "Equals":
        left, right = (_value(arg, params) for arg in args)
        return bool(left == right)
    if function == "Not":
        return not _evaluate(doc, args[0], params)
    if function == "And":
        return all(_evaluate(doc, arg, params) for arg in args)
    if function == "Or":
        return any(_evaluate(doc, arg, params) for arg in args)
    if function == "Condition":
        return condition(doc, args, params)
    raise AssertionError(f"unexpected condition function {function}")


def choose(doc: dict[str, Any], node: Any, params: dict[str, str]) -> Any:
    """Resolve every !If (and drop AWS::NoValue) as CloudFormation would for these parameters."""
    if isinstance(node, dict):
        if set(node) == {"If"}:
            name, when_true, when_false = node["If"]
            return choose(doc, when_true if condition(doc, name, params) else when_false, params)
        resolved = {key: choose(doc, value, params) for key, value in node.items()}
        return {key: value for key, value in resolved.items() if value != {"Ref": "AWS::NoValue"}}
    if isinstance(node, list):
        chosen = (choose(doc, item, params) for item in node)
        return [item for item in chosen if item != {"Ref": "AWS::NoValue"}]
    return node


def substitute(doc: dict[str, Any], node: Any, params: dict[str, str]) -> str:
    """Expand a !Sub (either form) with parameters; attributes become recognisable fake ARNs."""
    node = choose(doc, node, params)
    if isinstance(node, str):
        return node
    if "FindInMap" in node:
        mapping, key, attribute = node["FindInMap"]
        return str(doc["Mappings"][mapping][key][attribute])
    if "Ref" in node:
        return params[node["Ref"]]
    text, variables = (node["Sub"], {}) if isinstance(node["Sub"], str) else node["Sub"]

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in variables:
            return substitute(doc, variables[name], params)
        if name in params:
            return params[name]
        if name.startswith("AWS::"):
            return {"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012"}.get(
                name, name
            )
        resource, _, attribute = name.partition(".")
        assert resource in doc["Resources"] or resource.endswith("Role"), f"unknown reference {name}"
        return f"arn:aws:iam::123456789012:role/{resource}" if attribute == "Arn" else resource

    return re.sub(r"\$\{([^}!]+)\}", lookup, text)


# ------------------------------------------------------------------ functions ---
def test_one_function_per_catalog_tool() -> None:
    doc = template()
    found = tool_functions(doc)
    assert set(found) == set(load_catalog(experimental=True))
    for name, logical_ids in found.items():
        assert len(logical_ids) == 1, f"{name} is served by {logical_ids}"
        properties = doc["Resources"][logical_ids[0]]["Properties"]
        assert properties["CodeUri"].rstrip("/") == f"functions/{name}"
        assert (ROOT / "functions" / name / "app.py").is_file()


def test_every_function_serves_at_most_one_tool_and_has_code() -> None:
    doc = template()
    for name, resource in functions(doc).items():
        assert len(served_routes(doc, name)) <= 1, name
        code = ROOT / resource["Properties"]["CodeUri"]
        assert (code / "app.py").is_file(), f"{name}: no {code}/app.py"


def test_functions_that_serve_no_tool_are_named_for_what_they_do() -> None:
    doc = template()
    catalog = set(load_catalog(experimental=True))
    others = {name: r for name, r in functions(doc).items() if not served_routes(doc, name)}
    assert {"IndexerFunction", "OutlineSyncFunction"} <= set(others)
    for name, resource in others.items():
        properties = resource["Properties"]
        folder = properties["CodeUri"].rstrip("/").removeprefix("functions/")
        assert folder not in catalog, f"{name} lives in a tool's folder"
        for event in properties.get("Events", {}).values():
            assert not event["Properties"].get("Path", "").startswith("/v1/tools"), name


def test_api_body_routes_are_exactly_the_tool_functions() -> None:
    doc = template()
    paths = doc["Resources"]["MnemoApi"]["Properties"]["DefinitionBody"]["paths"]
    tools = {f"/v1/tools/{name}" for name in load_catalog(experimental=True)}
    assert set(paths) == tools | {"/mcp"} | CONSOLE_PATHS
    served = parameters(doc, ExperimentalTools="true", Console="Enabled")
    for path, item in paths.items():
        assert set(choose(doc, item, served)) == ({"get"} if path in CONSOLE_PATHS else {"post"}), path
    # Deployed without the experimental tools and the console, their paths are absent.
    default = choose(doc, paths, parameters(doc))
    assert set(default) == {f"/v1/tools/{name}" for name in load_catalog(experimental=False)} | {"/mcp"}


def test_every_route_carries_the_api_security_and_its_integration() -> None:
    """Every path of the REST body has the security AuthMode selects and a Lambda proxy integration with its
    own function; only the experimental tools' paths are conditional (ServeExperimental). No function has
    an Api event. (The console's GET routes have no authorizer: tests/infra/test_template_console.py.)"""
    doc = template()
    every = doc["Resources"]["MnemoApi"]["Properties"]["DefinitionBody"]["paths"]
    paths = {path: item for path, item in every.items() if path not in CONSOLE_PATHS}
    security = paths["/v1/tools/file_read"]["post"]["security"]
    assert security["If"][0] == "UseIamAuth"
    conditional = {path.removeprefix("/v1/tools/") for path, item in paths.items() if set(item) == {"If"}}
    assert conditional == experimental_tools()
    for path, item in paths.items():
        if set(item) == {"If"}:
            condition_name, item, otherwise = item["If"]
            assert condition_name == "ServeExperimental" and otherwise == {"Ref": "AWS::NoValue"}
        assert item["post"]["security"] == security, path
        function = integrated_function(item)
        integration = item["post"]["x-amazon-apigateway-integration"]
        assert (integration["type"], integration["httpMethod"]) == ("aws_proxy", "POST")
        assert integration_uri(item) == (
            "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/"
            f"${{{function}.Arn}}/invocations"
        )
    for name, resource in functions(doc).items():
        events = resource["Properties"].get("Events", {}).values()
        assert not [e for e in events if e["Type"] in {"Api", "HttpApi"}], name


def test_each_routed_function_may_be_invoked_on_its_route_of_the_deployed_api_only() -> None:
    """One permission per routed function: API Gateway may invoke it on its own route of whichever API
    AuthMode deploys, under the function's own condition. (The console's: tests/infra/test_template_console.py.)"""
    doc = template()
    permissions = resources_of(doc, "AWS::Lambda::Permission")
    items = {path: item for path, item in route_items(doc).items() if path not in CONSOLE_PATHS}
    routes = {path: integrated_function(item) for path, item in items.items()}
    assert set(routes.values()) | {"ConsoleFunction"} == {
        integrated_function(item) for item in route_items(doc, "MnemoHttpApi").values()
    }
    for path, function in routes.items():
        (permission,) = [r for r in permissions.values() if permitted_function(r) == {"Ref": function}]
        assert permission.get("Condition") == doc["Resources"][function].get("Condition"), function
        properties = permission["Properties"]
        assert (properties["Principal"], properties["Action"]) == ("apigateway.amazonaws.com", "lambda:InvokeFunction")
        for mode, api_type in DEPLOYED_API:
            api = DEPLOYED_API[mode, api_type]
            params = parameters(doc, AuthMode=mode, ApiType=api_type) | {name: name for name in APIS}  # Ref: its id
            assert substitute(doc, properties["SourceArn"], params) == (
                f"arn:aws:execute-api:eu-west-1:123456789012:{api}/*/POST{path}"
            ), (function, mode, api_type)


def test_runtime_and_shared_layer() -> None:
    doc = template()
    assert doc["Globals"]["Function"]["Runtime"] == "python3.12"
    assert doc["Globals"]["Function"]["Layers"] == [{"Ref": "SharedLayer"}]
    layer = doc["Resources"]["SharedLayer"]
    assert layer["Metadata"]["BuildMethod"] == "python3.12"
    assert layer["Metadata"]["BuildArchitecture"] in {"arm64", "x86_64"}
    assert layer["Metadata"]["BuildArchitecture"] in doc["Globals"]["Function"]["Architectures"]
    assert layer["Properties"]["ContentUri"].rstrip("/") == "layers/shared"
    assert (ROOT / "layers" / "shared" / "requirements.txt").is_file()


# ----------------------------------------------------------------------- API ---
def _security(doc: dict[str, Any], **overrides: str) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    params = parameters(doc, **overrides)
    body = choose(doc, doc["Resources"]["MnemoApi"]["Properties"]["DefinitionBody"], params)
    return body["securityDefinitions"], {path: item["post"]["security"] for path, item in body["paths"].items()}


def test_auth_mode_parameter_and_conditions() -> None:
    doc = template()
    auth = doc["Parameters"]["AuthMode"]
    assert auth["Default"] == "IAM"
    assert set(auth["AllowedValues"]) == {"IAM", "API_KEY", "COGNITO", "JWT"}
    modes = {"UseIamAuth": "IAM", "UseApiKeyAuth": "API_KEY", "UseCognitoAuth": "COGNITO", "UseJwtAuth": "JWT"}
    for name, mode in modes.items():
        for other in auth["AllowedValues"]:
            assert condition(doc, name, parameters(doc, AuthMode=other)) is (other == mode), (name, other)
    assert "CognitoUserPoolArn" in doc["Parameters"]
    rule = doc["Rules"]["CognitoNeedsUserPool"]
    assert rule["RuleCondition"] == {"Equals": [{"Ref": "AuthMode"}, "COGNITO"]}


def test_api_uses_iam_auth_by_default() -> None:
    """IAM (SigV4) on the HTTP API by default; with ApiType REST, on the REST API (the HTTP API's:
    tests/infra/test_template_auth_modes.py)."""
    doc = template()
    assert (doc["Parameters"]["AuthMode"]["Default"], doc["Parameters"]["ApiType"]["Default"]) == ("IAM", "HTTP")
    assert condition(doc, "UseHttpApi", parameters(doc)) is True
    definitions, security = _security(doc, ApiType="REST")
    assert definitions == {
        "sigv4": {"type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4"}
    }
    assert all(requirement == [{"sigv4": []}] for requirement in security.values())
    # X-Ray on the REST API's stage only with Tracing Active (tests/infra/test_template_observability.py).
    assert doc["Resources"]["MnemoApi"]["Properties"]["TracingEnabled"] == {"If": ["TracingOn", True, False]}


def test_api_key_mode_requires_a_key_and_creates_a_usage_plan() -> None:
    doc = template()
    definitions, security = _security(doc, AuthMode="API_KEY")
    assert definitions == {"api_key": {"type": "apiKey", "name": "x-api-key", "in": "header"}}
    assert all(requirement == [{"api_key": []}] for requirement in security.values())
    key_resources = {
        "AWS::ApiGateway::ApiKey",
        "AWS::ApiGateway::UsagePlan",
        "AWS::ApiGateway::UsagePlanKey",
    }
    conditioned = {r["Type"]: r.get("Condition") for r in doc["Resources"].values() if r["Type"] in key_resources}
    assert conditioned == dict.fromkeys(key_resources, "UseApiKeyAuth")
    plan = next(iter(resources_of(doc, "AWS::ApiGateway::UsagePlan").values()))["Properties"]
    assert plan["ApiStages"] == [{"ApiId": {"Ref": "MnemoApi"}, "Stage": {"Ref": "MnemoApi.Stage"}}]
    assert {"Limit", "Period"} <= set(plan["Quota"]) and {"RateLimit", "BurstLimit"} <= set(plan["Throttle"])


def test_cognito_mode_uses_the_user_pool_authorizer() -> None:
    doc = template()
    definitions, security = _security(doc, AuthMode="COGNITO")
    assert set(definitions) == {"cognito"}
    authorizer = definitions["cognito"]["x-amazon-apigateway-authorizer"]
    assert authorizer == {"type": "cognito_user_pools", "providerARNs": [{"Ref": "CognitoUserPoolArn"}]}
    assert all(requirement == [{"cognito": []}] for requirement in security.values())


def test_auth_mode_changes_are_deployed() -> None:
    # The body changes through conditions that SAM's deployment hash cannot see.
    api = template()["Resources"]["MnemoApi"]["Properties"]
    assert api["AlwaysDeploy"] is True
    assert api["MergeDefinitions"] is True


# -------------------------------------------------------------------- tables ---
def test_records_table_is_on_demand_encrypted_and_recoverable() -> None:
    table = template()["Resources"]["RecordsTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


# ------------------------------------------------------------------- bucket ---
def test_knowledge_bucket_is_versioned_encrypted_private_and_announces_changes() -> None:
    doc = template()
    bucket = doc["Resources"]["KnowledgeBucket"]
    assert bucket["Type"] == "AWS::S3::Bucket"
    props = bucket["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["NotificationConfiguration"]["EventBridgeConfiguration"] == {"EventBridgeEnabled": True}
    policies = [p["Properties"] for p in resources_of(doc, "AWS::S3::BucketPolicy").values()]
    assert [p["Bucket"] for p in policies] == [{"Ref": "KnowledgeBucket"}]
    denials = [
        s
        for s in policies[0]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert len(denials) == 1 and denials[0]["Principal"] == "*" and denials[0]["Action"] == "s3:*"
    assert {"GetAtt": "KnowledgeBucket.Arn"} in denials[0]["Resource"]
    assert {"Sub": "${KnowledgeBucket.Arn}/*"} in denials[0]["Resource"]


# --------------------------------------------------------------- OpenSearch ---
def test_vector_collection_and_its_policies() -> None:
    doc = template()
    params = parameters(doc)
    collection = doc["Resources"]["VectorCollection"]
    assert collection["Type"] == "AWS::OpenSearchServerless::Collection"
    assert collection["Properties"]["Type"] == "VECTORSEARCH"
    name = substitute(doc, collection["Properties"]["Name"], params)
    assert name == "mnemo-dev-vectors-ng"
    assert set(collection["DependsOn"]) == {
        "VectorCollectionEncryptionPolicy",
        "VectorCollectionNetworkPolicy",
        "VectorCollectionGroup",
    }

    security = resources_of(doc, "AWS::OpenSearchServerless::SecurityPolicy")
    by_type = {
        r["Properties"]["Type"]: json.loads(substitute(doc, r["Properties"]["Policy"], params))
        for r in security.values()
    }
    assert set(by_type) == {"encryption", "network"}
    assert by_type["encryption"]["AWSOwnedKey"] is True
    # Both names the collection takes with OpenSearchStandbyReplicas (tests/infra/test_template_redeploy.py),
    # the two it had in a CLASSIC collection group, in the data access policy too (a stack being updated
    # reaches its old collection until it is deleted)...
    names = [f"collection/{n}" for n in (name, f"{name}-standby", "mnemo-dev-vectors", "mnemo-dev-vectors-standby")]
    # ...and the two it had before it joined a collection group (tests/infra/test_template_capacity.py).
    covered = [*names, "collection/mnemo-dev", "collection/mnemo-dev-standby"]
    assert by_type["encryption"]["Rules"] == [{"ResourceType": "collection", "Resource": covered}]
    (network,) = by_type["network"]
    assert {"ResourceType": "collection", "Resource": covered} in network["Rules"]

    (access,) = resources_of(doc, "AWS::OpenSearchServerless::AccessPolicy").values()
    assert access["Properties"]["Type"] == "data"
    statements = json.loads(substitute(doc, access["Properties"]["Policy"], params))
    rights: dict[str, set[str]] = {}
    for statement in statements:
        for rule in statement["Rules"]:
            indexes = [n.replace("collection/", "index/") + "/*" for n in names]
            expected = indexes if rule["ResourceType"] == "index" else names
            assert rule["Resource"] == expected
            for principal in statement["Principal"]:
                rights.setdefault(principal.rsplit("/", 1)[1], set()).update(rule["Permission"])
    role = "{}Role".format
    assert rights[role("MemorySearchFunction")] == {
        "aoss:ReadDocument",
        "aoss:DescribeIndex",
        "aoss:DescribeCollectionItems",
    }
    read_only = {"aoss:ReadDocument", "aoss:DescribeIndex", "aoss:DescribeCollectionItems"}
    for reader in (
        "MemorySearchFunction",
        "KnowledgeQueryFunction",
        "BedrockKnowledgeFunction",
        "SearchMemoriesFunction",
        "RetrieveConversationFunction",
        "RetrieveExecutionFunction",
        "FileSearchFunction",
        "GraphSearchFunction",
    ):
        assert rights[role(reader)] == read_only, reader
    for deleter in ("MemoryDeleteFunction", "ForgetMemoryFunction", "FileDeleteFunction", "DeleteMemoryObjectFunction"):
        assert "aoss:WriteDocument" in rights[role(deleter)], deleter
        assert "aoss:CreateIndex" not in rights[role(deleter)], deleter
    for writer in (
        "MemoryAddFunction",
        "IndexerFunction",
        "SyncNowFunction",
        "KnowledgeSyncFunction",
        "BedrockMemoryFunction",
        "BedrockSyncFunction",
        "McpFunction",
        "AddConversationFunction",
        "AddExecutionFunction",
        "BedrockConversationsFunction",
        "MemorizeNewTopicFunction",
        "RefineMemoryFunction",
        "BedrockTopicsFunction",
        "FileWriteFunction",
        "FileEditFunction",
        "BedrockFilesFunction",
        "AddMemoryLinkFunction",
        "UpdateMemoryObjectFunction",
        "BuildMemoryFromTextFunction",
        "BedrockGraphFunction",
    ):
        assert {"aoss:WriteDocument", "aoss:CreateIndex"} <= rights[role(writer)], writer
    # Functions whose tools never touch the index are no principal of the collection.
    for outsider in (
        "MemoryListFunction",
        "MemoryHistoryFunction",
        "KnowledgeCheckFunction",
        "KnowledgeShowFunction",
        "SyncStatusFunction",
        "MemorizeGeneralInfoFunction",
        "ListMemoriesFunction",
        "RecallMemoryFunction",
        "RecallGeneralMemoryFunction",
        "FileReadFunction",
        "FileListFunction",
        "BlockPinFunction",
        "PinnedContextFunction",
        "ExpandPromptFunction",
        "BlockUnpinFunction",
        "GetMemoryObjectFunction",
        "InvalidateMemoryLinkFunction",
        "OutlineSymbolFunction",
        "OutlineFileFunction",
        "OutlineProjectFunction",
        "OutlineSyncFunction",
        "BedrockOutlineFunction",
    ):
        assert role(outsider) not in rights, outsider
    for principal, granted in rights.items():
        assert not granted & {"aoss:DeleteIndex", "aoss:UpdateIndex", "aoss:*"}, principal

    admin = "arn:aws:iam::123456789012:role/MnemoAdmin"
    with_admin = json.loads(
        substitute(doc, access["Properties"]["Policy"], parameters(doc, OpenSearchAdminPrincipalArn=admin))
    )
    assert [s["Principal"] for s in with_admin if admin in s["Principal"]] == [[admin]]


def test_existing_domain_replaces_the_collection() -> None:
    doc = template()
    serverless_only = {
        "AWS::OpenSearchServerless::Collection",
        "AWS::OpenSearchServerless::SecurityPolicy",
        "AWS::OpenSearchServerless::AccessPolicy",
    }
    for name, resource in doc["Resources"].items():
        if resource["Type"] in serverless_only:
            assert resource.get("Condition") == "CreateCollection", name
    existing = parameters(
        doc,
        ExistingOpenSearchEndpoint="https://search-x.eu-west-1.es.amazonaws.com",
        ExistingOpenSearchDomainName="mnemo",
    )
    assert condition(doc, "CreateCollection", parameters(doc)) is True
    assert condition(doc, "CreateCollection", existing) is False
    env = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert choose(doc, env["MNEMO_OPENSEARCH_SERVICE"], parameters(doc)) == "aoss"
    assert choose(doc, env["MNEMO_OPENSEARCH_SERVICE"], existing) == "es"
    assert choose(doc, env["MNEMO_OPENSEARCH_ENDPOINT"], existing) == {"Ref": "ExistingOpenSearchEndpoint"}
    assert choose(doc, env["MNEMO_OPENSEARCH_ENDPOINT"], parameters(doc)) == {
        "GetAtt": "VectorCollection.CollectionEndpoint"
    }
    for name, statements in _statements(doc, existing).items():
        for statement in statements:
            actions = _actions(statement)
            if any(a.startswith(("es:", "aoss:")) for a in actions):
                assert all(a.startswith("es:ESHttp") for a in actions), name
                assert substitute(doc, statement["Resource"], existing) == (
                    "arn:aws:es:eu-west-1:123456789012:domain/mnemo/*"
                )


# -------------------------------------------------------------- permissions ---
def _statements(doc: dict[str, Any], params: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Each function's inline policy statements, for these parameters."""
    found: dict[str, list[dict[str, Any]]] = {}
    for name, resource in functions(doc).items():
        for policy in resource["Properties"].get("Policies", []):
            if isinstance(policy, dict) and "Statement" in policy:
                found.setdefault(name, []).extend(choose(doc, policy["Statement"], params))
    return found


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def _templates(resource: dict[str, Any]) -> dict[str, Any]:
    """SAM policy templates by name, with their arguments, and the records table statement by Sid, with its
    resource (RecordsRead, RecordsReadPut or RecordsReadWrite: tests/infra/test_template_rights.py checks its
    actions)."""
    policies = [policy for policy in resource["Properties"].get("Policies", []) if isinstance(policy, dict)]
    found = {name: args for policy in policies if "Statement" not in policy for name, args in policy.items()}
    for policy in policies:
        for statement in policy.get("Statement", []):
            if str(statement.get("Sid", "")).startswith("Records"):
                found[statement["Sid"]] = statement["Resource"]
    return found


# Reads only: a workspace file is read at the object version its head names (s3:GetObjectVersion).
READ_ONLY_ACTIONS = {
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "bedrock:InvokeModel",
    "aoss:APIAccessAll",
    "es:ESHttpGet",
    "es:ESHttpHead",
    "es:ESHttpPost",
    "s3:ListBucket",
    "s3:ListBucketVersions",
    "s3:GetObject",
    "s3:GetObjectVersion",
}


#: Tools whose catalog entry declares reads of the records table only.
READ_ONLY_TOOLS = frozenset(
    name for name, tool in load_catalog(experimental=True).items() if tool.rights.records == "read"
)


@pytest.mark.parametrize("tool", sorted(READ_ONLY_TOOLS))
def test_read_only_tools_get_read_only_policies(tool: str) -> None:
    """Every tool that declares reads only gets a function that can change nothing."""
    doc = template()
    (function,) = tool_functions(doc)[tool]
    assert list(_templates(doc["Resources"][function])) == ["RecordsRead"]
    existing = parameters(
        doc, ExistingOpenSearchEndpoint="https://x.es.amazonaws.com", ExistingOpenSearchDomainName="x"
    )
    for params in (parameters(doc), existing):
        for statement in _statements(doc, params).get(function, []):
            for action in _actions(statement):
                assert action in READ_ONLY_ACTIONS, (function, action)


def test_least_privilege_per_function() -> None:
    doc = template()
    table = {"Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/mnemo-records-${Stage}"}
    # Each function that runs tools gets the records statement of the most its tools declare; the indexer
    # deletes the index outbox's markers as it drains it (and sends to its dead-letter queue); the console
    # serves its own files from the layer: nothing of the stack's data.
    sids = {"read": "RecordsRead", "read-put": "RecordsReadPut", "read-write": "RecordsReadWrite"}
    expected_templates: dict[str, dict[str, Any]] = {
        name: {sids[_rights(tools).records]: table} for name, tools in _served_tools(doc).items()
    }
    expected_templates["IndexerFunction"] = {
        "RecordsReadWrite": table,
        "SQSSendMessagePolicy": {"QueueName": {"GetAtt": "IndexerDeadLetterQueue.QueueName"}},
    }
    expected_templates["ConsoleFunction"] = {}
    # Change events read only the stream (SAM's stream policy) and put events: nothing of the table.
    expected_templates["ChangeEventsFunction"] = {
        "SQSSendMessagePolicy": {"QueueName": {"GetAtt": "ChangeEventsDeadLetterQueue.QueueName"}}
    }
    assert {name: _templates(r) for name, r in functions(doc).items()} == expected_templates
    statements = _statements(doc, parameters(doc))
    titan_arn = f"arn:aws:bedrock:eu-west-1::foundation-model/{TITAN_V2}"
    extractor_arn = f"arn:aws:bedrock:eu-west-1::foundation-model/{EXTRACTOR_MODEL}"
    embeds = set()
    extracts = set()
    reaches_index = set()
    for name, found in statements.items():
        for statement in found:
            assert statement["Effect"] == "Allow"
            resource = statement["Resource"]
            assert resource != "*" and "*" not in json.dumps(resource).replace("/*", ""), (name, resource)
            actions = _actions(statement)
            assert not any(a.endswith("*") for a in actions), (name, actions)
            if "bedrock:InvokeModel" in actions:
                assert actions == ["bedrock:InvokeModel"]
                model = substitute(doc, resource, parameters(doc))
                assert model in (titan_arn, extractor_arn), (name, model)
                (embeds if model == titan_arn else extracts).add(name)
            if "aoss:APIAccessAll" in actions:
                assert resource == {"GetAtt": "VectorCollection.Arn"}
                reaches_index.add(name)
    # Exactly the functions running a tool that declares so embed, extract and reach the index (and the indexer).
    served = _served_tools(doc)
    assert embeds == {name for name, tools in served.items() if _rights(tools).embeds} | {"IndexerFunction"}
    assert extracts == {name for name, tools in served.items() if _rights(tools).extracts}
    assert reaches_index == {name for name, tools in served.items() if _rights(tools).index} | {"IndexerFunction"}


def _rights(tools: set[str]) -> Rights:
    catalog = load_catalog(experimental=True)
    return Rights.covering(catalog[name].rights for name in tools)


# What each catalog tool needs at run time (mnemo/*/service.py and the adapters they use): the
# records table, Titan, the vector index (as the es:ESHttp* methods its requests use on an existing
# domain) and the knowledge bucket (the S3 actions of mnemo/adapters/aws/s3_blobs.py it calls, each
# with what it is granted on: the bucket, every object, or the workspace files' objects only).
INDEX_READ = frozenset({"es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPost"})
INDEX_DELETE = INDEX_READ | {"es:ESHttpDelete"}
INDEX_WRITE = INDEX_DELETE | {"es:ESHttpPut"}
BUCKET = "bucket"
OBJECTS = "${KnowledgeBucket.Arn}/" + KNOWLEDGE_ROOT + "/*"  # knowledge readers reach no workspace file
WORKSPACE = "${KnowledgeBucket.Arn}/" + WORKSPACE_ROOT + "*"  # mnemo.files.scopes: every workspace's objects
S3_CURRENT = frozenset({("s3:ListBucket", BUCKET), ("s3:GetObject", OBJECTS)})  # sync lists the files, reads each
S3_HISTORY = frozenset({("s3:ListBucketVersions", BUCKET), ("s3:GetObjectVersion", OBJECTS)})  # knowledge_show
# A workspace file's head (in the table) names its object version: a read gets that version, a write puts a new
# one, a delete adds a delete marker (DeleteObject without a version id; the bucket keeps the versions). The file
# tools never list the bucket, and reach no object outside workspace/.
WS_READ = frozenset({("s3:GetObjectVersion", WORKSPACE)})
WS_WRITE = frozenset({("s3:PutObject", WORKSPACE)})
WS_DELETE = frozenset({("s3:DeleteObject", WORKSPACE)})
NONE: frozenset[Any] = frozenset()
INDEX_ACTIONS = {None: NONE, "read": INDEX_READ, "delete": INDEX_DELETE, "write": INDEX_WRITE}
PLACES = {"bucket": BUCKET, "knowledge": OBJECTS, "workspace": WORKSPACE}


def tool_needs(tool: Tool) -> tuple[str, bool, frozenset[str], frozenset[tuple[str, str]]]:
    """(records, embeds, index actions, S3 grants) as the tool's catalog entry declares them, in the terms the
    template's statements are read in below."""
    rights = tool.rights
    return (
        "read" if rights.records == "read" else "crud",
        rights.embeds,
        INDEX_ACTIONS[rights.index],
        frozenset((grant.action, PLACES[grant.place]) for grant in rights.bucket),
    )


EXISTING_DOMAIN = {"ExistingOpenSearchEndpoint": "https://x.es.amazonaws.com", "ExistingOpenSearchDomainName": "x"}


def _bedrock_function(family: str) -> str:
    return "Bedrock" + "".join(part.capitalize() for part in family.split("_")) + "Function"


def _served_tools(doc: dict[str, Any]) -> dict[str, set[str]]:
    """Function -> the catalog tools it runs, whatever the front door."""
    catalog = load_catalog(experimental=True)
    served = {ids[0]: {tool} for tool, ids in tool_functions(doc).items()}
    for family in {tool.family for tool in catalog.values()}:
        served[_bedrock_function(family)] = {name for name, tool in catalog.items() if tool.family == family}
    served["McpFunction"] = set(catalog)  # the outline tools only with ExperimentalTools, as the catalog says
    served["KnowledgeSyncFunction"] = {"sync_now"}  # the same sync, on a schedule and on bucket events
    # Re-outlines one workspace file on its bucket event, as every outline tool's refresh does.
    served["OutlineSyncFunction"] = {"outline_file"}
    # Runs on the extraction queues' notices what memory_extract runs on demand (its queue rights:
    # tests/infra/test_template_extraction.py).
    served["ExtractionFunction"] = {"memory_extract"}
    return served


def _s3_grants(statement: dict[str, Any]) -> set[tuple[str, str]]:
    """(action, what it is granted on) of a statement's S3 actions: BUCKET or the object ARN pattern."""
    actions = [a for a in _actions(statement) if a.startswith("s3:")]
    if not actions:
        return set()
    resource = statement["Resource"]
    where = BUCKET if resource == {"GetAtt": "KnowledgeBucket.Arn"} else resource["Sub"]
    return {(action, where) for action in actions}


def test_each_function_gets_exactly_what_its_tools_need() -> None:
    doc = template()
    catalog = load_catalog(experimental=True)
    served = _served_tools(doc)
    # None of these runs a tool.
    assert set(functions(doc)) - set(served) == {"IndexerFunction", "ConsoleFunction", "ChangeEventsFunction"}
    statements = _statements(doc, parameters(doc, **EXISTING_DOMAIN))
    for name, tools in served.items():
        needs = [tool_needs(catalog[tool]) for tool in tools]
        templates = _templates(doc["Resources"][name])
        actions = {a for statement in statements.get(name, []) for a in _actions(statement)}
        models = {
            substitute(doc, statement["Resource"], parameters(doc)).rsplit("/", 1)[1]
            for statement in statements.get(name, [])
            if "bedrock:InvokeModel" in _actions(statement)
        }
        found = (
            "read" if "RecordsRead" in templates else "crud",
            TITAN_V2 in models,
            EXTRACTOR_MODEL in models,
            {a for a in actions if a.startswith("es:")},
            {grant for statement in statements.get(name, []) for grant in _s3_grants(statement)},
        )
        expected = (
            "crud" if any(records == "crud" for records, *_ in needs) else "read",
            any(embeds for _, embeds, *_ in needs),
            any(catalog[tool].rights.extracts for tool in tools),
            set().union(*(index for *_, index, _ in needs)),
            set().union(*(s3 for *_, s3 in needs)),
        )
        assert found == expected, (name, sorted(tools))


# --------------------------------------------------------------- knowledge sync ---
def test_knowledge_sync_runs_on_a_schedule_and_on_knowledge_bucket_events() -> None:
    from mnemo.entry.sync_events import S3_DETAIL_TYPES

    doc = template()
    parameter = doc["Parameters"]["SyncSchedule"]
    assert parameter["Default"] == "rate(15 minutes)" and parameter["Description"]
    for expression in ("rate(15 minutes)", "rate(1 hour)", "cron(0 4 * * ? *)"):
        assert re.fullmatch(parameter["AllowedPattern"], expression), expression
    assert not re.fullmatch(parameter["AllowedPattern"], "every 15 minutes")
    sync = doc["Resources"]["KnowledgeSyncFunction"]["Properties"]
    assert sync["CodeUri"].rstrip("/") == "functions/knowledge_sync"
    assert "from mnemo.entry.sync_events import handler" in (ROOT / "functions/knowledge_sync/app.py").read_text()
    events = sync["Events"]
    assert sorted(event["Type"] for event in events.values()) == ["EventBridgeRule", "Schedule"]
    (schedule,) = (e["Properties"] for e in events.values() if e["Type"] == "Schedule")
    assert schedule["Schedule"] == {"Ref": "SyncSchedule"}
    (rule,) = (e["Properties"] for e in events.values() if e["Type"] == "EventBridgeRule")
    assert rule["Pattern"] == {
        "source": ["aws.s3"],
        "detail-type": sorted(S3_DETAIL_TYPES),
        "detail": {
            "bucket": {"name": [{"Ref": "KnowledgeBucket"}]},
            "object": {"key": [{"prefix": f"{KNOWLEDGE_ROOT}/"}]},
        },
    }
    assert "EventBusName" not in rule  # S3 sends its events to the default bus
    # Workspace files (the file tools') live under a root of their own: writing one never triggers a sync.
    assert not WORKSPACE_ROOT.startswith(f"{KNOWLEDGE_ROOT}/") and not KNOWLEDGE_ROOT.startswith(WORKSPACE_ROOT)
    queue_arn = {"GetAtt": "KnowledgeSyncDeadLetterQueue.Arn"}
    for event in (schedule, rule):
        assert event["DeadLetterConfig"] == {"Arn": queue_arn}
        assert 0 < event["RetryPolicy"]["MaximumRetryAttempts"] <= 185
        assert 60 <= event["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 86400
    # A delivered event whose sync fails (CONFLICT while the tenant syncs) lands there too.
    invoke = sync["EventInvokeConfig"]
    assert invoke["DestinationConfig"]["OnFailure"] == {"Type": "SQS", "Destination": queue_arn}
    assert 0 < invoke["MaximumRetryAttempts"] <= 2
    queue = doc["Resources"]["KnowledgeSyncDeadLetterQueue"]
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    # EventBridge needs the queue's leave to record what it could not deliver: the two rules only.
    (policy,) = [
        r["Properties"]
        for r in resources_of(doc, "AWS::SQS::QueuePolicy").values()
        if r["Properties"]["Queues"] == [{"Ref": "KnowledgeSyncDeadLetterQueue"}]
    ]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage" and statement["Resource"] == queue_arn
    rules = statement["Condition"]["ArnEquals"]["aws:SourceArn"]
    assert sorted(rules, key=str) == sorted(
        ({"GetAtt": f"KnowledgeSyncFunction{name}.Arn"} for name in events), key=str
    )
    (depth,) = [
        a
        for a in _alarms(doc).values()
        if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"
        and a["Dimensions"] == [{"Name": "QueueName", "Value": {"GetAtt": "KnowledgeSyncDeadLetterQueue.QueueName"}}]
    ]
    assert depth["Namespace"] == "AWS/SQS" and depth["Threshold"] == 0
    assert depth["ComparisonOperator"] == "GreaterThanThreshold"


def test_s3_rights_are_read_only_and_scoped_to_the_knowledge_bucket() -> None:
    """Knowledge files are only read; only workspace files (the file tools') are written, under their root; only
    erase_user deletes workspace object versions for good (an erased user's files keep no version)."""
    doc = template()
    bucket_actions = {"s3:ListBucket", "s3:ListBucketVersions"}
    object_actions = {"s3:GetObject", "s3:GetObjectVersion"}
    workspace_actions = {"s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion"}
    purge = {"s3:DeleteObject", "s3:DeleteObjectVersion"}
    workspace = {"Sub": "${KnowledgeBucket.Arn}/" + WORKSPACE_ROOT + "*"}
    assert WORKSPACE_ROOT == "workspace/"
    granted: dict[str, set[str]] = {}
    in_workspace: dict[str, set[str]] = {}
    for name, statements in _statements(doc, parameters(doc)).items():
        for statement in statements:
            actions = set(_actions(statement))
            if not any(a.startswith("s3:") for a in actions):
                continue
            assert statement["Effect"] == "Allow" and "Condition" not in statement, name
            if statement["Resource"] == workspace:
                assert statement["Sid"] == "WorkspaceObjects", name
                assert actions <= workspace_actions, (name, actions)
                in_workspace.setdefault(name, set()).update(actions)
                continue
            if actions <= bucket_actions:
                assert statement["Resource"] == {"GetAtt": "KnowledgeBucket.Arn"}, name
            else:
                assert actions <= object_actions, (name, actions)
                assert statement["Resource"] == {"Sub": "${KnowledgeBucket.Arn}/knowledge/*"}, name
            granted.setdefault(name, set()).update(actions)
    assert granted["KnowledgeSyncFunction"] == {"s3:ListBucket", "s3:GetObject"}
    assert granted["KnowledgeShowFunction"] == {"s3:ListBucketVersions", "s3:GetObjectVersion"}
    assert set(granted) == {
        "KnowledgeShowFunction",
        "SyncNowFunction",
        "KnowledgeSyncFunction",
        "BedrockKnowledgeFunction",
        "BedrockSyncFunction",
        "McpFunction",
        # erase_user lists a workspace key's versions to delete each of them
        "EraseUserFunction",
        "BedrockLifecycleFunction",
    }
    assert granted["EraseUserFunction"] == bucket_actions
    assert in_workspace == {
        "FileWriteFunction": {"s3:PutObject"},
        "FileEditFunction": {"s3:GetObjectVersion", "s3:PutObject"},
        "FileReadFunction": {"s3:GetObjectVersion"},
        "ExpandPromptFunction": {"s3:GetObjectVersion"},
        "FileDeleteFunction": {"s3:DeleteObject"},
        "BedrockFilesFunction": workspace_actions - {"s3:DeleteObjectVersion"},
        "McpFunction": workspace_actions,
        "EraseUserFunction": purge,
        "BedrockLifecycleFunction": purge,
        # The outline tools, their index sync and action group read workspace objects at their versions.
        "OutlineSymbolFunction": {"s3:GetObjectVersion"},
        "OutlineFileFunction": {"s3:GetObjectVersion"},
        "OutlineProjectFunction": {"s3:GetObjectVersion"},
        "OutlineSyncFunction": {"s3:GetObjectVersion"},
        "BedrockOutlineFunction": {"s3:GetObjectVersion"},
    }


def test_functions_that_run_sync_finish_well_before_its_lock_expires() -> None:
    """A run renews the tenant's lock each LOCK_RENEW_SECONDS; one cut short by its timeout keeps it until it
    expires, so the timeout must leave a live run time to renew, and a dead one frees the tenant soon after."""
    doc = template()
    runners = {name for name, tools in _served_tools(doc).items() if "sync_now" in tools}
    assert runners == {"SyncNowFunction", "KnowledgeSyncFunction", "BedrockSyncFunction", "McpFunction"}
    assert 2 * LOCK_RENEW_SECONDS < LOCK_SECONDS
    behind_the_api = {"SyncNowFunction", "McpFunction"}
    for name in runners:
        properties = doc["Resources"][name]["Properties"]
        timeout = properties.get("Timeout", doc["Globals"]["Function"]["Timeout"])
        assert timeout <= LOCK_SECONDS, (name, timeout)
        if name in behind_the_api:
            # API Gateway waits 29 s: the run stops itself at its deadline, releasing the lock, before the timeout.
            deadline = float(properties["Environment"]["Variables"]["MNEMO_REQUEST_DEADLINE_SECONDS"])
            assert deadline < timeout <= 29, (name, deadline, timeout)
        else:
            assert timeout >= 300, (name, timeout)


# ----------------------------------------------------------------- indexing ---
def test_indexer_consumes_the_records_stream_into_a_dead_letter_queue() -> None:
    doc = template()
    indexer = doc["Resources"]["IndexerFunction"]["Properties"]
    assert indexer["CodeUri"].rstrip("/") == "functions/indexer"
    assert indexer.get("Handler", doc["Globals"]["Function"]["Handler"]) == "app.handler"
    events = indexer["Events"]
    assert {e["Type"] for e in events.values()} == {"DynamoDB", "Schedule"}
    (schedule,) = (e["Properties"] for e in events.values() if e["Type"] == "Schedule")
    assert schedule["Schedule"].startswith("rate(")  # drains the index outbox
    (event,) = (e for e in events.values() if e["Type"] == "DynamoDB")
    stream = event["Properties"]
    assert stream["Stream"] == {
        "If": ["CreateRecordsTable", {"GetAtt": "RecordsTable.StreamArn"}, {"Ref": "ExistingRecordsTableStreamArn"}]
    }
    assert stream["StartingPosition"] == "TRIM_HORIZON"
    assert 1 <= stream["BatchSize"] <= 100
    assert stream["BisectBatchOnFunctionError"] is True
    assert stream["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert 0 < stream["MaximumRetryAttempts"] <= 10_000
    # Only what the indexer must see (mnemo.entry.indexer): markers queued for it, memory removals, and
    # TTL's removals of expired turns (the userIdentity DynamoDB documents for them).
    patterns = [json.loads(f["Pattern"]) for f in stream["FilterCriteria"]["Filters"]]
    assert patterns == [
        {"eventName": ["INSERT", "MODIFY"], "dynamodb": {"NewImage": {"stream": {"S": [STREAM_LABEL]}}}},
        {"eventName": ["REMOVE"], "dynamodb": {"Keys": {"sk": {"S": [{"prefix": "MEM#"}]}}}},
        {
            "eventName": ["REMOVE"],
            "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
            "dynamodb": {"Keys": {"sk": {"S": [{"prefix": "MSG#"}]}}},
        },
    ]
    destination = stream["DestinationConfig"]["OnFailure"]["Destination"]
    assert destination == {"GetAtt": "IndexerDeadLetterQueue.Arn"}
    queue = doc["Resources"]["IndexerDeadLetterQueue"]
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600


# ------------------------------------------------------------------- alarms ---
def _alarms(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in resources_of(doc, "AWS::CloudWatch::Alarm").items()}


def _metrics(alarm: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(namespace, metric, first dimension value) of a plain or metric-math alarm."""
    if "MetricName" in alarm:
        dimensions = alarm.get("Dimensions") or [{"Value": None}]  # a log metric filter's metric has none
        return [(alarm["Namespace"], alarm["MetricName"], dimensions[0]["Value"])]
    return [
        (
            m["MetricStat"]["Metric"]["Namespace"],
            m["MetricStat"]["Metric"]["MetricName"],
            m["MetricStat"]["Metric"]["Dimensions"][0]["Value"],
        )
        for m in alarm["Metrics"]
        if "MetricStat" in m
    ]


def _dimension_values(alarm: dict[str, Any]) -> list[Any]:
    return [dimension for _, _, dimension in _metrics(alarm)]


def _invokers(doc: dict[str, Any], name: str) -> set[str]:
    """What may invoke function ``name``: each Lambda permission's principal, each of its SAM events' type,
    and EventSourceMapping for a mapping of its own."""
    own = ({"Ref": name}, {"GetAtt": f"{name}.Arn"})
    found = {
        r["Properties"]["Principal"]
        for r in resources_of(doc, "AWS::Lambda::Permission").values()
        if permitted_function(r) in own
    }
    if any(
        r["Properties"]["FunctionName"] in own for r in resources_of(doc, "AWS::Lambda::EventSourceMapping").values()
    ):
        found.add("EventSourceMapping")
    return found | {event["Type"] for event in (functions(doc)[name]["Properties"].get("Events") or {}).values()}


def test_alarms_watch_groups_of_functions_and_every_dead_letter_queue() -> None:
    """Each function's failures reach one kind of alarm: the API's 5xx for a function only API Gateway invokes
    (each failure of it is a 5xx: 500 for a refused invocation, a throttle included, 502 for a crash, 504 past
    the timeout), the action groups' metric-math alarm for a Bedrock action group function, its own Errors alarm
    for a function behind an event source; and the account's Throttles (no dimension) for every one of them,
    which holds since none reserves concurrency of its own. Each dead-letter queue's depth alarms."""
    doc = template()
    alarms = _alarms(doc)
    watched = {
        # A namespace may be a !Sub, a metric an !If (the vector store's throttles).
        (
            ns if isinstance(ns, str) else json.dumps(ns),
            metric if isinstance(metric, str) else json.dumps(metric),
            json.dumps(dim),
        )
        for a in alarms.values()
        for ns, metric, dim in _metrics(a)
    }
    behind_api = [name for name in functions(doc) if _invokers(doc, name) == {"apigateway.amazonaws.com"}]
    action_groups = [name for name in functions(doc) if _invokers(doc, name) == {"bedrock.amazonaws.com"}]
    catalog = load_catalog(experimental=True)
    assert len(behind_api) == len(catalog) + 2  # every tool's, MCP's, the console's
    assert len(action_groups) == len({tool.family for tool in catalog.values()})
    for name in functions(doc):
        errors = ("AWS/Lambda", "Errors", json.dumps({"Ref": name}))
        assert (errors in watched) is (name not in behind_api), name  # the API's 5xx sees those
        assert "ReservedConcurrentExecutions" not in functions(doc)[name]["Properties"], name
    (group,) = [
        a for a in alarms.values() if "Metrics" in a and {"Ref": "BedrockMemoryFunction"} in _dimension_values(a)
    ]
    assert group["AlarmName"] == {"Sub": "mnemo-${Stage}-bedrock-action-groups-errors"}
    assert ("AWS/Lambda", "Throttles", "null") in watched  # the account's, every function's
    assert not [a for a in alarms.values() for ns, metric, dim in _metrics(a) if metric == "Throttles" and dim]
    apis = {"Api5xxAlarm": ("5XXError", "RestApiAlarms"), "HttpApi5xxAlarm": ("5xx", "HttpApiAlarms")}
    for name, (metric, needs) in apis.items():
        assert (alarms[name]["Namespace"], alarms[name]["MetricName"]) == ("AWS/ApiGateway", metric)
        assert doc["Resources"][name]["Condition"] == needs
    depths = [a for a in alarms.values() if a.get("MetricName") == "ApproximateNumberOfMessagesVisible"]
    # The extraction queues hold work in passing (their depth is no failure); their dead-letter queues alarm.
    dead_letter_queues = [queue for queue in resources_of(doc, "AWS::SQS::Queue") if queue.endswith("DeadLetterQueue")]
    assert set(resources_of(doc, "AWS::SQS::Queue")) - set(dead_letter_queues) == {
        "ExtractionQueue",
        "ExtractionWakeQueue",
    }
    assert sorted(json.dumps(a["Dimensions"]) for a in depths) == sorted(
        json.dumps([{"Name": "QueueName", "Value": {"GetAtt": f"{queue}.QueueName"}}]) for queue in dead_letter_queues
    ), "one depth alarm per dead-letter queue"
    for depth in depths:
        assert depth["Namespace"] == "AWS/SQS"
        assert depth["Threshold"] == 0 and depth["ComparisonOperator"] == "GreaterThanThreshold"
    topic = "arn:aws:sns:eu-west-1:123456789012:alarms"
    for name, alarm in alarms.items():
        assert alarm["Threshold"] >= 0 and alarm["TreatMissingData"] == "notBreaching", name
        assert choose(doc, alarm, parameters(doc, AlarmTopicArn=topic))["AlarmActions"] == [{"Ref": "AlarmTopicArn"}]
        assert "AlarmActions" not in choose(doc, alarm, parameters(doc)), name


def test_metric_math_alarms_stay_within_cloudwatch_limits() -> None:
    """A metric-math alarm may read at most 10 metrics, a hard limit that only a deployment would hit."""
    for name, alarm in _alarms(template()).items():
        if "Metrics" not in alarm:
            continue
        stats = [m["Id"] for m in alarm["Metrics"] if "MetricStat" in m]
        assert len(stats) <= 10, (name, len(stats))
        (total,) = [m for m in alarm["Metrics"] if m.get("ReturnData")]
        assert sorted(total["Expression"].replace(" ", "").split("+")) == sorted(stats), name


# ---------------------------------------------------- environment and outputs ---
#: Variables the front doors read for identity (mnemo.entry.identity), not settings.
IDENTITY_VARIABLES = {"MNEMO_API_KEY_TENANT", "MNEMO_TRUSTED_DELEGATES", "MNEMO_JWT_CLAIMS"}


def test_every_function_gets_the_aws_adapters_from_settings() -> None:
    doc = template()
    env = doc["Globals"]["Function"]["Environment"]["Variables"]
    fields = set(Settings.model_fields)
    for variable in env:
        if variable.startswith("MNEMO_") and variable not in {"MNEMO_STAGE", *IDENTITY_VARIABLES}:
            assert variable.removeprefix("MNEMO_").lower() in fields, f"{variable} is no setting"
    params = parameters(doc)
    settings = Settings.from_env(
        {
            key: value if isinstance(value, str) else params.get(value.get("Ref", ""), "placeholder")
            for key, value in choose(doc, env, params).items()
            if key.startswith("MNEMO_") and key not in IDENTITY_VARIABLES
        }
        | {"MNEMO_TITAN_DIMENSIONS": params["TitanDimensions"], "MNEMO_OPENSEARCH_SERVICE": "aoss"}
    )
    assert (settings.records, settings.vector_index, settings.embedder, settings.blobs, settings.events) == (
        "dynamodb",
        "opensearch",
        "titan",
        "s3",
        "local",  # nothing publishes events (docs/deploy.md, "Rights")
    )
    assert env["MNEMO_RECORDS_TABLE"] == {"Sub": "mnemo-records-${Stage}"}
    assert env["MNEMO_BLOB_BUCKET"] == {"Ref": "KnowledgeBucket"}
    assert env["MNEMO_TITAN_DIMENSIONS"] == {"Ref": "TitanDimensions"}
    assert "MNEMO_EVENTS" not in env and "MNEMO_EVENT_BUS" not in env and "EventBusName" not in params
    assert env["MNEMO_EXPERIMENTAL"] == {"Ref": "ExperimentalTools"} and settings.experimental is False
    titan = doc["Parameters"]["TitanDimensions"]
    assert titan["Default"] == "1024" and titan["AllowedValues"] == ["256", "512", "1024"]
    assert choose(doc, env["MNEMO_TITAN_MODEL_ID"], params) == {"FindInMap": ["Titan", "Model", "Id"]}
    assert doc["Mappings"]["Titan"]["Model"]["Id"] == TITAN_V2


def test_the_block_budget_is_a_parameter_given_to_the_functions_that_check_it() -> None:
    """MNEMO_BLOCK_BUDGET_TOKENS (mnemo/files/pinning.py) reaches every function running a tool that checks or
    reports the pinned budget; the parameter's default and bounds are the setting's."""
    doc = template()
    parameter = doc["Parameters"]["BlockBudgetTokens"]
    field = Settings.model_fields["block_budget_tokens"]
    assert parameter["Type"] == "Number" and parameter["Default"] == field.default == 100_000
    bounds = {type(m).__name__: m for m in field.metadata}
    assert parameter["MinValue"] == bounds["Ge"].ge and parameter["MaxValue"] == bounds["Le"].le
    assert Settings.from_env({"MNEMO_BLOCK_BUDGET_TOKENS": "250"}).block_budget_tokens == 250
    assert "MNEMO_BLOCK_BUDGET_TOKENS" not in doc["Globals"]["Function"]["Environment"]["Variables"]
    budgeted = {name for name, tool in load_catalog(experimental=True).items() if tool.runtime.block_budget}
    for name, tools in _served_tools(doc).items():
        env = doc["Resources"][name]["Properties"].get("Environment", {}).get("Variables", {})
        if tools & budgeted:
            assert env.get("MNEMO_BLOCK_BUDGET_TOKENS") == {"Ref": "BlockBudgetTokens"}, name
        else:
            assert "MNEMO_BLOCK_BUDGET_TOKENS" not in env, name


def test_the_extraction_model_is_a_parameter_given_to_the_functions_that_extract() -> None:
    """build_memory_from_text runs on Bedrock Converse with the ExtractorModelId model (mnemo/adapters/aws/
    bedrock_extractor.py): every function running it gets MNEMO_EXTRACTOR=bedrock, the model id and the right to
    invoke that model (Converse is authorised by bedrock:InvokeModel); no other function gets any of them."""
    doc = template()
    parameter = doc["Parameters"]["ExtractorModelId"]
    assert parameter["Type"] == "String" and parameter["Description"]
    assert parameter["Default"] == Settings.model_fields["extractor_model_id"].default == EXTRACTOR_MODEL
    assert re.fullmatch(parameter["AllowedPattern"], EXTRACTOR_MODEL)
    assert re.fullmatch(parameter["AllowedPattern"], "anthropic.claude-3-haiku-20240307-v1:0")
    assert not re.fullmatch(parameter["AllowedPattern"], "*")
    env = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert "MNEMO_EXTRACTOR" not in env and "MNEMO_EXTRACTOR_MODEL_ID" not in env
    settings = Settings.from_env({"MNEMO_EXTRACTOR": "bedrock", "MNEMO_EXTRACTOR_MODEL_ID": "eu.model:1"})
    assert (settings.extractor_kind, settings.extractor_model_id) == ("bedrock", "eu.model:1")
    model_arn = {"Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${ExtractorModelId}"}
    statements = _statements(doc, parameters(doc))
    for name, tools in _served_tools(doc).items():
        variables = doc["Resources"][name]["Properties"].get("Environment", {}).get("Variables", {})
        extracting = [s for s in statements.get(name, []) if s["Resource"] == model_arn]
        if _rights(tools).extracts:
            assert variables.get("MNEMO_EXTRACTOR") == "bedrock", name
            assert variables.get("MNEMO_EXTRACTOR_MODEL_ID") == {"Ref": "ExtractorModelId"}, name
            assert [(s["Sid"], _actions(s)) for s in extracting] == [("ExtractWithModel", ["bedrock:InvokeModel"])]
            # Several model calls take far longer than the tools' default timeout; behind API Gateway the
            # deadline refuses what cannot end in time (test_template_extractor_model.py).
            properties = doc["Resources"][name]["Properties"]
            timeout = properties.get("Timeout", doc["Globals"]["Function"]["Timeout"])
            assert timeout >= 60 or "MNEMO_REQUEST_DEADLINE_SECONDS" in variables, (name, timeout)
        else:
            assert "MNEMO_EXTRACTOR" not in variables and "MNEMO_EXTRACTOR_MODEL_ID" not in variables, name
            assert not extracting, name
    assert "MNEMO_EXTRACTOR" not in json.dumps(doc["Resources"]["IndexerFunction"])


def test_observability() -> None:
    doc = template()
    globals_ = doc["Globals"]["Function"]
    assert globals_["Tracing"] == {"If": ["TracingOn", "Active", "PassThrough"]}  # test_template_observability.py
    env = globals_["Environment"]["Variables"]
    assert env["POWERTOOLS_SERVICE_NAME"] == "mnemo"
    assert env["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
    assert env["POWERTOOLS_METRICS_NAMESPACE"]
    log_groups = resources_of(doc, "AWS::Logs::LogGroup")
    for name, resource in functions(doc).items():
        group = resource["Properties"]["LoggingConfig"]["LogGroup"]
        assert group["Ref"] in log_groups, name
        assert log_groups[group["Ref"]]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_outputs() -> None:
    outputs = template()["Outputs"]
    assert "execute-api" in outputs["ApiUrl"]["Value"]["Sub"][0]  # per AuthMode: test_template_auth_modes.py
    assert outputs["RecordsTableName"]["Value"] == {"Sub": "mnemo-records-${Stage}"}
    assert outputs["KnowledgeBucketName"]["Value"] == {"Ref": "KnowledgeBucket"}
    assert outputs["CollectionEndpoint"] == {
        "Condition": "CreateCollection",
        "Description": outputs["CollectionEndpoint"]["Description"],
        "Value": {"GetAtt": "VectorCollection.CollectionEndpoint"},
    }
    assert outputs["OpenSearchEndpoint"]["Value"]["If"][0] == "CreateCollection"


@pytest.mark.parametrize("environment", ["dev", "prod"])
def test_samconfig_environments_name_real_parameters(environment: str) -> None:
    import tomllib

    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    deploy = config[environment]["deploy"]["parameters"]
    overrides = dict(pair.split("=", 1) for pair in deploy["parameter_overrides"].split())
    doc = template()
    for name, value in overrides.items():
        spec = doc["Parameters"][name]
        assert value in [str(v) for v in spec.get("AllowedValues", [value])], (name, value)
    assert overrides["Stage"] == environment
    assert config[environment]["global"]["parameters"]["stack_name"] == f"mnemo-{environment}"


def test_the_mcp_function_serves_slash_mcp_and_may_write_the_vector_index() -> None:
    doc = template()
    mcp = doc["Resources"]["McpFunction"]["Properties"]
    assert mcp["CodeUri"].rstrip("/") == "functions/mcp"
    for api in APIS:
        assert integrated_function(route_items(doc, api)["/mcp"]) == "McpFunction", api
    assert (ROOT / "functions" / "mcp" / "app.py").is_file()
    assert "${McpFunctionRole.Arn}" in json.dumps(doc["Resources"])


def test_the_index_outbox_dead_letters_raise_an_alarm() -> None:
    """The indexer's drain publishes ``IndexOutboxDeadLetters`` in EMF (the functions' metrics namespace,
    dimension service); an alarm watches it (tests/entry/test_observability.py sees it published)."""
    doc = template()
    namespace = doc["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    alarm = _alarms(doc)["IndexOutboxDeadLettersAlarm"]
    assert (alarm["Namespace"], alarm["MetricName"]) == (namespace, "IndexOutboxDeadLetters")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "mnemo"}]
    assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"


# ---------------------------------------------------------- experimental tools ---
OUTLINE_FUNCTIONS = {
    "OutlineSymbolFunction",
    "OutlineFileFunction",
    "OutlineProjectFunction",
    "OutlineSyncFunction",
    "BedrockOutlineFunction",
}


def test_experimental_tools_are_a_parameter_off_by_default() -> None:
    doc = template()
    parameter = doc["Parameters"]["ExperimentalTools"]
    assert parameter["Type"] == "String" and parameter["Default"] == "false"
    assert parameter["AllowedValues"] == ["true", "false"]
    assert "experimental" in parameter["Description"] and "outline" in parameter["Description"]
    assert doc["Conditions"]["ServeExperimental"] == {"Equals": [{"Ref": "ExperimentalTools"}, "true"]}
    assert condition(doc, "ServeExperimental", parameters(doc)) is False
    assert condition(doc, "ServeExperimental", parameters(doc, ExperimentalTools="true")) is True
    # Every function's catalog serves the experimental tools exactly when they are deployed.
    env = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert env["MNEMO_EXPERIMENTAL"] == {"Ref": "ExperimentalTools"}
    for value, served in (("true", True), ("false", False)):
        assert Settings.from_env({"MNEMO_EXPERIMENTAL": value}).experimental is served
    for name, resource in functions(doc).items():
        assert "MNEMO_EXPERIMENTAL" not in resource["Properties"].get("Environment", {}).get("Variables", {}), name


def test_only_the_experimental_tools_functions_are_conditional() -> None:
    doc = template()
    experimental = experimental_tools()
    assert experimental == {"outline_symbol", "outline_file", "outline_project"}
    assert experimental.isdisjoint(load_catalog(experimental=False))
    for tool, (function,) in tool_functions(doc).items():
        resource = doc["Resources"][function]
        if tool in experimental:
            assert resource.get("Condition") == "ServeExperimental", function
            assert resource["Properties"]["Description"].startswith(f"Tool {tool}: "), function
        else:
            assert "Condition" not in resource, function
    conditional = {name for name, r in functions(doc).items() if "Condition" in r}
    assert conditional == OUTLINE_FUNCTIONS | {"ConsoleFunction", "ChangeEventsFunction"}
    assert doc["Resources"]["ChangeEventsFunction"]["Condition"] == "ChangeEventsOn"  # docs/events.md
    assert doc["Resources"]["ConsoleFunction"]["Condition"] == "ServeConsole"  # tests/infra/test_template_console.py
    for name in OUTLINE_FUNCTIONS:
        assert doc["Resources"][name]["Condition"] == "ServeExperimental", name


def _mentions(node: Any, names: set[str]) -> bool:
    text = json.dumps(node)
    return any(re.search(rf"\b{name}\b", text) for name in names)


def test_the_default_deployment_creates_nothing_experimental() -> None:
    """Each resource (and output) of the outline tools carries ServeExperimental, false for the default; nothing
    created by default refers to one of them, except under that condition."""
    doc = template()
    default = parameters(doc)
    assert default["ExperimentalTools"] == "false"
    # The errors alarm of the experimental families' action groups is named for the condition.
    outline = {name for name in doc["Resources"] if "Outline" in name} | {"ExperimentalBedrockActionGroupsErrorsAlarm"}
    assert outline >= OUTLINE_FUNCTIONS
    assert {"OutlineSyncDeadLetterQueue", "OutlineSyncDeadLetterQueuePolicy"} <= outline
    for name in outline:
        resource = doc["Resources"][name]
        # An outline function's alarms also need the Alarms parameter (ExperimentalAlarms), its version and alias
        # the SnapStart parameter (ExperimentalSnapStart).
        expected = {
            "AWS::CloudWatch::Alarm": "ExperimentalAlarms",
            "AWS::Lambda::Version": "ExperimentalSnapStart",
            "AWS::Lambda::Alias": "ExperimentalSnapStart",
        }.get(resource["Type"], "ServeExperimental")
        assert resource.get("Condition") == expected, name
        assert condition(doc, resource["Condition"], default) is False, name
        every = parameters(doc, ExperimentalTools="true", Alarms="on", SnapStart="on")
        assert condition(doc, resource["Condition"], every), name
    for name, output in doc["Outputs"].items():
        if "Outline" in name or _mentions(output, outline):
            assert output.get("Condition") == "ServeExperimental", name
    with_agent = parameters(doc, CreateBedrockAgent="true", BedrockAgentAllFamilies="true")
    for params in (default, with_agent):
        for name, resource in doc["Resources"].items():
            if name in outline or ("Condition" in resource and not condition(doc, resource["Condition"], params)):
                continue
            created = choose(doc, resource, params)
            assert not _mentions(created, outline), f"{name} refers to an experimental resource"
            assert not _mentions(created, experimental_tools() | {"mnemo-outline"}), name
    # Deployed with the parameter, the agent's outline group still needs BedrockAgentAllFamilies.
    assert doc["Conditions"]["AgentHasOutline"] == {
        "And": [{"Condition": "AgentHasAllFamilies"}, {"Condition": "ServeExperimental"}]
    }


def test_the_outline_sync_runs_on_workspace_object_events() -> None:
    from mnemo.entry.outline_events import S3_DETAIL_TYPES

    doc = template()
    sync = doc["Resources"]["OutlineSyncFunction"]
    assert sync["Condition"] == "ServeExperimental"
    properties = sync["Properties"]
    assert properties["CodeUri"].rstrip("/") == "functions/outline_sync"
    assert properties.get("Handler", doc["Globals"]["Function"]["Handler"]) == "app.handler"
    source = (ROOT / "functions/outline_sync/app.py").read_text()
    assert "from mnemo.entry.outline_events import handler" in source
    (event,) = properties["Events"].values()
    assert event["Type"] == "EventBridgeRule"
    rule = event["Properties"]
    assert rule["Pattern"] == {
        "source": ["aws.s3"],
        "detail-type": sorted(S3_DETAIL_TYPES),
        "detail": {
            "bucket": {"name": [{"Ref": "KnowledgeBucket"}]},
            "object": {"key": [{"prefix": WORKSPACE_ROOT}]},
        },
    }
    assert "EventBusName" not in rule  # S3 sends its events to the default bus
    bucket = doc["Resources"]["KnowledgeBucket"]["Properties"]
    assert bucket["NotificationConfiguration"]["EventBridgeConfiguration"] == {"EventBridgeEnabled": True}
    # Knowledge files never reach it, workspace files never reach knowledge sync.
    assert not WORKSPACE_ROOT.startswith(f"{KNOWLEDGE_ROOT}/")
    queue_arn = {"GetAtt": "OutlineSyncDeadLetterQueue.Arn"}
    assert rule["DeadLetterConfig"] == {"Arn": queue_arn}
    assert 0 < rule["RetryPolicy"]["MaximumRetryAttempts"] <= 185
    assert 60 <= rule["RetryPolicy"]["MaximumEventAgeInSeconds"] <= 86400
    invoke = properties["EventInvokeConfig"]
    assert invoke["DestinationConfig"]["OnFailure"] == {"Type": "SQS", "Destination": queue_arn}
    assert 0 < invoke["MaximumRetryAttempts"] <= 2
    queue = doc["Resources"]["OutlineSyncDeadLetterQueue"]
    assert queue["Condition"] == "ServeExperimental"
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    (policy,) = [
        r
        for r in resources_of(doc, "AWS::SQS::QueuePolicy").values()
        if r["Properties"]["Queues"] == [{"Ref": "OutlineSyncDeadLetterQueue"}]
    ]
    assert policy["Condition"] == "ServeExperimental"
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"} and statement["Action"] == "sqs:SendMessage"
    assert statement["Resource"] == queue_arn
    assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == [
        {"GetAtt": "OutlineSyncFunctionWorkspaceObjects.Arn"}
    ]
    # Exactly its rights: the records table (read the heads, put and delete outline items), the workspace
    # objects' versions; nothing of Bedrock, the index or the knowledge files.
    assert _templates(sync) == {
        "RecordsReadWrite": {
            "Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/mnemo-records-${Stage}"
        }
    }
    for params in (parameters(doc), parameters(doc, **EXISTING_DOMAIN)):
        (statement,) = [s for s in _statements(doc, params)["OutlineSyncFunction"] if s["Sid"] != "RecordsReadWrite"]
        assert statement == {
            "Sid": "WorkspaceObjects",
            "Effect": "Allow",
            "Action": "s3:GetObjectVersion",
            "Resource": {"Sub": "${KnowledgeBucket.Arn}/" + WORKSPACE_ROOT + "*"},
        }


def test_the_outline_functions_are_logged_and_alarmed() -> None:
    """The outline tools' functions fail as the API's 5xx; the sync and the action group have Errors alarms of
    their own condition (the action group's in the experimental families' metric-math alarm)."""
    doc = template()
    alarms = _alarms(doc)
    for name in OUTLINE_FUNCTIONS:
        group = doc["Resources"][name]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        assert doc["Resources"][group]["Condition"] == "ServeExperimental", name
        errors = [
            alarm
            for alarm, properties in alarms.items()
            if ("AWS/Lambda", "Errors", {"Ref": name}) in _metrics(properties)
        ]
        behind_api = _invokers(doc, name) == {"apigateway.amazonaws.com"}
        expected = [] if behind_api else ["ExperimentalAlarms"]
        assert [doc["Resources"][alarm]["Condition"] for alarm in errors] == expected, name
    assert _metrics(alarms["ExperimentalBedrockActionGroupsErrorsAlarm"]) == [
        ("AWS/Lambda", "Errors", {"Ref": "BedrockOutlineFunction"})
    ]
