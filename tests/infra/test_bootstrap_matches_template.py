"""The local bootstrap (mnemo serve --aws-endpoint) creates the same table the SAM template declares."""

from __future__ import annotations

from aws_fixtures import load_template

from mnemo.adapters.aws.bootstrap import RECORDS_ATTRIBUTES, RECORDS_KEY_SCHEMA, RECORDS_TTL_ATTRIBUTE


def test_records_table_definition_matches_the_template() -> None:
    table = load_template()["Resources"]["RecordsTable"]["Properties"]
    assert table["KeySchema"] == RECORDS_KEY_SCHEMA
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(RECORDS_ATTRIBUTES, key=str)
    assert table["TimeToLiveSpecification"]["AttributeName"] == RECORDS_TTL_ATTRIBUTE
