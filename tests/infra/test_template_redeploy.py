"""template.yaml deploys again after `sam delete`, and can change what CloudFormation can only replace.

- The records table is retained by `sam delete` under its stage's name, so the next deploy cannot
  create it again: ExistingRecordsTableStreamArn makes the stack adopt it (no table created, every
  function and the indexer reach the retained one by that name and stream).
- OpenSearchStandbyReplicas cannot change on a live collection, and CloudFormation cannot replace a
  resource with a fixed name: the collection's name follows the setting, and the security and access
  policies name both, so the new collection is covered before it is created.
"""

from __future__ import annotations

import json
import re
from typing import Any

from infra.test_template import (
    choose,
    collection_policies,
    condition,
    functions,
    parameters,
    substitute,
    template,
)

STREAM = "arn:aws:dynamodb:eu-west-1:123456789012:table/mnemo-records-dev/stream/2026-01-05T10:11:12.345"
TABLE_NAME = {"Sub": "mnemo-records-${Stage}"}


def _adopting(doc: dict[str, Any]) -> dict[str, str]:
    return parameters(doc, ExistingRecordsTableStreamArn=STREAM)


def _references(node: Any, found: list[Any]) -> list[Any]:
    """Every Ref, GetAtt or ${...} of RecordsTable anywhere under node."""
    if isinstance(node, dict):
        if node.get("Ref") == "RecordsTable" or str(node.get("GetAtt", "")).startswith("RecordsTable."):
            found.append(node)
        for value in node.values():
            _references(value, found)
    elif isinstance(node, list):
        for item in node:
            _references(item, found)
    elif isinstance(node, str) and re.search(r"\$\{RecordsTable[.}]", node):
        found.append(node)
    return found


def test_the_table_is_retained_under_its_stages_name() -> None:
    doc = template()
    table = doc["Resources"]["RecordsTable"]
    assert table["DeletionPolicy"] == "Retain" and table["UpdateReplacePolicy"] == "Retain"
    assert table["Properties"]["TableName"] == TABLE_NAME
    assert substitute(doc, TABLE_NAME, parameters(doc)) == "mnemo-records-dev"


def test_a_retained_table_is_adopted_instead_of_created() -> None:
    doc = template()
    table = doc["Resources"]["RecordsTable"]
    assert table["Condition"] == "CreateRecordsTable"
    assert condition(doc, "CreateRecordsTable", parameters(doc)) is True
    assert condition(doc, "CreateRecordsTable", _adopting(doc)) is False


def test_nothing_needs_the_table_resource_when_it_is_adopted() -> None:
    """A Ref or GetAtt of a resource whose condition is false fails the deploy: only a branch of
    !If [CreateRecordsTable, ...] may name it."""
    doc = template()
    params = _adopting(doc)
    everything = {key: value for key, value in doc.items() if key != "Conditions"}
    resources = {name: r for name, r in doc["Resources"].items() if name != "RecordsTable"}
    assert _references(choose(doc, {**everything, "Resources": resources}, params), []) == []
    # ...and with the table created, the indexer reads the created table's stream.
    indexer = choose(doc, doc["Resources"]["IndexerFunction"], parameters(doc))
    assert indexer["Properties"]["Events"]["RecordsStream"]["Properties"]["Stream"] == {
        "GetAtt": "RecordsTable.StreamArn"
    }


def test_every_function_and_the_indexer_reach_the_adopted_table() -> None:
    doc = template()
    params = _adopting(doc)
    env = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert substitute(doc, env["MNEMO_RECORDS_TABLE"], params) == "mnemo-records-dev"
    indexer = choose(doc, doc["Resources"]["IndexerFunction"], params)
    assert substitute(doc, indexer["Properties"]["Events"]["RecordsStream"]["Properties"]["Stream"], params) == STREAM
    outputs = choose(doc, doc["Outputs"], params)
    assert substitute(doc, outputs["RecordsTableName"]["Value"], params) == "mnemo-records-dev"
    assert substitute(doc, outputs["RecordsTableStreamArn"]["Value"], params) == STREAM
    # Every table grant names the same table, by the name the adopted table has.
    for name, resource in functions(doc).items():
        for text in re.findall(r"table/[^\"'\s,]+", json.dumps(choose(doc, resource, params))):
            assert text == "table/mnemo-records-${Stage}", name


def test_the_stream_parameter_accepts_only_a_records_table_stream() -> None:
    spec = template()["Parameters"]["ExistingRecordsTableStreamArn"]
    assert spec["Default"] == ""
    pattern = re.compile(spec["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch(STREAM)
    assert pattern.fullmatch(STREAM.replace("aws:", "aws-cn:", 1))
    for wrong in (
        STREAM.replace("mnemo-records-dev", "someone-elses-table"),
        STREAM.replace("/stream/2026-01-05T10:11:12.345", ""),
        "arn:aws:dynamodb:eu-west-1:123456789012:table/mnemo-records-dev",
    ):
        assert not pattern.fullmatch(wrong), wrong


def test_a_standby_change_creates_a_new_collection_under_another_name() -> None:
    doc = template()
    collection = doc["Resources"]["VectorCollection"]["Properties"]
    off = parameters(doc, OpenSearchStandbyReplicas="DISABLED")
    on = parameters(doc, OpenSearchStandbyReplicas="ENABLED")
    names = {substitute(doc, collection["Name"], p) for p in (off, on)}
    assert names == {"mnemo-dev-vectors-ng", "mnemo-dev-vectors-ng-standby"}
    assert choose(doc, collection["StandbyReplicas"], on) == {"Ref": "OpenSearchStandbyReplicas"}
    for name in names:  # within the collection name rules: 3-32 characters, lowercase, digits, hyphens
        assert re.fullmatch(r"[a-z][a-z0-9-]{2,31}", name)
    assert substitute(doc, collection["Name"], parameters(doc, Stage="prod", OpenSearchStandbyReplicas="ENABLED")) == (
        "mnemo-prod-vectors-ng-standby"
    )


def test_the_collection_policies_cover_both_names_and_do_not_change_with_the_setting() -> None:
    """The encryption policy must match a collection before it is created; policies that stay the same
    when the setting flips are not updated while the replacement runs."""
    doc = template()
    off = collection_policies(doc, parameters(doc, OpenSearchStandbyReplicas="DISABLED"))
    on = collection_policies(doc, parameters(doc, OpenSearchStandbyReplicas="ENABLED"))
    assert off == on
    text = json.dumps(on)
    for name in ("mnemo-dev-vectors-ng", "mnemo-dev-vectors-ng-standby"):
        assert f'"collection/{name}"' in text
    # The policies also name the collection's names in the Classic group, and the security policies those
    # from before it joined a collection group (tests/infra/test_template_capacity.py).
    legacy = {"mnemo-dev", "mnemo-dev-standby", "mnemo-dev-vectors", "mnemo-dev-vectors-standby"}
    for rules in re.findall(r'"Resource": \[([^\]]*)\]', text):
        named = set(re.findall(r'"(?:collection|index)/([a-z0-9-]+)', rules))
        assert named - legacy == {"mnemo-dev-vectors-ng", "mnemo-dev-vectors-ng-standby"}, rules
