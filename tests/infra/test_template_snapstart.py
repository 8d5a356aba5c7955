"""The SnapStart parameter: the API's functions on published snapshots (codegen/mnemo_codegen/template_snapstart.py).

``SnapStart=on``: every tool's function and MCP's get SnapStart on published versions, a version and an alias
``live``, and both APIs and API Gateway's permissions name the alias. ``off`` (the default): none of it is
created, and the routes and permissions name the functions themselves, as before the parameter. A version's
description and its function's ``SNAPSTART_SNAPSHOT`` variable are the same fingerprint, which changes with
what the version runs (the template's text for the function and what it reaches, the layer, the bounded
parameters it reads); docs/deploy.md names the parameters it cannot follow.

Read as YAML with the conditions evaluated here; then the real SAM transform (samtranslator, in the SAM virtual
environment .venv/sam, as tests/infra/sam_transform.py runs it) for both values, and cfn-lint on its output and
on template.yaml itself.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from cost_model import TemplateResolver
from infra.test_template import (
    APIS,
    choose,
    condition,
    experimental_tools,
    functions,
    parameters,
    resources_of,
    template,
)
from rehearsal_build import REGION, SAM_VENV

from mnemo.tools.registry import load_catalog
from mnemo_codegen.template_names import function_id
from mnemo_codegen.template_snapstart import (
    ALIAS,
    MARKER,
    MAX_DESCRIPTION,
    FingerprintTooLong,
    alias_id,
    fingerprint,
    version_id,
)

ROOT = Path(__file__).resolve().parents[2]
ON = {"SnapStart": "on", "ExperimentalTools": "true"}
#: CloudFormation's limits on a template: its resources, and its body's bytes (read from S3, as `sam deploy` sends
#: it).
MAX_RESOURCES = 500
MAX_BODY_BYTES = 1_000_000


def api_functions() -> set[str]:
    """The functions behind the API: every tool's (experimental ones too) and MCP's."""
    return {function_id(tool) for tool in load_catalog(experimental=True).values()} | {"McpFunction"}


def variables(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return dict(doc["Resources"][name]["Properties"].get("Environment", {}).get("Variables", {}))


def created(doc: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
    """The resources these parameters create, each with its !If chosen."""
    return {
        name: choose(doc, resource, params)
        for name, resource in doc["Resources"].items()
        if "Condition" not in resource or condition(doc, resource["Condition"], params)
    }


def routes(doc: dict[str, Any], api: str, params: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Path -> its one operation, as these parameters deploy the API's body (a path they leave out is absent)."""
    paths = choose(doc, doc["Resources"][api]["Properties"]["DefinitionBody"]["paths"], params)
    return {path: next(iter(item.values())) for path, item in paths.items()}


def invoked(operation: dict[str, Any]) -> str:
    """What an API route's integration invokes: the ``${...}`` its chosen URI names."""
    (target,) = re.findall(
        r"functions/\$\{([\w.]+)\}/invocations", operation["x-amazon-apigateway-integration"]["uri"]["Sub"]
    )
    return str(target)


# ---------------------------------------------------------------- parameter ---
def test_the_parameter_is_off_by_default_and_on_turns_its_conditions_on() -> None:
    doc = template()
    spec = doc["Parameters"]["SnapStart"]
    assert (spec["Default"], spec["AllowedValues"]) == ("off", ["on", "off"])
    for params, snapstart, experimental in (
        (parameters(doc), False, False),
        (parameters(doc, SnapStart="on"), True, False),
        (parameters(doc, ExperimentalTools="true"), False, False),
        (parameters(doc, **ON), True, True),
    ):
        assert condition(doc, "SnapStartOn", params) is snapstart
        assert condition(doc, "ExperimentalSnapStart", params) is experimental


def test_only_the_functions_behind_the_api_get_snapstart() -> None:
    """Every tool's function and MCP's; not the console's (static files), the Bedrock action groups' (they answer
    agents), nor the event-driven ones (nobody waits on their cold start)."""
    doc = template()
    with_property = {name for name, resource in functions(doc).items() if "SnapStart" in resource["Properties"]}
    assert with_property == api_functions()
    marked = {name for name in functions(doc) if MARKER in variables(doc, name)}
    assert marked == api_functions()
    versions = {r["Properties"]["FunctionName"]["Ref"] for r in resources_of(doc, "AWS::Lambda::Version").values()}
    aliases = {r["Properties"]["FunctionName"]["Ref"] for r in resources_of(doc, "AWS::Lambda::Alias").values()}
    assert versions == aliases == api_functions()


# ----------------------------------------------------------------------- on ---
def test_on_every_api_function_runs_a_published_snapshot_through_its_alias() -> None:
    doc = template()
    params = parameters(doc, **ON)
    stack = created(doc, params)
    for name in api_functions():
        function = stack[name]["Properties"]
        assert function["SnapStart"] == {"ApplyOn": "PublishedVersions"}, name
        version, alias = stack[version_id(name)], stack[alias_id(name)]
        assert version["Properties"]["FunctionName"] == {"Ref": name}
        assert alias["Properties"] == {
            "Name": ALIAS,
            "FunctionName": {"Ref": name},
            "FunctionVersion": {"GetAtt": f"{version_id(name)}.Version"},
        }
        # The version's description is the fingerprint the function carries: a new one is a new configuration.
        assert version["Properties"]["Description"] == function["Environment"]["Variables"][MARKER], name
    for api in APIS:
        for path, operation in routes(doc, api, params).items():
            target = invoked(operation)
            if path.startswith(("/v1/tools/", "/mcp")):
                assert target in {alias_id(name) for name in api_functions()}, (api, path)
            else:  # the console's routes: its function has no SnapStart
                assert target == "ConsoleFunction.Arn", (api, path)
    permitted = [r["Properties"]["FunctionName"] for r in stack.values() if r["Type"] == "AWS::Lambda::Permission"]
    for name in api_functions():
        assert {"Ref": alias_id(name)} in permitted and {"Ref": name} not in permitted, name


def test_the_experimental_tools_versions_exist_only_with_their_functions() -> None:
    doc = template()
    for tool in experimental_tools():
        name = function_id(load_catalog(experimental=True)[tool])
        for resource in (version_id(name), alias_id(name)):
            assert doc["Resources"][resource]["Condition"] == "ExperimentalSnapStart"
    others = api_functions() - {function_id(load_catalog(experimental=True)[t]) for t in experimental_tools()}
    for name in others:
        assert doc["Resources"][version_id(name)]["Condition"] == "SnapStartOn", name


# ---------------------------------------------------------------------- off ---
def test_off_creates_none_of_it_and_the_api_invokes_the_functions() -> None:
    doc = template()
    for params in (parameters(doc), parameters(doc, ExperimentalTools="true")):
        stack = created(doc, params)
        kinds = {resource["Type"] for resource in stack.values()}
        assert not kinds & {"AWS::Lambda::Version", "AWS::Lambda::Alias"}
        text = json.dumps(stack)
        assert "SnapStart" not in text and MARKER not in text and "LiveAlias" not in text
        deployed = {name for name in api_functions() if name in stack}
        for api in APIS:
            for path, operation in routes(doc, api, params).items():
                if path.startswith(("/v1/tools/", "/mcp")):
                    assert invoked(operation) in {f"{name}.Arn" for name in deployed}, path
        permitted = [r["Properties"]["FunctionName"] for r in stack.values() if r["Type"] == "AWS::Lambda::Permission"]
        assert all({"Ref": name} in permitted for name in deployed)


# -------------------------------------------------------------- fingerprint ---
def test_the_template_holds_each_functions_current_fingerprint() -> None:
    doc = template()
    for name in api_functions():
        printed = fingerprint(doc, name)
        text, layers = doc["Resources"][version_id(name)]["Properties"]["Description"]["Sub"]
        assert text == printed.text(), name
        assert layers == {"SharedLayerVersion": {"Select": [7, {"Split": [":", {"Ref": "SharedLayer"}]}]}}
        # Each parameter the description names has a longest value, and its worst case fits a description.
        for parameter in printed.parameters:
            spec = doc["Parameters"][parameter]
            assert spec.get("AllowedValues") or "MaxLength" in spec or spec["Type"] == "Number", parameter
        for parameter in printed.untracked:
            spec = doc["Parameters"][parameter]
            assert not spec.get("AllowedValues") and "MaxLength" not in spec and spec["Type"] != "Number", parameter


def test_the_fingerprint_names_the_settings_an_operator_changes() -> None:
    doc = template()
    for name in api_functions():
        tracked = set(fingerprint(doc, name).parameters)
        assert {"LogLevel", "Tracing", "Stage", "ExtractionStrategies", "OpenSearchStandbyReplicas"} <= tracked, name


def _digest(doc: dict[str, Any], name: str) -> str:
    return fingerprint(doc, name).digest


def test_the_fingerprint_follows_what_the_version_runs() -> None:
    doc = template()
    before = {name: _digest(doc, name) for name in ("AddMessagesFunction", "MemorySearchFunction", "McpFunction")}

    def changed(edit: Any) -> set[str]:
        edited = copy.deepcopy(doc)
        edit(edited)
        return {name for name, digest in before.items() if _digest(edited, name) != digest}

    resources = "Resources"
    # Its own configuration, and the configuration every function shares.
    assert changed(lambda d: d[resources]["MemorySearchFunction"]["Properties"].update(MemorySize=512)) == {
        "MemorySearchFunction"
    }
    assert changed(lambda d: d["Globals"]["Function"].update(Timeout=28)) == set(before)
    # A resource it reaches (its queue's URL), and not the functions that do not reach it.
    assert changed(lambda d: d[resources]["ExtractionQueue"]["Properties"].update(VisibilityTimeout=901)) == {
        "AddMessagesFunction",
        "McpFunction",
    }
    # A condition it evaluates (the collection's name, hence its endpoint).
    assert changed(lambda d: d["Conditions"].update(StandbyReplicasEnabled={"Equals": ["x", "x"]})) == set(before)
    # Not what no version holds: the role's policies, the fingerprint variable itself, an unrelated resource.
    assert changed(lambda d: d[resources]["McpFunction"]["Properties"].update(Policies=[])) == set()
    assert changed(lambda d: d[resources]["McpFunction"]["Properties"]["Environment"]["Variables"].pop(MARKER)) == set()
    assert changed(lambda d: d[resources]["BedrockAgentRole"].update(Properties={})) == set()


def test_a_fingerprint_that_cannot_fit_a_description_is_refused() -> None:
    doc = {
        "Parameters": {f"Choice{n}": {"Type": "String", "AllowedValues": ["x" * 20]} for n in range(12)},
        "Resources": {
            "OneFunction": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"Environment": {"Variables": {f"V{n}": {"Ref": f"Choice{n}"} for n in range(12)}}},
            }
        },
    }
    with pytest.raises(FingerprintTooLong, match=str(MAX_DESCRIPTION)):
        fingerprint(doc, "OneFunction")
    doc["Parameters"] = {name: {**spec, "AllowedValues": ["x"]} for name, spec in doc["Parameters"].items()}
    assert len(fingerprint(doc, "OneFunction").parameters) == 12


def test_the_docs_name_every_parameter_the_fingerprint_cannot_follow() -> None:
    doc = template()
    untracked = set().union(*(fingerprint(doc, name).untracked for name in api_functions()))
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    section = deploy.split("## SnapStart", 1)[1].split("\n## ", 1)[0]
    assert untracked and all(f"`{parameter}`" in section for parameter in untracked), untracked


# ---------------------------------------------------------- SAM and cfn-lint ---
_TRANSFORM = """
import json, logging, re, sys
sys.path.insert(0, sys.argv[1])
logging.getLogger("samtranslator").setLevel(logging.ERROR)
from sam_transform import lint, translate
def deployed(translated):
    # AlwaysDeploy: SAM names the REST API's deployment anew at each transform, whatever the parameters.
    text = re.sub(r"MnemoApiDeployment[0-9a-f]{10}", "MnemoApiDeployment", json.dumps(translated))
    text = re.sub(r"deployment id: [0-9a-f]{40}", "deployment id", text)
    return json.loads(text)
off, on = translate(sys.argv[2], {}), translate(sys.argv[2], {"SnapStart": "on"})
print(json.dumps({"same": deployed(off) == deployed(on), "problems": lint(on, sys.argv[2]), "template": on}))
"""


@cache
def transformed() -> dict[str, Any]:
    """SAM's transform of template.yaml with SnapStart off and on (the real samtranslator), and cfn-lint on it."""
    done = subprocess.run(
        [str(SAM_VENV / "bin" / "python"), "-c", _TRANSFORM, str(ROOT / "tests" / "infra"), REGION],
        capture_output=True,
        text=True,
        timeout=900,  # not a limit on speed: a transform still going after this long is stuck
        env={"AWS_DEFAULT_REGION": REGION, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_sam_transforms_the_template_the_same_for_either_value_and_cfn_lint_finds_nothing() -> None:
    """The value is CloudFormation's to apply at deploy time (conditions): SAM's output does not depend on it,
    stays under CloudFormation's 500 resources and 1 MB, and cfn-lint finds nothing in it."""
    result = transformed()
    assert result["same"] is True
    assert result["problems"] == []
    assert len(result["template"]["Resources"]) <= MAX_RESOURCES
    assert len(json.dumps(result["template"], separators=(",", ":"))) <= MAX_BODY_BYTES


def test_what_cloudformation_deploys_with_snapstart_on_and_off() -> None:
    deployed = transformed()["template"]
    resources = deployed["Resources"]
    (layer,) = [name for name, r in resources.items() if r["Type"] == "AWS::Lambda::LayerVersion"]
    arn = f"arn:aws:lambda:{REGION}:123456789012:layer:mnemo-shared-dev:7"
    for value in ("on", "off"):
        parameters = {"SnapStart": value, "ExperimentalTools": "true"}
        resolver = TemplateResolver(deployed, parameters, refs={layer: arn}, attributes={})
        for name in api_functions():
            function = resolver.resolve(resources[name]["Properties"])
            present = {
                kind: kind_name in resources and resolver.condition(resources[kind_name]["Condition"])
                for kind, kind_name in (("version", version_id(name)), ("alias", alias_id(name)))
            }
            if value == "on":
                assert function["SnapStart"] == {"ApplyOn": "PublishedVersions"}, name
                assert present == {"version": True, "alias": True}, name
                # The fingerprint names the layer's version (7 here) and the parameters' values.
                assert re.fullmatch(
                    r"mnemo [0-9a-f]{12} layer 7 .*\bINFO\b.*", function["Environment"]["Variables"][MARKER]
                )
                # SAM's layer (renamed for its content) is the one the version's description reads.
                description = resources[version_id(name)]["Properties"]["Description"]["Fn::Sub"][1]
                assert description["SharedLayerVersion"]["Fn::Select"][1]["Fn::Split"][1] == {"Ref": layer}
            else:
                assert "SnapStart" not in function and MARKER not in function["Environment"]["Variables"], name
                assert present == {"version": False, "alias": False}, name


def test_cfn_lint_finds_nothing_in_template_yaml() -> None:
    """template.yaml as SAM source (its Metadata turns off W2530, which asks for SAM's AutoPublishAlias)."""
    done = subprocess.run(
        [str(SAM_VENV / "bin" / "cfn-lint"), "template.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
