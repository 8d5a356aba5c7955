"""Each function's rights on the records table and the vector collection are exactly what its tools' code uses.

The DynamoDB actions come from the RecordStore calls (mnemo.adapters.aws.dynamodb_records): get is GetItem,
batch_get BatchGetItem, query Query, scan Scan, and write is PutItem or DeleteItem for one operation, else
TransactWriteItems, which IAM authorises by the actions inside it (PutItem and DeleteItem here; the
adapter writes no Update or ConditionCheck). Scan is reindex's and export's (the CLI), and a function's only
for erase_user (an admin's erasure must find the partitions of every agent and session of the user) and for the
extraction function's one-off repair pass (``mnemoRepair``: every scope's extracted memories).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from infra.test_template import READ_ONLY_TOOLS as READ_ONLY
from infra.test_template import choose, functions, parameters, served_routes, substitute, template

from helpers import ctx, make_services
from knowledge_helpers import push_tree
from mnemo.errors import MnemoError
from mnemo.ports import Delete, Item, Put
from mnemo.runtime import Services, set_services
from mnemo.sync.models import SyncNowInput
from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[2]
TABLE_ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/mnemo-records-dev"

READ = frozenset({"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"})
READ_PUT = READ | {"dynamodb:PutItem"}
READ_WRITE = READ_PUT | {"dynamodb:DeleteItem"}
#: What each tool's code path does to the table: reads only; puts without ever deleting (a general section,
#: a pin set and its pinner lists are replaced, never removed); or puts and deletes (index outbox markers,
#: history, heads, edges...).
PUT_ONLY = {"memorize_general_info", "block_pin", "block_unpin"}
#: Functions that serve no tool route: the stream indexer drains the outbox (deletes its markers), the
#: knowledge sync runs sync_now, the outline sync puts and deletes outline items, the extraction runs the
#: strategies as memory_extract does; the console serves its own files and never reaches the table.
NOT_TOOLS = {
    "IndexerFunction": READ_WRITE,
    "KnowledgeSyncFunction": READ_WRITE,
    "OutlineSyncFunction": READ_WRITE,
    # ... and its one-off repair pass scans the memory partitions (mnemo.learning.repair).
    "ExtractionFunction": READ_WRITE | {"dynamodb:Scan"},
    "ConsoleFunction": frozenset(),
    # Change events read the stream only (SAM's stream policy): nothing of the table.
    "ChangeEventsFunction": frozenset(),
}
#: The one function that may publish, and where: change events (docs/events.md) on the default bus.
PUBLISHER = "ChangeEventsFunction"
DEFAULT_BUS = "arn:aws:events:eu-west-1:123456789012:event-bus/default"


#: The tools that scan the table (Rights.scans), and the functions serving them may.
SCANNING = {"erase_user"}


def tool_actions(tool: str) -> frozenset[str]:
    if tool in SCANNING:
        return READ_WRITE | {"dynamodb:Scan"}
    if tool in READ_ONLY:
        return READ
    return READ_PUT if tool in PUT_ONLY else READ_WRITE


def _bedrock_tools(doc: dict[str, Any], name: str) -> set[str]:
    """The tools a Bedrock action group function serves: its family's (MCP: every tool)."""
    catalog = load_catalog(experimental=True)
    if name == "McpFunction":
        return set(catalog)
    match = re.fullmatch(r"Bedrock(\w+)Function", name)
    assert match, name
    family = re.sub(r"(?<!^)([A-Z])", r"_\1", match.group(1)).lower()
    return {tool for tool, spec in catalog.items() if spec.family == family}


def expected_actions(doc: dict[str, Any]) -> dict[str, frozenset[str]]:
    found: dict[str, frozenset[str]] = {}
    for name in functions(doc):
        if name in NOT_TOOLS:
            found[name] = NOT_TOOLS[name]
            continue
        tools = set(served_routes(doc, name)) or _bedrock_tools(doc, name)
        found[name] = frozenset().union(*(tool_actions(tool) for tool in tools))
    return found


def granted(doc: dict[str, Any], params: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """Function -> resource -> actions, for every dynamodb: or events: action of its policies."""
    found: dict[str, dict[str, set[str]]] = {}
    for name, resource in functions(doc).items():
        rights = found.setdefault(name, {})
        for policy in resource["Properties"].get("Policies", []):
            assert not any(str(key).startswith(("DynamoDB", "EventBridge")) for key in policy), (name, policy)
            for statement in choose(doc, policy.get("Statement", []), params):
                actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
                ours = {a for a in actions if a.split(":")[0] in ("dynamodb", "events")}
                if ours:
                    assert statement["Effect"] == "Allow"
                    rights.setdefault(substitute(doc, statement["Resource"], params), set()).update(ours)
    return found


def test_no_function_uses_a_sam_dynamodb_policy_template() -> None:
    doc = template()
    text = json.dumps(doc)
    assert "DynamoDBCrudPolicy" not in text and "DynamoDBReadPolicy" not in text and "DynamoDBWritePolicy" not in text


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_each_function_may_do_exactly_what_its_code_paths_do_on_the_table(stage: str) -> None:
    doc = template()
    params = parameters(doc, Stage=stage, ExperimentalTools="true")
    expected = expected_actions(doc)
    table = TABLE_ARN.replace("-dev", f"-{stage}")
    for name, rights in granted(doc, params).items():
        rights = {resource: actions for resource, actions in rights.items() if resource != DEFAULT_BUS}
        assert rights == ({table: set(expected[name])} if expected[name] else {}), name
        never = {"dynamodb:BatchWriteItem", "dynamodb:UpdateItem"} | ({"dynamodb:Scan"} - expected[name])
        assert not rights.get(table, set()) & never, name


def test_only_the_change_events_function_publishes_and_only_change_events() -> None:
    """No tool publishes (the specification's tools define no events): change events are derived from the
    records' stream by ChangeEventsFunction, the only role that may call PutEvents, on the default bus only."""
    doc = template()
    for name, rights in granted(doc, parameters(doc)).items():
        published = {resource for resource, actions in rights.items() if any(a.startswith("events:") for a in actions)}
        if name == PUBLISHER:
            assert rights[DEFAULT_BUS] == {"events:PutEvents"} and published == {DEFAULT_BUS}
        else:
            assert not published, name
    variables = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert "MNEMO_EVENTS" not in variables and "MNEMO_EVENT_BUS" not in variables
    for name, resource in functions(doc).items():
        configured = "MNEMO_EVENTS" in json.dumps(resource["Properties"].get("Environment", {}))
        assert configured == (name == PUBLISHER), name
    layer = ROOT / "layers" / "shared" / "mnemo"
    publishers = [
        path.relative_to(layer).as_posix()
        for path in layer.rglob("*.py")
        if re.search(r"\.events\.publish\(|\bevents\(\)\.publish\(", path.read_text())
    ]
    assert publishers == ["entry/change_events.py"]


# ------------------------------------------------------- derived from the code ---
class _RecordingStore:
    """The IAM actions a RecordStore's calls would need on DynamoDB (dynamodb_records' mapping)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: set[str] = set()

    def get(self, pk: str, sk: str, *args: Any, **kwargs: Any) -> Item | None:
        self.seen.add("dynamodb:GetItem")
        return self.inner.get(pk, sk, *args, **kwargs)  # type: ignore[no-any-return]

    def batch_get(self, keys: Sequence[tuple[str, str]], *args: Any, **kwargs: Any) -> list[Item]:
        self.seen.add("dynamodb:BatchGetItem")
        return self.inner.batch_get(keys, *args, **kwargs)  # type: ignore[no-any-return]

    def query(self, *args: Any, **kwargs: Any) -> list[Item]:
        self.seen.add("dynamodb:Query")
        return self.inner.query(*args, **kwargs)  # type: ignore[no-any-return]

    def scan(self, pk_prefix: str = "") -> Iterator[Item]:
        self.seen.add("dynamodb:Scan")
        return self.inner.scan(pk_prefix)  # type: ignore[no-any-return]

    def expired(self, pk_prefix: str = "") -> Iterator[Item]:
        self.seen.add("dynamodb:Scan")
        return self.inner.expired(pk_prefix)  # type: ignore[no-any-return]

    def write(self, operations: Sequence[Put | Delete]) -> None:
        self.seen.update("dynamodb:PutItem" if isinstance(op, Put) else "dynamodb:DeleteItem" for op in operations)
        self.inner.write(operations)


class _RecordingIndex:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.seen.add(name)
        return getattr(self.inner, name)


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Services, _RecordingStore, _RecordingIndex]]:
    services = make_services(tmp_path)
    store, index = _RecordingStore(services.records), _RecordingIndex(services.index)
    services.__dict__["records"], services.__dict__["index"] = store, index
    set_services(services)
    yield services, store, index
    set_services(None)


def test_the_tools_code_paths_stay_within_their_rights(recorded: tuple[Services, Any, Any]) -> None:
    """Each Usage example in catalog order (as tests/catalog runs them), recording what it does to the table
    and the index: every table action is in the tool's row, and a tool that writes the index (which creates
    a missing index) is a writer of the collection, one that reads only is a reader."""
    services, store, index = recorded
    context = ctx(project="p1", org="engineering", roles=("writer",))
    push_tree(services, context.tenant)
    services.sync.sync(context.tenant, SyncNowInput(layers=["org"]))
    doc = template()
    access = doc["Resources"]["VectorCollectionAccessPolicy"]["Properties"]["Policy"]
    collection_rights: dict[str, set[str]] = {}
    for statement in json.loads(substitute(doc, access, parameters(doc))):
        for principal in statement["Principal"]:
            for rule in statement["Rules"]:
                collection_rights.setdefault(principal.rsplit("/", 1)[1], set()).update(rule["Permission"])
    by_tool = {tool: name for name in functions(doc) for tool in served_routes(doc, name)}
    last: dict[str, str] = {}
    exercised = 0
    for tool in load_catalog().values():
        payload = dict(tool.examples())["Usage"]
        payload = {**payload, **{key: last[key] for key in ("memoryId", "factId") if key in payload and key in last}}
        store.seen, index.seen = set(), set()
        try:
            result = tool.invoke(services, context, payload)
            last.update({key: result[key] for key in ("memoryId", "factId") if key in result})
        except MnemoError:
            pass
        assert store.seen <= tool_actions(tool.name), (tool.name, store.seen - tool_actions(tool.name))
        rights = collection_rights.get(f"{by_tool[tool.name]}Role", set())
        if "upsert" in index.seen:
            assert {"aoss:WriteDocument", "aoss:CreateIndex"} <= rights, tool.name
        if "delete" in index.seen:
            assert "aoss:WriteDocument" in rights, tool.name
        if tool.name in READ_ONLY:
            assert not index.seen & {"upsert", "delete", "clear"}, tool.name
        exercised += bool(store.seen)
    assert exercised >= 30
