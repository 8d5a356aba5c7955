"""template.yaml agrees with the catalog and with the project's deployment rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[2]


class CloudFormationLoader(yaml.SafeLoader):
    """Reads intrinsic-function tags (!Ref, !Sub, !GetAtt...) as plain values."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return {suffix: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {suffix: loader.construct_sequence(node, deep=True)}
    return {suffix: loader.construct_mapping(node, deep=True)}  # type: ignore[arg-type]


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def template() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load((ROOT / "template.yaml").read_text(), Loader=CloudFormationLoader)
    return loaded


def tool_functions(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for resource in resources.values():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            path = event["Properties"].get("Path", "")
            if event["Type"] == "Api" and path.startswith("/v1/tools/"):
                found[path.removeprefix("/v1/tools/")] = resource["Properties"]
    return found


def test_one_function_per_catalog_tool() -> None:
    functions = tool_functions(template()["Resources"])
    assert set(functions) == set(load_catalog())
    for name, properties in functions.items():
        assert properties["CodeUri"].rstrip("/") == f"functions/{name}"
        assert (ROOT / "functions" / name / "app.py").is_file()


def test_runtime_and_shared_layer() -> None:
    doc = template()
    assert doc["Globals"]["Function"]["Runtime"] == "python3.12"
    layer = doc["Resources"]["SharedLayer"]
    assert layer["Metadata"]["BuildMethod"] == "python3.12"
    assert layer["Metadata"]["BuildArchitecture"] in {"arm64", "x86_64"}
    assert layer["Properties"]["ContentUri"].rstrip("/") == "layers/shared"
    assert (ROOT / "layers" / "shared" / "requirements.txt").is_file()


def test_api_uses_iam_auth_by_default() -> None:
    api = template()["Resources"]["MnemoApi"]["Properties"]
    assert api["Auth"]["DefaultAuthorizer"] == "AWS_IAM"


def test_records_table_is_on_demand_encrypted_and_recoverable() -> None:
    table = template()["Resources"]["RecordsTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert {k["AttributeName"]: k["KeyType"] for k in table["KeySchema"]} == {"pk": "HASH", "sk": "RANGE"}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


def test_read_only_tools_get_read_only_policies() -> None:
    functions = tool_functions(template()["Resources"])
    policies = [next(iter(p)) for p in functions["memory_search"]["Policies"]]
    assert policies == ["DynamoDBReadPolicy"]
