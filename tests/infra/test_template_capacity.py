"""template.yaml bounds the Serverless collection's OCUs: a collection group carries the limits.

OpenSearch Serverless scales a collection's OCUs up to a maximum: the account's
(UpdateAccountSettings, which CloudFormation cannot set) for a collection outside any collection
group, or its group's for a collection inside one; the two are independent
(https://docs.aws.amazon.com/opensearch-service/latest/developerguide/collection-groups-capacity-limits.html).
The template gives the collection a group of its own whose CapacityLimits come from
OpenSearchMaxIndexingOcu and OpenSearchMaxSearchOcu.

- A group's limits take the values 1, 2, 4, 8, 16 and multiples of 16 up to 1,696.
- The group is a NextGen one (only NextGen collections scale to zero), whose minimum follows
  OpenSearchScaleToZero: 0 OCU (auto: in dev), or the floor a Classic collection kept, 0.5 + 0.5 OCU
  (1 + 1 with standby replicas); the minimum changes in place.
- The group's Name, StandbyReplicas and Generation, and the collection's CollectionGroupName, cannot
  change in place, and CloudFormation cannot replace a resource under the name it already has: the
  names follow OpenSearchStandbyReplicas, and the collection's names differ from those it had in the
  Classic group and before it joined a group, so an existing stack gets a new collection in the group.
"""

from __future__ import annotations

import re
from typing import Any

from infra.test_template import (
    ROOT,
    choose,
    collection_policies,
    condition,
    parameters,
    substitute,
    template,
)

SETTINGS = ("DISABLED", "ENABLED")
STAGES = ("dev", "prod")
# The names the collection had outside a collection group, which it must not take again.
LEGACY = {"dev": ("mnemo-dev", "mnemo-dev-standby"), "prod": ("mnemo-prod", "mnemo-prod-standby")}
# ...and those it had in a Classic collection group (Generation cannot change in place).
CLASSIC = {stage: (f"mnemo-{stage}-vectors", f"mnemo-{stage}-vectors-standby") for stage in ("dev", "prod")}
# A Classic collection group's valid capacity limits (the page above, "Valid capacity limit values").
MAX_LIMIT = 1696
# The least OCUs a vector collection keeps for indexing and for search: 0.5, or 0.5 x 2 with standby
# replicas (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scaling.html).
FLOOR = {"DISABLED": 0.5, "ENABLED": 1.0}
MAXIMA = ("OpenSearchMaxIndexingOcu", "OpenSearchMaxSearchOcu")
MAXIMA_KEYS = ("MaxIndexingCapacityInOcu", "MaxSearchCapacityInOcu")
# Collection and collection group names: lowercase letter first, 3-32 of a-z, 0-9 and hyphens.
NAME = re.compile(r"[a-z][a-z0-9-]{2,31}")


def _valid_limit(value: float) -> bool:
    return value in (1, 2, 4, 8, 16) or (value % 16 == 0 and 16 <= value <= MAX_LIMIT)


def _params(doc: dict[str, Any], stage: str, standby: str, **more: str) -> dict[str, str]:
    return parameters(doc, Stage=stage, OpenSearchStandbyReplicas=standby, **more)


def _names(doc: dict[str, Any], params: dict[str, str]) -> tuple[str, str, str]:
    """The group's name, the collection's name and the group name the collection joins."""
    group = doc["Resources"]["VectorCollectionGroup"]["Properties"]
    collection = doc["Resources"]["VectorCollection"]["Properties"]
    return (
        substitute(doc, group["Name"], params),
        substitute(doc, collection["Name"], params),
        substitute(doc, collection["CollectionGroupName"], params),
    )


def _named(rules: list[dict[str, Any]]) -> set[str]:
    return {re.sub(r"^(collection|index)/|/\*$", "", resource) for rule in rules for resource in rule["Resource"]}


def test_the_maxima_are_parameters_within_a_groups_valid_limits() -> None:
    doc = template()
    for name in MAXIMA:
        spec = doc["Parameters"][name]
        assert spec["Type"] == "Number"
        allowed = [float(value) for value in spec["AllowedValues"]]
        assert allowed and all(_valid_limit(value) for value in allowed), allowed
        assert float(spec["Default"]) in allowed
        # Every choice is at least the floor with standby replicas, and the default leaves room above
        # it to scale under either setting.
        assert min(allowed) >= FLOOR["ENABLED"]
        assert all(float(spec["Default"]) > floor for floor in FLOOR.values())
        assert "OCU" in spec["Description"]


def test_the_limits_reach_the_group_and_its_minimum_follows_scale_to_zero() -> None:
    doc = template()
    group = doc["Resources"]["VectorCollectionGroup"]
    assert group["Type"] == "AWS::OpenSearchServerless::CollectionGroup"
    assert group["Condition"] == "CreateCollection"
    assert group["Properties"]["Generation"] == "NEXTGEN"  # only NextGen collections scale to zero
    limits = group["Properties"]["CapacityLimits"]
    assert set(limits) == {
        "MaxIndexingCapacityInOcu",
        "MaxSearchCapacityInOcu",
        "MinIndexingCapacityInOcu",
        "MinSearchCapacityInOcu",
    }
    params = parameters(doc, OpenSearchMaxIndexingOcu="16", OpenSearchMaxSearchOcu="4")
    assert {key: substitute(doc, limits[key], params) for key in MAXIMA_KEYS} == {
        "MaxIndexingCapacityInOcu": "16",
        "MaxSearchCapacityInOcu": "4",
    }
    for stage in STAGES:
        for standby in SETTINGS:
            for setting in ("auto", "on", "off"):
                params = _params(doc, stage, standby, OpenSearchScaleToZero=setting)
                to_zero = setting == "on" or (setting == "auto" and stage == "dev")
                assert condition(doc, "ScaleToZero", params) is to_zero, (stage, setting)
                minima = {
                    choose(doc, limits[key], params) for key in ("MinIndexingCapacityInOcu", "MinSearchCapacityInOcu")
                }
                # Off: the floor a Classic collection kept, which standby replicas double; never above the maxima.
                assert minima == {0 if to_zero else FLOOR[standby]}, (stage, standby, setting)
                assert all(m <= min(float(v) for v in doc["Parameters"][MAXIMA[0]]["AllowedValues"]) for m in minima)


def test_scale_to_zero_is_a_parameter_that_follows_the_stage() -> None:
    spec = template()["Parameters"]["OpenSearchScaleToZero"]
    assert spec["Default"] == "auto" and spec["AllowedValues"] == ["auto", "on", "off"]
    for words in ("10 minutes", "10-30 s", "0.5", "auto: on for Stage dev, off for prod"):
        assert words in " ".join(spec["Description"].split()), words


def test_the_collection_is_in_its_group_under_either_setting() -> None:
    doc = template()
    group = doc["Resources"]["VectorCollectionGroup"]["Properties"]
    collection = doc["Resources"]["VectorCollection"]
    assert "VectorCollectionGroup" in collection["DependsOn"]  # CollectionGroupName names it, not Ref
    for stage in STAGES:
        for standby in SETTINGS:
            params = _params(doc, stage, standby)
            group_name, collection_name, joins = _names(doc, params)
            assert joins == group_name
            assert NAME.fullmatch(group_name) and NAME.fullmatch(collection_name)
            assert group_name.startswith(f"mnemo-{stage}") and collection_name.startswith(f"mnemo-{stage}")
            assert choose(doc, group["StandbyReplicas"], params) == {"Ref": "OpenSearchStandbyReplicas"}
            assert choose(doc, collection["Properties"]["StandbyReplicas"], params) == {
                "Ref": "OpenSearchStandbyReplicas"
            }


def test_a_standby_change_replaces_the_group_and_the_collection_under_new_names() -> None:
    doc = template()
    for stage in STAGES:
        off, on = (_names(doc, _params(doc, stage, standby)) for standby in SETTINGS)
        assert off[0] != on[0] and off[1] != on[1]
        # Neither name is one the collection had outside a group or in the Classic group: joining the
        # NextGen group replaced it.
        assert not {off[1], on[1]} & (set(LEGACY[stage]) | set(CLASSIC[stage]))
        assert not {off[0], on[0]} & {f"mnemo-{stage}", f"mnemo-{stage}-standby"}  # the Classic group's names
        # Scale to zero changes nothing that would replace them.
        for standby in SETTINGS:
            names = {_names(doc, _params(doc, stage, standby, OpenSearchScaleToZero=s)) for s in ("on", "off")}
            assert len(names) == 1


def test_the_policies_cover_the_collection_under_either_setting_and_the_legacy_one() -> None:
    doc = template()
    for stage in STAGES:
        off, on = (collection_policies(doc, _params(doc, stage, standby)) for standby in SETTINGS)
        assert off == on  # not updated while a replacement runs
        collections = {_names(doc, _params(doc, stage, standby))[1] for standby in SETTINGS}
        for name, policy in on.items():
            statements = policy if isinstance(policy, list) else [policy]
            for statement in statements:
                named = _named(statement["Rules"])
                if name == "VectorCollectionAccessPolicy":
                    # Rights on the collection under its two names, and the Classic group's collection an
                    # updated stack's functions reach until it is deleted.
                    assert named == collections | set(CLASSIC[stage]), (name, named)
                else:
                    # The encryption and network policies also keep an existing stack's collection covered
                    # until CloudFormation deletes it.
                    assert named == collections | set(CLASSIC[stage]) | set(LEGACY[stage]), (name, named)


def test_no_group_beside_an_existing_domain() -> None:
    doc = template()
    params = parameters(
        doc,
        ExistingOpenSearchEndpoint="https://search-mnemo-abc123.eu-west-1.es.amazonaws.com",
        ExistingOpenSearchDomainName="mnemo",
    )
    assert condition(doc, "CreateCollection", params) is False
    assert doc["Resources"]["VectorCollectionGroup"]["Condition"] == "CreateCollection"


def test_the_deploy_guide_documents_the_maxima_and_their_defaults() -> None:
    """The parameter row names both maxima, their defaults and their values in the form the template's
    AllowedValues take: 1, 2, 4, 8, 16, then every multiple of 16 up to the last, which the row states."""
    doc = template()
    guide = (ROOT / "docs" / "deploy.md").read_text()
    (row,) = [line for line in guide.splitlines() if line.startswith("| `OpenSearchMaxIndexingOcu`")]
    defaults = ", ".join(f"`{doc['Parameters'][name]['Default']}`" for name in MAXIMA)
    assert row.startswith(f"| `{MAXIMA[0]}`, `{MAXIMA[1]}` | {defaults} |")
    allowed = [int(value) for value in doc["Parameters"][MAXIMA[0]]["AllowedValues"]]
    assert [int(value) for value in doc["Parameters"][MAXIMA[1]]["AllowedValues"]] == allowed
    # The documented form holds only if the values are exactly that sequence, with no gap and none extra.
    last = allowed[-1]
    assert last % 16 == 0 and last > 16, last
    assert allowed == [1, 2, 4, 8, *range(16, last + 1, 16)], allowed
    assert f"(1, 2, 4, 8, 16, then multiples of 16 up to {last:,})" in row
    # A maximum past the account's OCU quota needs the quota raised first.
    assert "quota increase" in row
