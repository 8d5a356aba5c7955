"""template.yaml's Bedrock Agents part agrees with the catalog and the generated action group definitions.

The template is read as plain YAML (intrinsic tags become one-key dicts such as {"GetAtt": ...}).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import load_template

from mnemo.tools.bedrock_schema import (
    action_group_name,
    action_groups,
    bedrock_functions,
    cloudformation_function_schema,
)
from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, load_catalog

ROOT = Path(__file__).resolve().parents[2]
TITAN_V2 = "amazon.titan-embed-text-v2:0"


def _families() -> list[str]:
    """Every family's, the experimental ones' too (their functions exist only with ExperimentalTools)."""
    return sorted({tool.family for tool in load_catalog(experimental=True).values()})


def _function_id(family: str) -> str:
    return "Bedrock" + "".join(part.capitalize() for part in family.split("_")) + "Function"


def _resources(doc: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in doc["Resources"].items() if r["Type"] == kind}


def _condition(doc: dict[str, Any], name: str, **params: str) -> bool:
    values = {key: str(spec.get("Default", "")) for key, spec in doc["Parameters"].items()} | params
    ((function, (left, right)),) = doc["Conditions"][name].items()
    assert function == "Equals"
    left, right = (values[arg["Ref"]] if isinstance(arg, dict) else arg for arg in (left, right))
    return bool(left == right)


@pytest.mark.parametrize("family", _families())
def test_one_action_group_function_per_family(family: str) -> None:
    doc = load_template()
    function = doc["Resources"][_function_id(family)]
    assert function["Type"] == "AWS::Serverless::Function"
    properties = function["Properties"]
    assert properties["CodeUri"].rstrip("/") == f"functions/bedrock_{family}"
    source = (ROOT / "functions" / f"bedrock_{family}" / "app.py").read_text()
    assert f'action_group_handler("{family}")' in source
    assert properties.get("Handler", doc["Globals"]["Function"]["Handler"]) == "app.handler"
    assert "Events" not in properties, "an action group function serves no API route"
    assert properties["Environment"]["Variables"]["MNEMO_BEDROCK_TENANT"] == {"Ref": "AWS::AccountId"}


# What each family's tools reach (tests/infra/test_template.py derives the same from the tools):
# the records table's policy template, the inline statements by Sid with their actions (the index
# ones for a Serverless collection), and whether the collection lets the role write documents.
_S3_BUCKET = {"GetAtt": "KnowledgeBucket.Arn"}
_S3_OBJECTS = {"Sub": "${KnowledgeBucket.Arn}/knowledge/*"}
_S3_WORKSPACE = {"Sub": "${KnowledgeBucket.Arn}/workspace/*"}
FAMILY_RIGHTS: dict[str, tuple[str, dict[str, Any], bool | None]] = {
    "memory": (
        "RecordsReadWrite",
        {"EmbedWithTitan": "bedrock:InvokeModel", "VectorIndexReadWrite": "aoss:APIAccessAll"},
        True,
    ),
    "knowledge": (
        "RecordsRead",
        {
            "EmbedWithTitan": "bedrock:InvokeModel",
            "VectorIndexRead": "aoss:APIAccessAll",
            "KnowledgeBucketList": "s3:ListBucketVersions",
            "KnowledgeObjectRead": "s3:GetObjectVersion",
        },
        False,
    ),
    "sync": (
        "RecordsReadWrite",
        {
            "EmbedWithTitan": "bedrock:InvokeModel",
            "VectorIndexReadWrite": "aoss:APIAccessAll",
            "KnowledgeBucketList": "s3:ListBucket",
            "KnowledgeObjectRead": "s3:GetObject",
        },
        True,
    ),
    # Every conversations tool re-indexes its scope's outbox first, retrieval included.
    # The stored turns are announced to the extraction queue (sqs:SendMessage on it only).
    "conversations": (
        "RecordsReadWrite",
        {
            "EmbedWithTitan": "bedrock:InvokeModel",
            "VectorIndexReadWrite": "aoss:APIAccessAll",
            "NotifyExtractionQueue": "sqs:SendMessage",
        },
        True,
    ),
    # add_messages stores turns like the conversations tools and announces them; memory_extract also calls
    # the extraction model (ExtractorModelId); extraction_status only reads.
    "learning": (
        "RecordsReadWrite",
        {
            "ExtractWithModel": "bedrock:InvokeModel",
            "EmbedWithTitan": "bedrock:InvokeModel",
            "VectorIndexReadWrite": "aoss:APIAccessAll",
            "NotifyExtractionQueue": "sqs:SendMessage",
        },
        True,
    ),
    # memorize_new_topic and refine_memory write the index (and drain its outbox); forget_memory deletes.
    "topics": (
        "RecordsReadWrite",
        {"EmbedWithTitan": "bedrock:InvokeModel", "VectorIndexReadWrite": "aoss:APIAccessAll"},
        True,
    ),
    # Blocks are written to and deleted from the index; workspace files are objects under workspace/ only,
    # read at the version their head names, put as new versions, deleted with a delete marker.
    "files": (
        "RecordsReadWrite",
        {
            "WorkspaceObjects": ["s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject"],
            "EmbedWithTitan": "bedrock:InvokeModel",
            "VectorIndexReadWrite": "aoss:APIAccessAll",
        },
        True,
    ),
    # Entities and facts are written to and deleted from the index; build_memory_from_text also calls the
    # extraction model (ExtractorModelId), and nothing else of Bedrock.
    "graph": (
        "RecordsReadWrite",
        {
            "ExtractWithModel": "bedrock:InvokeModel",
            "EmbedWithTitan": "bedrock:InvokeModel",
            "VectorIndexReadWrite": "aoss:APIAccessAll",
        },
        True,
    ),
    # memory_add_batch embeds and writes the index as memory_add does; memory_delete_batch deletes from it;
    # erase_user lists the versions of the erased user's workspace files and deletes each of them.
    "lifecycle": (
        "RecordsReadWrite",
        {
            "KnowledgeBucketList": ["s3:ListBucket", "s3:ListBucketVersions"],
            "WorkspaceObjects": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
            "EmbedWithTitan": "bedrock:InvokeModel",
            "VectorIndexReadWrite": "aoss:APIAccessAll",
        },
        True,
    ),
    # Outline (experimental): the outline index is items of the records table (put and deleted); workspace files
    # are read at the version their head names. No embedding, no vector index (None: no principal of the
    # collection).
    "outline": ("RecordsReadWrite", {"WorkspaceObjects": "s3:GetObjectVersion"}, None),
}
EXTRACTOR_ARN = {"Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${ExtractorModelId}"}


def _by_store(statement: dict[str, Any]) -> bool:
    """A statement chosen by VectorStore: ``!If [UseS3Vectors, <on the vector bucket>, <on OpenSearch>]``."""
    return "If" in statement and statement["If"][0] == "UseS3Vectors"


def _statement(statement: dict[str, Any]) -> dict[str, Any]:
    """The statement itself, the OpenSearch one of a statement chosen by VectorStore."""
    chosen: dict[str, Any] = statement["If"][2] if _by_store(statement) else statement
    return chosen


@pytest.mark.parametrize("family", _families())
def test_the_function_reaches_what_its_tools_need(family: str) -> None:
    doc = load_template()
    assert set(FAMILY_RIGHTS) == set(_families()), "state what a new family's function reaches"
    records, inline_actions, writes = FAMILY_RIGHTS[family]
    properties = doc["Resources"][_function_id(family)]["Properties"]
    assert all("Statement" in p for p in properties["Policies"]), "no SAM policy template"
    on_table = [p["Statement"] for p in properties["Policies"] if p["Statement"][0]["Sid"].startswith("Records")]
    assert [[(s["Sid"], s["Resource"]) for s in statements] for statements in on_table] == [
        [
            (
                records,
                {"Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/mnemo-records-${Stage}"},
            )
        ]
    ]
    (inline,) = [
        p["Statement"] for p in properties["Policies"] if not _statement(p["Statement"][0])["Sid"].startswith("Records")
    ]
    # The vector index's statement is one of two by VectorStore (an !If UseS3Vectors): the same Sid either way, on
    # the vector bucket's indexes or on the collection (checked below); the rest of the checks read the latter.
    on_bucket = [statement["If"][1] for statement in inline if _by_store(statement)]
    inline = [_statement(statement) for statement in inline]
    for statement in on_bucket:
        assert statement["Sid"].startswith("VectorIndex")
        assert all(action.startswith("s3vectors:") for action in statement["Action"])
        assert statement["Resource"][0] == {"GetAtt": "VectorBucket.VectorBucketArn"}
    assert [s["Sid"] for s in on_bucket] == [s["Sid"] for s in inline if s.get("Sid", "").startswith("VectorIndex")]
    # The extraction model's second statement exists only for an inference profile (an !If around it).
    by_sid = {statement["Sid"]: statement for statement in inline if "Sid" in statement}
    actions = {
        sid: statement["Action"]["If"][1] if isinstance(statement["Action"], dict) else statement["Action"]
        for sid, statement in by_sid.items()
    }
    assert actions == inline_actions
    if "EmbedWithTitan" in by_sid:
        titan = {"ModelId": {"FindInMap": ["Titan", "Model", "Id"]}}
        assert by_sid["EmbedWithTitan"]["Resource"]["Sub"][1] == titan
    index_sids = [sid for sid in by_sid if sid.startswith("VectorIndex")]
    assert bool(index_sids) is (writes is not None)
    for index_sid in index_sids:
        assert by_sid[index_sid]["Resource"]["If"][1] == {"GetAtt": "VectorCollection.Arn"}
    if "KnowledgeBucketList" in by_sid:
        assert by_sid["KnowledgeBucketList"]["Resource"] == _S3_BUCKET
    if "KnowledgeObjectRead" in by_sid:  # erase_user lists the bucket's versions but reads no knowledge object
        assert by_sid["KnowledgeObjectRead"]["Resource"] == _S3_OBJECTS
    if "WorkspaceObjects" in by_sid:
        assert by_sid["WorkspaceObjects"]["Resource"] == _S3_WORKSPACE
    if "ExtractWithModel" in by_sid:
        assert by_sid["ExtractWithModel"]["Resource"]["If"][2]["If"][2] == EXTRACTOR_ARN
        variables = properties["Environment"]["Variables"]
        assert variables["MNEMO_EXTRACTOR"] == "bedrock"
        assert variables["MNEMO_EXTRACTOR_MODEL_ID"] == {"Ref": "ExtractorModelId"}
    # The collection's data-access policy names the role in one statement, which writes or only reads.
    policy = doc["Resources"]["VectorCollectionAccessPolicy"]["Properties"]["Policy"]["Sub"][1]
    role = f"${{{_function_id(family)}Role.Arn}}"
    statements = [json.dumps(s) for s in policy.values() if role in json.dumps(s)]
    if writes is None:
        assert statements == []
        return
    (statement,) = statements
    assert "aoss:ReadDocument" in statement
    assert ("aoss:WriteDocument" in statement) is writes and ("aoss:CreateIndex" in statement) is writes


@pytest.mark.parametrize("family", _families())
def test_bedrock_may_invoke_it_only_from_this_account(family: str) -> None:
    doc = load_template()
    function = _function_id(family)
    invoke = [
        r
        for r in _resources(doc, "AWS::Lambda::Permission").values()
        if r["Properties"]["FunctionName"] == {"GetAtt": f"{function}.Arn"}
    ]
    assert [r.get("Condition") for r in invoke] == [doc["Resources"][function].get("Condition")]
    permissions = [
        r["Properties"]
        for r in _resources(doc, "AWS::Lambda::Permission").values()
        if r["Properties"]["FunctionName"] == {"GetAtt": f"{function}.Arn"}
    ]
    assert len(permissions) == 1
    (permission,) = permissions
    assert permission["Action"] == "lambda:InvokeFunction"
    assert permission["Principal"] == "bedrock.amazonaws.com"
    assert permission["SourceAccount"] == {"Ref": "AWS::AccountId"}
    condition, created, otherwise = permission["SourceArn"]["If"]
    assert condition == "HasBedrockAgent"
    assert created == {"GetAtt": "BedrockAgent.AgentArn"}
    assert otherwise == {"Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:agent/*"}


def test_the_agent_is_optional_and_off_by_default() -> None:
    doc = load_template()
    parameter = doc["Parameters"]["CreateBedrockAgent"]
    assert parameter["Default"] == "false" and parameter["AllowedValues"] == ["true", "false"]
    assert _condition(doc, "HasBedrockAgent") is False
    assert _condition(doc, "HasBedrockAgent", CreateBedrockAgent="true") is True
    for kind in ("AWS::Bedrock::Agent", "AWS::IAM::Role"):
        for name, resource in _resources(doc, kind).items():
            assert resource.get("Condition") == "HasBedrockAgent", name
    for name in ("BedrockAgentId", "BedrockAgentArn"):
        assert doc["Outputs"][name]["Condition"] == "HasBedrockAgent"
    for family in _families():
        output = doc["Outputs"][f"{_function_id(family)}Arn"]
        assert output["Value"] == {"GetAtt": f"{_function_id(family)}.Arn"}
        # The experimental families' functions exist only with ExperimentalTools; the others always.
        expected = "ServeExperimental" if family in EXPERIMENTAL_FAMILIES else None
        assert output.get("Condition") == expected, family
        assert doc["Resources"][_function_id(family)].get("Condition") == expected, family


def test_the_agent_role_runs_only_the_chosen_model() -> None:
    doc = load_template()
    role = doc["Resources"]["BedrockAgentRole"]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "bedrock.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    (policy,) = role["Policies"]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "bedrock:InvokeModel"
    assert statement["Resource"] == {
        "Sub": "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${BedrockAgentFoundationModel}"
    }
    agent = doc["Resources"]["BedrockAgent"]["Properties"]
    assert agent["AgentResourceRoleArn"] == {"GetAtt": "BedrockAgentRole.Arn"}
    assert agent["FoundationModel"] == {"Ref": "BedrockAgentFoundationModel"}
    assert len(agent["Instruction"]) >= 40  # Bedrock's minimum


def test_the_agent_action_groups_are_the_generated_function_schemas() -> None:
    """The inline FunctionSchema is generated (`mnemo openapi --bedrock`): it must equal the generator's."""
    doc = load_template()
    agent = doc["Resources"]["BedrockAgent"]["Properties"]
    declared, optional, conditions = {}, set(), {}
    for entry in agent["ActionGroups"]:
        if "If" in entry:  # attached only with BedrockAgentAllFamilies (and ExperimentalTools for outline)
            condition, group, otherwise = entry["If"]
            assert condition in {"AgentHasAllFamilies", "AgentHasOutline"} and otherwise == {"Ref": "AWS::NoValue"}
            optional.add(group["ActionGroupName"])
            conditions[group["ActionGroupName"]] = condition
            entry = group
        declared[entry["ActionGroupName"]] = entry
    # The schemas are generated with the experimental catalog: the outline group is declared, under its condition.
    groups = action_groups(load_catalog(experimental=True).values())
    assert set(declared) == {action_group_name(group) for group in groups}
    for group, members in groups.items():
        experimental = members[0].family in EXPERIMENTAL_FAMILIES
        name = action_group_name(group)
        assert conditions.get(name) == ("AgentHasOutline" if experimental else conditions.get(name)), name
        if experimental:
            assert name in optional
    assert doc["Conditions"]["AgentHasOutline"] == {
        "And": [{"Condition": "AgentHasAllFamilies"}, {"Condition": "ServeExperimental"}]
    }
    assert doc["Conditions"]["ServeExperimental"] == {"Equals": [{"Ref": "ExperimentalTools"}, "true"]}
    # The agent the stack creates by default stays within the default quota of 11 APIs per agent.
    default_apis = sum(len(m) for g, m in groups.items() if action_group_name(g) not in optional)
    assert default_apis <= 11, default_apis
    assert doc["Conditions"]["AgentHasAllFamilies"] == {"Equals": [{"Ref": "BedrockAgentAllFamilies"}, "true"]}
    for group, members in groups.items():
        action_group = declared[action_group_name(group)]
        family = members[0].family
        assert action_group["ActionGroupExecutor"] == {"Lambda": {"GetAtt": f"{_function_id(family)}.Arn"}}
        assert action_group.get("ActionGroupState", "ENABLED") == "ENABLED"
        expected = cloudformation_function_schema(bedrock_functions(members))
        assert action_group["FunctionSchema"] == expected, (
            f"template.yaml's FunctionSchema of {action_group_name(group)} is stale; regenerate it with "
            f"`make docs` (mnemo generate):\n{json.dumps(expected, indent=2)}"
        )


@pytest.mark.parametrize("family", _families())
def test_the_function_is_logged_and_alarmed(family: str) -> None:
    doc = load_template()
    function = _function_id(family)
    group = doc["Resources"][function]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    assert doc["Resources"][group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    alarms = [r["Properties"] for r in _resources(doc, "AWS::CloudWatch::Alarm").values()]
    # Its Errors in the action groups' metric-math alarm, under the metric id of its family; its throttles in
    # the account's Throttles, which every function shares.
    (errors,) = [
        a
        for a in alarms
        if {"Ref": function}
        in [m["MetricStat"]["Metric"]["Dimensions"][0]["Value"] for m in a.get("Metrics", []) if "MetricStat" in m]
    ]
    (mine,) = [
        m
        for m in errors["Metrics"]
        if m.get("MetricStat", {}).get("Metric", {}).get("Dimensions")
        == [{"Name": "FunctionName", "Value": {"Ref": function}}]
    ]
    assert (mine["Id"], mine["MetricStat"]["Metric"]["MetricName"]) == (family, "Errors")
    (total,) = [m for m in errors["Metrics"] if "Expression" in m]
    ids = [m["Id"] for m in errors["Metrics"] if "MetricStat" in m]
    assert total["Expression"].replace(" ", "").split("+") == ids
    assert [a for a in alarms if a.get("MetricName") == "Throttles" and "Dimensions" not in a]
