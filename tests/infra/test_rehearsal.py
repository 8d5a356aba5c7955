"""Deployment rehearsal: the `sam build` output, run as Lambda would run it, on moto and osmem-server, once per
VectorStore (opensearch: osmem-server; s3vectors: moto's S3 Vectors with tests/support/s3vectors_fake.py).

Built for this machine's architecture (tests/support/rehearsal_build.py): template.yaml's
arm64 wheels cannot load on x86_64, so a copy of the template built for x86_64 stands in.
Every function of the template (ExperimentalTools and Console on, so the outline and console
functions too) is imported from its build directory by a plain python3.12 that sees only that
directory, the built layer and the runtime's boto3; each runs under its own role's policies, from
the transformed template, enforced by moto (tests/infra/rehearsal_moto.py). Each tool
family answers API Gateway REST proxy events through its built functions, the memory
functions and MCP HTTP API (payload format 2.0) events too, a JWT authorizer's and the IAM
caller's (AuthMode IAM's default API); knowledge sync
answers EventBridge's scheduled and S3 events; a Bedrock Agents event reaches a bedrock_*
function; the console function serves the files `sam build` put in the layer; the indexer takes
a DynamoDB Streams event built from moto's own stream records; the extraction function takes SQS
events built from the messages the tools sent to the extraction queues on moto.
No Bedrock model runs: a Titan stand-in checks each request body against the documented
format, and refuses Converse (the extraction model) once the caller's role is checked
(tests/support/rehearsal_stage.py).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table
from http_api_events import http_api_event
from rehearsal_build import REGION, WORK_DIR, Build, sam_build
from rehearsal_stage import (
    MotoProcess,
    OpenSearchStandIn,
    TitanStandIn,
    Worker,
    create_admin,
    create_role,
    key_of,
    lambda_environment,
    runtime_boto3_dir,
)
from rehearsal_template import ACCOUNT, Function, Resolver, functions, transformed_template
from sample_knowledge import ADR

from aws_events import bedrock_agent_event, rest_event

#: Console Enabled is refused beside AuthMode IAM by a CloudFormation rule, which neither `sam build` nor the
#: transform evaluates: its function is built and run here all the same (its routes carry no authorizer).
#: Extraction on, two strategies (two model calls a run), a run once two turns wait: test_extraction_*.
PARAMETERS = {
    "ExperimentalTools": "true",
    "Console": "Enabled",
    "ExtractionStrategies": "facts,summary",
    "ExtractionEveryTurns": "2",
}
BUCKET = "mnemo-rehearsal-knowledge"
#: VectorStore: every test runs against each store (s3vectors: a vector bucket on moto, QueryVectors from
#: tests/support/s3vectors_fake.py, IAM checked per index by tests/infra/rehearsal_moto.py).
STORES = ("opensearch", "s3vectors")
VECTOR_BUCKET = "mnemo-rehearsal-vectors"
CALLER = f"arn:aws:iam::{ACCOUNT}:user/rehearsal-agent"
TENANT = ACCOUNT  # under IAM auth the caller's account is the tenant (mnemo.entry.identity)
#: The functions the families call; the others are imported, checked and stopped.
CALLED = {
    "MemoryAddFunction", "MemorySearchFunction", "MemoryDeleteFunction", "MemoryListFunction", "MemoryHistoryFunction",
    "KnowledgeQueryFunction",
    "KnowledgeShowFunction", "KnowledgeCheckFunction", "SyncNowFunction", "SyncStatusFunction",
    "AddConversationFunction", "RetrieveConversationFunction", "AddExecutionFunction", "RetrieveExecutionFunction",
    "MemorizeNewTopicFunction", "RecallMemoryFunction", "SearchMemoriesFunction", "ListMemoriesFunction",
    "FileWriteFunction", "FileReadFunction", "FileSearchFunction", "FileListFunction", "AddMemoryLinkFunction",
    "GraphSearchFunction", "GetMemoryObjectFunction", "KnowledgeSyncFunction", "IndexerFunction",
    "BedrockMemoryFunction", "McpFunction", "ConsoleFunction", "ExtractionFunction", "ExtractionStatusFunction",
}  # fmt: skip


@dataclass
class Stage:
    build: Build
    functions: dict[str, Function]
    moto: MotoProcess
    admin: dict[str, str]
    store: str
    osmem: Any
    titan: TitanStandIn
    runtime: Path
    credentials: dict[str, dict[str, str]]
    workers: dict[str, Worker] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    summary: dict[str, Any] = field(default_factory=dict)

    def worker(self, logical_id: str) -> Worker:
        if logical_id not in self.workers:
            function = self.functions[logical_id]
            environment = lambda_environment(
                function, self.build, self.runtime, self.credentials[logical_id], self.moto.url, self.titan.url
            )
            self.workers[logical_id] = Worker(
                self.build, function, self.runtime, environment, WORK_DIR / "logs" / f"{logical_id}.log"
            )
        return self.workers[logical_id]

    def invoke(self, logical_id: str, event: dict[str, Any], family: str) -> Any:
        self.calls[family] += 1
        return self.worker(logical_id).invoke(event)

    def tool(self, logical_id: str, body: dict[str, Any], family: str) -> dict[str, Any]:
        """A REST proxy call through the API; the tool's answer, which must be a 200."""
        tool = self.functions[logical_id].name.rsplit("-", 1)[-1]
        answer = self.invoke(logical_id, api_event(tool, body), family)
        assert answer["statusCode"] == 200, (
            f"{tool}: {answer['statusCode']} {answer['body']}\nIAM denials: {self.moto.denials()}\n"
            + self.worker(logical_id).log_tail()
        )
        parsed: dict[str, Any] = json.loads(answer["body"])
        assert parsed["success"] is True, parsed
        return parsed

    def client(self, service: str) -> Any:
        return self.moto.client(service, self.admin)

    def indexed(self, prefix: str) -> Counter[tuple[str, str]]:
        """How many documents each (index, document id) has, in every index whose name starts with ``prefix``."""
        if self.store == "s3vectors":
            vectors = self.client("s3vectors")
            found: Counter[tuple[str, str]] = Counter()
            for index in vectors.list_indexes(vectorBucketName=VECTOR_BUCKET)["indexes"]:
                if index["indexName"].startswith(prefix):
                    listed = vectors.list_vectors(vectorBucketName=VECTOR_BUCKET, indexName=index["indexName"])
                    found.update((index["indexName"], vector["key"]) for vector in listed["vectors"])
            return found
        return Counter((hit["_index"], hit["_source"]["doc_id"]) for hit in self.osmem_search(f"{prefix}*"))

    def osmem_search(self, index: str) -> list[dict[str, Any]]:
        """Every document of the matching indexes, straight from osmem-server."""
        import urllib.request

        body = json.dumps({"size": 10000, "query": {"match_all": {}}, "_source": ["doc_id"]}).encode()
        request = urllib.request.Request(
            f"{self.osmem.url}/{index}/_search", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            hits: list[dict[str, Any]] = json.loads(answer.read())["hits"]["hits"]
        return hits


def api_event(tool: str, body: dict[str, Any]) -> dict[str, Any]:
    """A REST proxy event under IAM auth: requestContext.identity as API Gateway fills it for SigV4."""
    return rest_event(
        tool,
        body,
        identity={
            "cognitoIdentityPoolId": None,
            "accountId": ACCOUNT,
            "cognitoIdentityId": None,
            "caller": "AIDAREHEARSALAGENT",
            "accessKey": "AKIAREHEARSALAGENT",
            "sourceIp": "203.0.113.10",
            "cognitoAuthenticationType": None,
            "cognitoAuthenticationProvider": None,
            "userArn": CALLER,
            "userAgent": "aws-sdk-python",
            "user": "AIDAREHEARSALAGENT",
        },
    )


def eventbridge_event(detail_type: str, source: str, detail: dict[str, Any], resources: list[str]) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "89d1a02d-5ec7-412e-82f5-13505f849b41",
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": "2026-01-07T10:00:00Z",
        "region": REGION,
        "resources": resources,
        "detail": detail,
    }


def _stand_in_values(
    resolver_template: dict[str, Any], osmem_url: str, store: str
) -> tuple[dict[str, str], dict[str, str]]:
    """Ref and Fn::GetAtt values of the resources the functions name, as the rehearsal stands them in."""
    table = "mnemo-records-dev"
    refs = {"RecordsTable": table, "KnowledgeBucket": BUCKET}
    attributes = {
        "RecordsTable.Arn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}",
        "KnowledgeBucket.Arn": f"arn:aws:s3:::{BUCKET}",
        # The collection's endpoint is osmem-server's (loopback http: reached unsigned).
        "VectorCollection.CollectionEndpoint": osmem_url,
        "VectorCollection.Arn": f"arn:aws:aoss:{REGION}:{ACCOUNT}:collection/rehearsal",
    }
    if store == "s3vectors":
        attributes["VectorBucket.VectorBucketArn"] = f"arn:aws:s3vectors:{REGION}:{ACCOUNT}:bucket/{VECTOR_BUCKET}"
    for logical_id, resource in resolver_template["Resources"].items():
        if resource["Type"] == "AWS::SQS::Queue":
            # A FIFO queue's name must end in .fifo (the extraction queue and its dead-letter queue).
            name = f"mnemo-dev-{logical_id}" + (".fifo" if resource["Properties"].get("FifoQueue") else "")
            refs[logical_id] = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
            attributes[f"{logical_id}.QueueName"] = name
            attributes[f"{logical_id}.Arn"] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
    return refs, attributes


def create_queues(sqs: Any, template: dict[str, Any], refs: dict[str, str]) -> None:
    """Every queue of the template on moto, under its stand-in name, FIFO as declared (the functions reach the
    extraction queues; the dead-letter queues are created alike)."""
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::SQS::Queue":
            continue
        declared = resource["Properties"]
        attributes = {"VisibilityTimeout": str(declared.get("VisibilityTimeout", 30))}
        if declared.get("FifoQueue"):
            attributes |= {"FifoQueue": "true", "ContentBasedDeduplication": "false"}
        sqs.create_queue(QueueName=refs[logical_id].rsplit("/", 1)[1], Attributes=attributes)


@pytest.fixture(scope="module", params=STORES)
def stage(request: pytest.FixtureRequest, osmem_server: Any) -> Iterator[Stage]:
    started = time.monotonic()
    store = request.param
    parameters = {**PARAMETERS, "VectorStore": store}
    build = sam_build(parameters)
    runtime = runtime_boto3_dir()
    template = transformed_template(parameters)
    osmem = osmem_server.clone()
    opensearch = OpenSearchStandIn(osmem.url)
    refs, attributes = _stand_in_values(template, opensearch.url, store)
    every = functions(template, Resolver(template, parameters, refs, attributes))
    titan = TitanStandIn(model_id="amazon.titan-embed-text-v2:0")
    (WORK_DIR / "logs").mkdir(parents=True, exist_ok=True)
    moto = MotoProcess(WORK_DIR / "logs" / "moto.log")
    staged: Stage | None = None
    try:
        admin = create_admin(moto)
        create_records_table(moto.client("dynamodb", admin), refs["RecordsTable"])
        s3 = moto.client("s3", admin)
        s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        create_queues(moto.client("sqs", admin), template, refs)
        if store == "s3vectors":
            moto.client("s3vectors", admin).create_vector_bucket(vectorBucketName=VECTOR_BUCKET)
        credentials = {}
        for logical_id, function in every.items():
            credentials[logical_id] = create_role(moto, admin, function)
            titan.callers[key_of(credentials[logical_id])] = (logical_id, [doc for _, doc in function.policies])
        moto.enforce_iam()  # from here on, every request is checked against its caller's policies
        staged = Stage(build, every, moto, admin, store, osmem, titan, runtime, credentials)
        staged.summary["setupSeconds"] = round(time.monotonic() - started, 1)
        yield staged
    finally:
        running = list(staged.workers.values()) if staged else []
        for worker in running:
            worker.stop()
        for worker in running:
            worker.close()
        moto.close()
        titan.close()
        opensearch.close()
        osmem.close()
    assert staged is not None
    staged.summary["elapsedSeconds"] = round(time.monotonic() - started, 1)
    staged.summary["callsPerFamily"] = dict(staged.calls)
    staged.summary["titanCallsPerFunction"] = dict(titan.calls)
    staged.summary["vectorStore"] = store
    staged.summary["knnSearches"] = opensearch.knn_searches
    staged.summary["iamDenials"] = moto.denials()
    (WORK_DIR / f"summary-{store}.json").write_text(json.dumps(staged.summary, indent=2))
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\ndeployment rehearsal ({build.architecture}): {json.dumps(staged.summary)}")


# ------------------------------------------------------------------ import ---


def test_every_function_imports_from_its_build_output(stage: Stage) -> None:
    assert len(stage.functions) >= 50
    workers = [stage.worker(logical_id) for logical_id in sorted(stage.functions)]  # all start at once
    for worker in workers:
        logical_id = worker.function.logical_id
        assert worker.ready["ready"], f"{logical_id} failed to initialise: {worker.ready['error']}"
        assert worker.ready["version"][:2] == [3, 12]
        extra = [p for p in worker.ready["sysPath"] if p not in worker.allowed]
        assert all("site-packages" not in p for p in extra), extra
        if logical_id not in CALLED:
            worker.stop()
            del stage.workers[logical_id]
    for worker in workers:
        if worker.function.logical_id not in CALLED:
            worker.close()
    stage.summary["functionsImported"] = len(stage.functions)


# ------------------------------------------------------------------- layer ---

#: The generator (`mnemo generate`), which no function runs (docs/architecture.md, "The generator").
GENERATOR = Path(__file__).resolve().parents[2] / "codegen" / "mnemo_codegen"


def test_the_layer_holds_no_generator_module(stage: Stage) -> None:
    """The built layer holds the catalog but none of mnemo_codegen: not the package (which installing the project
    into the layer would bring), not one of its modules back in the catalog, nor a copy of one anywhere else."""
    layer = stage.build.layer_python
    assert (layer / "mnemo" / "tools" / "registry.py").is_file()  # the catalog is there, so the layer is this one
    modules = {path.name: path.read_bytes() for path in GENERATOR.glob("*.py") if path.name != "__init__.py"}
    assert {"generate.py", "template_gen.py", "client_gen.py", "docs.py"} <= set(modules)
    shipped = [path for path in layer.rglob("*") if path.name.startswith("mnemo_codegen")]
    assert not shipped, f"the layer ships the generator package: {shipped[:5]}"
    catalog = sorted(name for name in modules if (layer / "mnemo" / "tools" / name).exists())
    assert not catalog, f"generator modules back in the layer's mnemo/tools/: {catalog}"
    copies = [path for path in layer.rglob("*.py") if path.read_bytes() in modules.values()]
    assert not copies, f"generator modules copied into the layer: {copies[:5]}"


# ---------------------------------------------------------------- families ---


def test_memory_family(stage: Stage) -> None:
    added = stage.tool(
        "MemoryAddFunction", {"content": "Deploys freeze on December 20 every year", "layer": "user"}, "memory"
    )
    other = stage.tool("MemoryAddFunction", {"content": "The payments team owns the ledger service"}, "memory")
    assert added["memoryId"] != other["memoryId"]
    found = stage.tool("MemorySearchFunction", {"query": "when do deploys freeze", "threshold": 0}, "memory")
    assert added["memoryId"] in [result["memoryId"] for result in found["results"]]
    gone = stage.tool("MemoryAddFunction", {"content": "A note that is deleted at once"}, "memory")
    assert stage.tool("MemoryDeleteFunction", {"memoryId": gone["memoryId"]}, "memory")["memoryId"] == gone["memoryId"]
    again = stage.tool("MemorySearchFunction", {"query": "note deleted at once", "threshold": 0}, "memory")
    assert gone["memoryId"] not in [result["memoryId"] for result in again["results"]]
    listed = stage.tool("MemoryListFunction", {"layer": "user"}, "memory")
    listed_ids = [memory["memoryId"] for memory in listed["memories"]]
    assert listed_ids.index(other["memoryId"]) < listed_ids.index(added["memoryId"])  # newest first
    assert gone["memoryId"] not in listed_ids
    history = stage.tool("MemoryHistoryFunction", {"memoryId": gone["memoryId"]}, "memory")
    assert [change["event"] for change in history["changes"]] == ["ADD", "DELETE"]


def test_the_tool_functions_answer_http_api_events(stage: Stage) -> None:
    """AuthMode JWT's HTTP API sends the same functions payload format 2.0 (a JWT authorizer's claims); they
    answer in the format it expects."""
    claims = {"sub": "jwt-user", "custom:tenant": TENANT}
    body = {"content": "Sent through the HTTP API", "layer": "user"}
    added = stage.invoke("MemoryAddFunction", http_api_event("/v1/tools/memory_add", body, claims=claims), "memory")
    assert added["statusCode"] == 200, added
    assert added["headers"]["Content-Type"] == "application/json" and "multiValueHeaders" not in added
    memory_id = json.loads(added["body"])["memoryId"]
    query = {"query": "sent through the HTTP API", "threshold": 0}
    found = stage.invoke(
        "MemorySearchFunction", http_api_event("/v1/tools/memory_search", query, claims=claims), "memory"
    )
    assert found["statusCode"] == 200, found
    assert memory_id in [result["memoryId"] for result in json.loads(found["body"])["results"]]


#: The HTTP API's IAM authorizer hands over the SigV4 caller (requestContext.authorizer.iam), as for CALLER.
IAM_CALLER = {"accountId": ACCOUNT, "userArn": CALLER, "callerId": "AIDAREHEARSALAGENT", "userId": "AIDAREHEARSALAGENT"}


def test_the_tool_functions_and_mcp_answer_http_api_iam_events(stage: Stage) -> None:
    """AuthMode IAM's default API (ApiType HTTP) sends payload format 2.0 with the SigV4 caller: the tools read
    and write the same tenant's memories as through the REST API's events, and /mcp answers."""
    body = {"content": "Signed with SigV4 through the HTTP API", "layer": "user"}
    event = http_api_event("/v1/tools/memory_add", body, iam=IAM_CALLER)
    added = stage.invoke("MemoryAddFunction", event, "memory")
    assert added["statusCode"] == 200, added
    memory_id = json.loads(added["body"])["memoryId"]
    query = {"query": "signed with SigV4 through the HTTP API", "threshold": 0}
    found = stage.invoke(
        "MemorySearchFunction", http_api_event("/v1/tools/memory_search", query, iam=IAM_CALLER), "memory"
    )
    assert found["statusCode"] == 200, found
    assert memory_id in [result["memoryId"] for result in json.loads(found["body"])["results"]]
    # The same caller through the REST API's event sees it: one identity, whichever API.
    listed = stage.tool("MemoryListFunction", {"layer": "user"}, "memory")["memories"]
    assert memory_id in [memory["memoryId"] for memory in listed]
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    listed = stage.invoke("McpFunction", http_api_event("/mcp", rpc, iam=IAM_CALLER, headers=headers), "memory")
    assert listed["statusCode"] == 200, listed
    assert "memory_search" in {tool["name"] for tool in json.loads(listed["body"])["result"]["tools"]}


def test_knowledge_and_sync_families(stage: Stage) -> None:
    key = f"knowledge/{TENANT}/company/adr-007-queue-choice.md"
    stage.client("s3").put_object(Bucket=BUCKET, Key=key, Body=ADR.encode(), ContentType="text/markdown")
    created = eventbridge_event(
        "Object Created",
        "aws.s3",
        {"version": "0", "bucket": {"name": BUCKET}, "object": {"key": key, "size": len(ADR), "etag": "e"},
         "request-id": "R1", "requester": ACCOUNT, "reason": "PutObject"},
        [f"arn:aws:s3:::{BUCKET}"],
    )  # fmt: skip
    stage.invoke("KnowledgeSyncFunction", created, "knowledge")
    found = stage.tool("KnowledgeQueryFunction", {"query": "asynchronous work between services"}, "knowledge")
    assert [item["id"] for item in found["items"]][:1] == ["adr-007-queue-choice"]
    shown = stage.tool("KnowledgeShowFunction", {"id": "adr-007-queue-choice", "includeHistory": True}, "knowledge")
    assert "SQS queues" in shown["item"]["content"]
    stage.tool("KnowledgeCheckFunction", {"dependencies": [{"name": "mysql2", "version": "3.0.0"}]}, "knowledge")
    scheduled = eventbridge_event(
        "Scheduled Event", "aws.events", {}, [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/mnemo-dev-knowledge-sync"]
    )
    stage.invoke("KnowledgeSyncFunction", scheduled, "knowledge")
    synced = stage.tool("SyncNowFunction", {}, "sync")
    assert synced["result"]["failures"] == 0
    status = stage.tool("SyncStatusFunction", {}, "sync")
    assert status["lastSyncAt"] and status["failedItems"] == 0


def test_conversations_family(stage: Stage) -> None:
    stage.tool(
        "AddConversationFunction",
        {"message_id": "msg_rehearsal1", "explanation": "Remember the weather question",
         "user_input": "What's the weather in Paris tomorrow?", "agent_response": "Light rain in Paris, 14°C.",
         "timestamp": "2026-01-06T14:30:00Z"},
        "conversations",
    )  # fmt: skip
    found = stage.tool(
        "RetrieveConversationFunction",
        {"query": "weather in Paris", "explanation": "asked again", "max_results": 5},
        "conversations",
    )
    assert "msg_rehearsal1" in [c["message_id"] for c in found["data"]["conversations"]]
    stage.tool(
        "AddExecutionFunction",
        {"message_id": "msg_rehearsal1", "explanation": "How it was answered", "errors": [],
         "execution_summary": "Looked the forecast up", "tools_used": ["weather_api"], "success": True,
         "observations": "The forecast API answered at once.",
         "timestamp": "2026-01-06T14:30:02Z"},
        "conversations",
    )  # fmt: skip
    executions = stage.tool(
        "RetrieveExecutionFunction",
        {"message_id": "msg_rehearsal1", "query": "weather", "explanation": "which tools"},
        "conversations",
    )
    assert [e["message_id"] for e in executions["data"]["executions"]] == ["msg_rehearsal1"]


def test_topics_family(stage: Stage) -> None:
    stage.tool(
        "MemorizeNewTopicFunction",
        {"topic": "deployment-process", "tags": ["deploy", "release"], "summary": "How a release reaches production.",
         "content": "# Deployment\n\nReleases go out on Tuesdays. To roll back, redeploy the previous tag."},
        "topics",
    )  # fmt: skip
    recalled = stage.tool("RecallMemoryFunction", {"topic": "deployment-process"}, "topics")
    assert "Tuesdays" in recalled["content"]
    found = stage.tool("SearchMemoriesFunction", {"tags": ["deploy"], "query": "roll back a release"}, "topics")
    assert "deployment-process" in found["topics"]
    assert "deployment-process" in json.dumps(stage.tool("ListMemoriesFunction", {}, "topics"))


def test_files_family(stage: Stage) -> None:
    block = "mnemo:///blocks/decisions.md"
    stage.tool(
        "FileWriteFunction", {"path": block, "content": "# Decisions\n\n- Orders live in PostgreSQL 16.\n"}, "files"
    )
    stage.tool("FileWriteFunction", {"path": "notes/plan.md", "content": "Ship the rehearsal.\n"}, "files")
    assert "PostgreSQL 16" in stage.tool("FileReadFunction", {"path": block}, "files")["content"]
    assert stage.tool("FileReadFunction", {"path": "notes/plan.md"}, "files")["content"] == "Ship the rehearsal.\n"
    found = stage.tool("FileSearchFunction", {"query": "which database holds the orders"}, "files")
    assert block in [result["path"] for result in found["results"]]
    assert "notes/plan.md" in json.dumps(stage.tool("FileListFunction", {"path": "notes"}, "files"))


def test_graph_family(stage: Stage) -> None:
    link = stage.tool(
        "AddMemoryLinkFunction",
        {"subject": "Alice", "predicate": "works_at", "object": "Acme", "subjectType": "person",
         "objectType": "organization", "text": "Alice works at Acme as a data engineer."},
        "graph",
    )  # fmt: skip
    found = stage.tool("GraphSearchFunction", {"query": "Where does Alice work?"}, "graph")
    assert link["factId"] in [fact["factId"] for fact in found["facts"]]
    entity = stage.tool("GetMemoryObjectFunction", {"name": "Alice", "depth": 1}, "graph")
    assert entity["entity"]["name"] == "Alice"


def test_bedrock_agent_and_mcp_doors(stage: Stage) -> None:
    event = bedrock_agent_event(
        {"mnemoUser": "agent-user", "mnemoTenant": TENANT},
        function="memory_add",
        parameters=[{"name": "content", "type": "string", "value": "The staging database is Postgres 16"}],
    )
    answer = stage.invoke("BedrockMemoryFunction", event, "memory")
    body = json.loads(answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"])
    assert body["success"] is True and body["memoryId"].startswith("mem_"), body
    rpc = api_event("mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    rpc["path"] = rpc["resource"] = "/mcp"
    rpc["headers"].update({"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"})
    listed = stage.invoke("McpFunction", rpc, "memory")
    assert listed["statusCode"] == 200, listed
    assert "memory_search" in {tool["name"] for tool in json.loads(listed["body"])["result"]["tools"]}


def test_the_console_function_serves_the_layers_files(stage: Stage) -> None:
    """GET /ui/ and a module, on both APIs' events, from the built layer: the static files are packaged."""
    from mnemo.console.files import STATIC

    page = api_event("ui", None)
    page.update(httpMethod="GET", resource="/ui", path="/ui/", pathParameters=None)
    answer = stage.invoke("ConsoleFunction", page, "console")
    assert answer["statusCode"] == 200, answer
    assert answer["headers"]["Content-Type"] == "text/html; charset=utf-8"
    assert answer["body"] == (STATIC / "index.html").read_text(encoding="utf-8")
    module = http_api_event("/ui/js/app.js", None, method="GET", headers={})
    module["routeKey"] = module["requestContext"]["routeKey"] = "GET /ui/{proxy+}"
    module["pathParameters"] = {"proxy": "js/app.js"}
    answer = stage.invoke("ConsoleFunction", module, "console")
    assert answer["statusCode"] == 200, answer
    assert answer["body"] == (STATIC / "js" / "app.js").read_text(encoding="utf-8")
    escape = dict(module, pathParameters={"proxy": "../routes.py"})
    assert stage.invoke("ConsoleFunction", escape, "console")["statusCode"] == 404


# -------------------------------------------------------------- extraction ---


def receive_all(stage: Stage, queue_url: str) -> list[dict[str, Any]]:
    """Every visible message of the queue, received (all attributes) and deleted, as Lambda's poller would."""
    sqs = stage.client("sqs")
    found: list[dict[str, Any]] = []
    while batch := sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"], VisibilityTimeout=60
    ).get("Messages", []):
        for message in batch:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        found += batch
    return found


def sqs_event(messages: list[dict[str, Any]], queue_url: str) -> dict[str, Any]:
    """Messages as the SQS event source mapping delivers them (Lambda developer guide, "Using Lambda with Amazon
    SQS": a FIFO queue's records carry MessageGroupId, MessageDeduplicationId and SequenceNumber too)."""
    arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue_url.rsplit('/', 1)[1]}"
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message.get("ReceiptHandle", "AQEBrehearsal"),
                "body": message["Body"],
                "attributes": message.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": message.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": REGION,
            }
            for message in messages
        ]
    }


def extraction_queues(stage: Stage) -> tuple[str, str]:
    environment = stage.functions["ExtractionFunction"].environment
    return environment["MNEMO_EXTRACTION_QUEUE_URL"], environment["MNEMO_EXTRACTION_WAKE_QUEUE_URL"]


def conversation(message_id: str, question: str) -> dict[str, Any]:
    return {"message_id": message_id, "explanation": "Remember what the user said", "user_input": question,
            "agent_response": "Noted.", "timestamp": "2026-01-06T15:00:00Z"}  # fmt: skip


def test_extraction_runs_on_the_notices_the_tools_send(stage: Stage) -> None:
    """add_conversation announces its turns on the FIFO queue (under its own role); the extraction function takes
    them as the event source mapping delivers them and runs the strategies once ExtractionEveryTurns wait. No
    model runs here: the stand-in refuses Converse as a model without model access is, and each strategy
    records that as its failure (extraction_status shows it) instead of failing the batch."""
    fifo, _ = extraction_queues(stage)
    receive_all(stage, fifo)  # what the other families' tests announced
    for number in range(2):
        turn = conversation(f"msg_learn{number}", "I moved to Lyon last year")
        stage.tool("AddConversationFunction", turn, "learning")
    notices = receive_all(stage, fifo)
    assert notices, (
        "the tools that store turns sent no extraction notice: with ExtractionStrategies set they must mark their "
        "turns waiting and notify (Services.learning is enabled only when a model is configured, and their "
        "functions have none: see docs/deploy.md, 'Extraction on AWS')"
    )
    assert {m["Attributes"]["MessageGroupId"] for m in notices} and all(
        m["Attributes"]["MessageDeduplicationId"] for m in notices
    )
    before = stage.titan.converse_calls["ExtractionFunction"]
    answer = stage.invoke("ExtractionFunction", sqs_event(notices, fifo), "learning")
    assert answer == {"batchItemFailures": []}, stage.worker("ExtractionFunction").log_tail()
    assert stage.titan.converse_calls["ExtractionFunction"] > before, "the strategies never asked the model"
    status = stage.tool("ExtractionStatusFunction", {}, "learning")
    failed = {part["strategy"]: part for part in status["strategies"] if part["failures"]}
    # facts asked the model and was refused: its failure is recorded with its message, and the turns wait. The
    # summary is a session's, and these turns have no session id under IAM auth: it has nothing to do.
    assert set(failed) == {"facts"}, status
    assert all((part["lastFailure"] or {}).get("message") for part in failed.values()), failed
    stage.summary["extractionConverseCalls"] = stage.titan.converse_calls["ExtractionFunction"]
    assert not stage.titan.problems, stage.titan.problems


def test_extraction_arms_idle_wake_ups_and_forwards_them_when_due(stage: Stage) -> None:
    """One turn is fewer than ExtractionEveryTurns: the notice arms a delayed wake-up on the wake queue (its
    role may send there). A wake-up come due reaches the function from the wake queue and is forwarded into
    the FIFO queue, in its session's message group, not run."""
    fifo, wake = extraction_queues(stage)
    receive_all(stage, fifo)
    # Another caller, so another stream: the turns of the test above still wait (their strategies failed).
    event = api_event("add_conversation", conversation("msg_learn_idle", "My cat is called Miso"))
    event["requestContext"]["identity"]["userArn"] = f"arn:aws:iam::{ACCOUNT}:user/rehearsal-quiet-agent"
    answer = stage.invoke("AddConversationFunction", event, "learning")
    assert answer["statusCode"] == 200, answer
    notices = receive_all(stage, fifo)
    assert notices
    assert stage.invoke("ExtractionFunction", sqs_event(notices, fifo), "learning") == {"batchItemFailures": []}
    depth = stage.client("sqs").get_queue_attributes(QueueUrl=wake, AttributeNames=["All"])["Attributes"]
    assert int(depth["ApproximateNumberOfMessagesDelayed"]) >= 1, depth  # due in ExtractionIdleMinutes
    idle = {**json.loads(notices[0]["Body"]), "reason": "idle", "token": "rehearsal-idle"}
    due = [{"MessageId": "0f6c2d4e-rehearsal-idle", "Body": json.dumps(idle), "Attributes": {"SentTimestamp": "0"}}]
    assert stage.invoke("ExtractionFunction", sqs_event(due, wake), "learning") == {"batchItemFailures": []}
    (forwarded,) = receive_all(stage, fifo)
    assert json.loads(forwarded["Body"]) == idle
    assert forwarded["Attributes"]["MessageGroupId"] == notices[0]["Attributes"]["MessageGroupId"]


# ----------------------------------------------------------------- indexer ---


def stream_event(stage: Stage) -> dict[str, Any]:
    """The table's stream records as Lambda delivers them (moto's own records, the template's filter)."""
    table = stage.functions["IndexerFunction"].environment["MNEMO_RECORDS_TABLE"]
    stream_arn = stage.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
    streams = stage.client("dynamodbstreams")
    records = []
    for shard in streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records += page["Records"]
            iterator = page.get("NextShardIterator") if page["Records"] else None
    delivered = []
    for record in records:
        # FilterCriteria {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "MEM#"}]}}}}: Lambda filters first.
        if not record["dynamodb"]["Keys"]["sk"]["S"].startswith("MEM#"):
            continue
        image = dict(record["dynamodb"])
        image["ApproximateCreationDateTime"] = image["ApproximateCreationDateTime"].timestamp()
        delivered.append({**record, "dynamodb": image, "eventSourceARN": stream_arn, "awsRegion": REGION,
                          "eventSource": "aws:dynamodb"})  # fmt: skip
    return {"Records": delivered}


def test_the_indexer_leaves_one_document_per_memory(stage: Stage) -> None:
    for content in ("The build cache lives in S3", "Releases are tagged vYYYY.MM.DD"):
        stage.tool("MemoryAddFunction", {"content": content}, "memory")
    titan_before = stage.titan.calls["IndexerFunction"]
    event = stream_event(stage)
    assert event["Records"], "the stream holds no memory records"
    answer = stage.invoke("IndexerFunction", event, "indexer")
    assert answer == {"batchItemFailures": []}, answer
    table = stage.functions["IndexerFunction"].environment["MNEMO_RECORDS_TABLE"]
    items = stage.client("dynamodb").scan(TableName=table)["Items"]
    memories = {item["sk"]["S"].removeprefix("MEM#") for item in items if item["sk"]["S"].startswith("MEM#")}
    # One document per record: per index, since a conversation and its execution share an id.
    per_document = stage.indexed(stage.functions["IndexerFunction"].environment.get("MNEMO_INDEX_PREFIX", "mnemo-"))
    stage.summary.update(
        indexerRecords=len(event["Records"]), memoryRecords=len(memories), documents=sum(per_document.values())
    )
    duplicated = {key: n for key, n in per_document.items() if n > 1}
    assert not duplicated, f"documents indexed more than once: {duplicated}"
    missing = {m for m in memories if not any(m in doc_id for _, doc_id in per_document)}
    assert not missing, f"memories without a document: {missing}"
    # Every record here was indexed by the request that wrote it: the indexer has nothing to embed again.
    assert stage.titan.calls["IndexerFunction"] == titan_before, "the indexer embedded already indexed memories"
    assert not stage.titan.problems, stage.titan.problems


def test_no_request_was_refused_by_iam(stage: Stage) -> None:
    """A refusal a function turned into an answer (or swallowed) still fails the rehearsal."""
    assert stage.moto.denials() == []


def test_no_function_loaded_anything_from_outside_its_build(stage: Stage) -> None:
    for worker in stage.workers.values():
        outside = [
            f for f in worker.loaded_files()
            if not any(f.startswith(prefix) for prefix in worker.allowed)
            and "site-packages" in f
        ]  # fmt: skip
        assert not outside, f"{worker.function.logical_id} loaded {outside[:5]}"


def test_the_roles_are_enforced(stage: Stage) -> None:
    """The rehearsal's IAM is live: what a role lacks is refused, what it holds passes (runs after the check that
    the functions met no refusal, whose count it then grows)."""
    from botocore.exceptions import ClientError

    table = "mnemo-records-dev"
    item = {"pk": {"S": "REHEARSAL#probe"}, "sk": {"S": "probe"}}
    reader = stage.moto.client("dynamodb", stage.credentials["MemorySearchFunction"])
    writer = stage.moto.client("dynamodb", stage.credentials["MemoryAddFunction"])
    before = len(stage.moto.denials())

    with pytest.raises(ClientError) as refused:
        reader.put_item(TableName=table, Item=item)  # memory_search's role reads only
    writer.put_item(TableName=table, Item=item)
    with pytest.raises(ClientError):
        writer.scan(TableName=table)  # no function may scan: only reindex, run by an admin, does
    sync_status = stage.moto.client("s3", stage.credentials["SyncStatusFunction"])
    with pytest.raises(ClientError):
        sync_status.get_object(Bucket=BUCKET, Key=f"knowledge/{TENANT}/adr-007-queue-choice.md")
    fifo, wake = extraction_queues(stage)
    notifier = stage.moto.client("sqs", stage.credentials["AddConversationFunction"])
    with pytest.raises(ClientError):
        notifier.receive_message(QueueUrl=fifo)  # add_conversation sends notices, never reads them
    with pytest.raises(ClientError):
        notifier.send_message(QueueUrl=wake, MessageBody="{}")  # nor arms wake-ups: only the extraction does

    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert len(stage.moto.denials()) == before + 5
