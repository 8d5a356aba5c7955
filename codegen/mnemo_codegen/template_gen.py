"""template.yaml's tool-shaped parts, generated from the catalog (``mnemo generate``, ``make docs``).

The template is written by hand except its generated blocks, each between a pair of marker comments::

    # >>> generated: <block> (mnemo generate; do not edit)
    ...
    # <<< generated: <block>

For every tool the blocks hold its function (policies from the tool's ``Rights`` and nothing else), its
log group, its errors alarm, its route on the REST API and on the HTTP API and API Gateway's permission to
invoke it; for every family, the function of its Bedrock action group (the union of its tools' rights),
its invoke permission, log group, alarm and output, and the action groups of the stack's agent; for
functions that run other tools (MCP, knowledge sync, the outline sync, the extraction), their policies; the vector
collection's data access policy (each function's role under the access its tools declare), and the
throttle alarms of every function, ten metrics to an alarm (CloudWatch's limit for metric math). Last, from the
template the others leave, what the SnapStart parameter needs (``mnemo_codegen.template_snapstart``): each API
function's published version and alias, and its fingerprint, written into the tool functions and MCP's.

Why a generator and not ``Fn::ForEach``: tools differ in what their functions are granted, which ForEach
can only vary through a Mappings table per statement shape (as long to write as the resources), while the
Bedrock schemas, the client and the docs need a generator anyway; a generated block is reviewed as plain
YAML and ``mnemo generate --check`` (a test) fails when one is stale.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import yaml

from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, Tool
from mnemo.tools.rights import Rights, Runtime
from mnemo_codegen.cloudformation_yaml import load_template
from mnemo_codegen.template_alarms import error_alarms, log_groups, throttle_alarms
from mnemo_codegen.template_names import (
    bedrock_function_id,
    camel,
    clip,
    condition_of,
    families,
    family_summary,
    function_id,
    quoted,
    resource,
)
from mnemo_codegen.template_policies import extraction_consumer_statements, policies
from mnemo_codegen.template_snapstart import (
    HAND_WRITTEN,
    PROPERTY,
    Fingerprint,
    fingerprint,
    integration_uri,
    marker,
    permission_target,
    snapstart_functions,
    versions,
)

#: The families the stack's agent always has; the others join with BedrockAgentAllFamilies (an agent has at
#: most 11 APIs by default), experimental ones also only when deployed.
AGENT_CORE_FAMILIES = ("memory", "knowledge", "sync")
#: Action group functions run without API Gateway's 29 s: a whole sync within its lock's 15 minutes,
#: extraction's several model calls.
BEDROCK_TIMEOUTS = {"sync": 300, "graph": 120}


@dataclass(frozen=True)
class Runner:
    """A function hand-written in the template that runs catalog tools but serves none of its own: its
    policies (the generated block ``block``) are what the tools it runs declare."""

    block: str
    logical_id: str
    what: str
    #: The tools it runs; None means every tool.
    runs: tuple[str, ...] | None
    #: Whether it consumes the extraction queues: it also reads and deletes their messages, arms wake-ups on the
    #: wake queue and forwards them into the FIFO queue (template_policies.extraction_consumer_statements).
    extraction_consumer: bool = False


RUNNERS = (
    Runner("mcp-policies", "McpFunction", "MCP", None),
    # The extraction runs on the queues' notices what memory_extract runs on demand (mnemo.learning's pipeline).
    Runner("extraction-policies", "ExtractionFunction", "extraction", ("memory_extract",), extraction_consumer=True),
    # The same sync, on a schedule and on bucket events.
    Runner("knowledge-sync-policies", "KnowledgeSyncFunction", "knowledge sync", ("sync_now",)),
    # Re-outlines one workspace file on its bucket event, as every outline tool's refresh does.
    Runner("outline-sync-policies", "OutlineSyncFunction", "the outline sync", ("outline_file",)),
)
#: What the indexer needs of the vector index (it serves no tool): it writes every family's documents.
INDEXER = "IndexerFunction"
PERMISSION = "AWS::Lambda::Permission"
MAX_LAMBDA_DESCRIPTION = 256
MAX_ACTION_GROUP_DESCRIPTION = 200
WIDTH = 120

_MARKER = re.compile(r"^(?P<indent> *)# >>> generated: (?P<name>[a-z-]+)\b")


class StaleTemplate(Exception):
    """A marker pair is missing or malformed: the template cannot be regenerated as it stands."""


# -------------------------------------------------------------- functions ---
def _environment(
    rights: Rights, runtime: Runtime, extra: Mapping[str, str] | None = None, snapshot: Fingerprint | None = None
) -> list[str]:
    variables = dict(extra or {})
    if runtime.block_budget:
        variables["MNEMO_BLOCK_BUDGET_TOKENS"] = "!Ref BlockBudgetTokens"
    if rights.extracts:
        variables["MNEMO_EXTRACTOR"] = "bedrock"
        variables["MNEMO_EXTRACTOR_MODEL_ID"] = "!Ref ExtractorModelId"
        if runtime.deadline is not None:
            # Each model call ends well inside the request deadline (docs/deploy.md).
            variables["MNEMO_EXTRACTOR_TIMEOUT_SECONDS"] = f'"{max(1, runtime.deadline * 7 // 10)}"'
    if runtime.deadline is not None:
        variables["MNEMO_REQUEST_DEADLINE_SECONDS"] = f'"{runtime.deadline}"'
    if rights.extraction_queue:
        variables["MNEMO_EXTRACTION_QUEUE_URL"] = "!Ref ExtractionQueue"
    # With SnapStart: what the published version is made of (mnemo_codegen.template_snapstart).
    own = marker(snapshot) if snapshot else []
    if not variables and not own:
        return []
    return [
        "Environment:",
        "  Variables:",
        *(f"    {name}: {value}" for name, value in variables.items()),
        *("    " + line for line in own),
    ]


def _function(
    logical_id: str,
    *,
    name: str,
    description: str,
    code: str,
    rights: Rights,
    runtime: Runtime,
    condition: str | None,
    environment: Mapping[str, str] | None = None,
    handler: bool = False,
    snapstart: bool = False,
    snapshot: Fingerprint | None = None,
) -> list[str]:
    lines = resource(logical_id, "AWS::Serverless::Function", condition)
    lines += [
        "  Properties:",
        f"    FunctionName: !Sub mnemo-${{Stage}}-{name}",
        f"    Description: {quoted(clip(description, MAX_LAMBDA_DESCRIPTION))}",
        f"    CodeUri: functions/{code}/",
    ]
    if handler:  # the Globals' handler, said again where a function is not a tool's
        lines.append("    Handler: app.handler")
    if runtime.timeout is not None:
        lines.append(f"    Timeout: {runtime.timeout}")
    if runtime.memory is not None:
        lines.append(f"    MemorySize: {runtime.memory}")
    lines += [
        "    LoggingConfig:",
        f"      LogGroup: !Ref {logical_id.removesuffix('Function')}LogGroup",
    ]
    if snapstart:  # the SnapStart parameter (mnemo_codegen.template_snapstart)
        lines.append("    " + PROPERTY)
    lines += ["    " + line for line in _environment(rights, runtime, environment, snapshot)]
    lines += ["    " + line for line in policies(rights)]
    return lines


def tool_functions(tools: Sequence[Tool], prints: Mapping[str, Fingerprint] | None = None) -> list[str]:
    """One function per tool, granted exactly its declared rights, and SnapStart with the parameter: ``prints``
    holds each function's fingerprint once known (:func:`render_template` renders the block again with them)."""
    lines: list[str] = []
    for tool in tools:
        experimental = " (experimental)" if tool.family in EXPERIMENTAL_FAMILIES else ""
        lines += _function(
            function_id(tool),
            name=tool.name,
            description=f"Tool {tool.name}: {tool.summary}{experimental}",
            code=tool.name,
            rights=tool.rights,
            runtime=tool.runtime,
            condition=condition_of(tool.family),
            snapstart=True,
            snapshot=(prints or {}).get(function_id(tool)),
        )
        lines.append("")
    return lines[:-1]


def bedrock_functions(tools: Sequence[Tool]) -> list[str]:
    """Per family: the function serving its Bedrock action groups, and Bedrock's permission to invoke it."""
    lines: list[str] = []
    for family, members in families(tools).items():
        logical_id = bedrock_function_id(family)
        runtime = Runtime(
            timeout=BEDROCK_TIMEOUTS.get(family) or max((t.runtime.timeout or 0 for t in members), default=0) or None,
            memory=max((t.runtime.memory or 0 for t in members), default=0) or None,
            block_budget=any(t.runtime.block_budget for t in members),
        )
        names = ", ".join(tool.name for tool in members)
        experimental = "; experimental" if family in EXPERIMENTAL_FAMILIES else ""
        lines += _function(
            logical_id,
            name=f"bedrock-{family}",
            description=f"Serves the {family} action group of Bedrock agents ({names}{experimental})",
            code=f"bedrock_{family}",
            rights=Rights.covering(tool.rights for tool in members),
            runtime=runtime,
            condition=condition_of(family),
            # The tenant of callers whose session attributes name none: this account, as for IAM callers.
            environment={"MNEMO_BEDROCK_TENANT": "!Ref AWS::AccountId"},
            handler=True,
        )
        lines += [
            "",
            *resource(f"{logical_id.removesuffix('Function')}InvokePermission", PERMISSION, condition_of(family)),
        ]
        lines += [
            "  Properties:",
            "    Action: lambda:InvokeFunction",
            f"    FunctionName: !GetAtt {logical_id}.Arn",
            "    Principal: bedrock.amazonaws.com",
            "    SourceAccount: !Ref AWS::AccountId",
            "    SourceArn: !If",
            "      - HasBedrockAgent",
            "      - !GetAtt BedrockAgent.AgentArn",
            "      - !Sub arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:agent/*",
            "",
        ]
    return lines[:-1]


def runner_rights(tools: Sequence[Tool], runner: Runner) -> Rights:
    """What a function that runs other tools needs: what those tools declare, together."""
    ran = [tool for tool in tools if runner.runs is None or tool.name in runner.runs]
    if runner.runs is not None and len(ran) != len(runner.runs):
        raise StaleTemplate(f"{runner.logical_id} runs tools the catalog does not have: {runner.runs}")
    rights = Rights.covering(tool.rights for tool in ran)
    # The extraction consumer also runs the one-off repair pass over every scope's memories (``mnemoRepair``).
    return replace(rights, extraction_queue=True, scans=True) if runner.extraction_consumer else rights


# ------------------------------------------------------------------- API ---
def _route(tool: Tool, body: list[str]) -> list[str]:
    path = f"/v1/tools/{tool.name}:"
    condition = condition_of(tool.family)
    if condition is None:
        return [path, "  post:", *("    " + line for line in body)]
    return [
        f"{path} !If",
        f"  - {condition}",
        "  - post:",
        *("      " + line for line in body),
        "  - !Ref AWS::NoValue",
    ]


def _proxy_integration(tool: Tool) -> list[str]:
    """The Lambda proxy integration of a tool's route: its own function (its alias with SnapStart), POST."""
    return [
        "x-amazon-apigateway-integration:",
        "  type: aws_proxy",
        "  httpMethod: POST",
        *("  " + line for line in integration_uri(function_id(tool))),
    ]


def rest_routes(tools: Sequence[Tool]) -> list[str]:
    """The REST API's tool paths: the security AuthMode selects, the Lambda proxy integration."""
    security = "security: !If [UseIamAuth, [sigv4: []], !If [UseApiKeyAuth, [api_key: []], [cognito: []]]]"
    lines: list[str] = []
    for tool in tools:
        lines += _route(tool, [security, "responses: {}", *_proxy_integration(tool)])
    return lines


def http_routes(tools: Sequence[Tool]) -> list[str]:
    """The HTTP API's tool paths, payload format 2.0: the JWT authorizer (AuthMode JWT) or IAM authorization
    (AuthMode IAM with ApiType HTTP), both written in the API's body (securitySchemes)."""
    security = "security: !If [UseJwtAuth, [jwt: []], [sigv4: []]]"
    lines: list[str] = []
    for tool in tools:
        lines += _route(tool, [security, "responses: {}", *_proxy_integration(tool), '  payloadFormatVersion: "2.0"'])
    return lines


def api_permissions(tools: Sequence[Tool]) -> list[str]:
    """API Gateway may invoke each tool's function (its alias with SnapStart) on its own route only, of whichever
    API AuthMode and ApiType deploy."""
    lines: list[str] = []
    for tool in tools:
        lines += resource(f"{camel(tool.name)}ApiPermission", PERMISSION, condition_of(tool.family))
        lines += [
            "  Properties:",
            "    Action: lambda:InvokeFunction",
            f"    FunctionName: {permission_target(function_id(tool))}",
            "    Principal: apigateway.amazonaws.com",
            "    SourceArn: !Sub",
            f"      - arn:${{AWS::Partition}}:execute-api:${{AWS::Region}}:${{AWS::AccountId}}:${{ApiId}}/*/POST/v1/tools/{tool.name}",
            "      - ApiId: !If [UseHttpApi, !Ref MnemoHttpApi, !Ref MnemoApi]",
            "",
        ]
    return lines[:-1]


# ------------------------------------------------------ vector collection ---
#: Every name the vector collection takes (template.yaml, VectorCollection): in its NextGen group without and
#: with standby replicas, then in the CLASSIC group of earlier releases.
COLLECTION_NAMES = (
    "mnemo-${Stage}-vectors-ng",
    "mnemo-${Stage}-vectors-ng-standby",
    "mnemo-${Stage}-vectors",
    "mnemo-${Stage}-vectors-standby",
)
_INDEX_RULES = {
    "read": ("Search", '"aoss:ReadDocument", "aoss:DescribeIndex"'),
    "delete": ("Delete", '"aoss:ReadDocument", "aoss:WriteDocument", "aoss:DescribeIndex"'),
    "write": ("Write", '"aoss:ReadDocument", "aoss:WriteDocument", "aoss:DescribeIndex", "aoss:CreateIndex"'),
}


def index_principals(tools: Sequence[Tool]) -> dict[str, list[tuple[str, str]]]:
    """Index access -> (function logical id, what it is) of every function that reaches the index."""
    found: dict[str, list[tuple[str, str]]] = {"read": [], "delete": [], "write": []}
    core = [tool for tool in tools if tool.family not in EXPERIMENTAL_FAMILIES]
    for tool in core:
        if tool.rights.index:
            found[tool.rights.index].append((function_id(tool), tool.name))
    for family, members in families(core).items():
        index = Rights.covering(tool.rights for tool in members).index
        if index:
            found[index].append((bedrock_function_id(family), f"the Bedrock {family} action group"))
    for runner in RUNNERS:
        index = runner_rights(tools, runner).index
        if index:
            found[index].append((runner.logical_id, runner.what))
    found["write"].append((INDEXER, "the indexer"))
    return found


def collection_access(tools: Sequence[Tool]) -> list[str]:
    """The vector collection's data access policy: each function's role, with the access its tools declare.

    Experimental tools never reach the index (a check refuses one that declares it: the collection's
    policy is not conditional)."""
    for tool in tools:
        if tool.family in EXPERIMENTAL_FAMILIES and tool.rights.index:
            raise StaleTemplate(f"{tool.name}: an experimental tool may not reach the vector index")
    # The collection's names with and without standby replicas (-ng: in its NextGen group), then the names it
    # had in a CLASSIC group: a stack updated from then keeps reaching its old collection while the update
    # runs, until CloudFormation deletes it (template.yaml, VectorCollection).
    index = ", ".join(f'"index/{name}/*"' for name in COLLECTION_NAMES)
    collection = ", ".join(f'"collection/{name}"' for name in COLLECTION_NAMES)
    variables: list[str] = []
    for access, members in index_principals(tools).items():
        key, permissions = _INDEX_RULES[access]
        description = ", ".join(what for _, what in members)
        principals = ", ".join(f'"${{{logical_id}Role.Arn}}"' for logical_id, _ in members)
        variables += [
            f"{key}: !Sub >-",
            f'  {{"Description": "{description}", "Principal": [{principals}], "Rules": [',
            f'  {{"ResourceType": "index", "Resource": [{index}], "Permission": [{permissions}]}},',
            f'  {{"ResourceType": "collection", "Resource": [{collection}], "Permission": ["aoss:DescribeCollectionItems"]}}]}}',
        ]
    variables += [
        "Admin: !If",
        "  - HasOpenSearchAdmin",
        "  - !Sub >-",
        '    , {"Description": "index bootstrap and reindex", "Principal": ["${OpenSearchAdminPrincipalArn}"], "Rules": [',
        f'    {{"ResourceType": "index", "Resource": [{index}], "Permission": ["aoss:CreateIndex", '
        '"aoss:UpdateIndex", "aoss:DescribeIndex", "aoss:DeleteIndex", "aoss:ReadDocument", "aoss:WriteDocument"]},',
        f'    {{"ResourceType": "collection", "Resource": [{collection}], "Permission": '
        '["aoss:CreateCollectionItems", "aoss:UpdateCollectionItems", "aoss:DescribeCollectionItems"]}]}',
        '  - ""',
    ]
    # The !Sub's second item is one mapping of its variables: the first key after the dash, the rest below it.
    return [
        "Policy: !Sub",
        '  - "[${Search}, ${Delete}, ${Write}${Admin}]"',
        "  - " + variables[0],
        *("    " + line for line in variables[1:]),
    ]


# ----------------------------------------------------------------- Bedrock ---
def agent_action_groups(tools: Sequence[Tool]) -> list[str]:
    """The stack agent's action groups: each family's schema, generated as ``mnemo openapi --bedrock`` does."""
    from mnemo.tools.bedrock_schema import (
        action_group_name,
        action_groups,
        bedrock_functions,
        cloudformation_function_schema,
    )

    lines = ["ActionGroups:"]
    for group, members in action_groups(tools).items():
        family = members[0].family
        schema = cloudformation_function_schema(bedrock_functions(members))
        suffix = ", experimental" if family in EXPERIMENTAL_FAMILIES else ""
        description = clip(f"{family_summary(family)} (Mnemo {family} tools{suffix})", MAX_ACTION_GROUP_DESCRIPTION)
        body = [
            f"ActionGroupName: {action_group_name(group)}",
            f"Description: {quoted(description)}",
            "ActionGroupState: ENABLED",
            "ActionGroupExecutor:",
            f"  Lambda: !GetAtt {bedrock_function_id(family)}.Arn",
            "FunctionSchema:",
        ]
        dumped = yaml.safe_dump(schema, sort_keys=False, width=WIDTH - 20, allow_unicode=True).rstrip("\n").split("\n")
        body += ["  " + line for line in dumped]
        if family in AGENT_CORE_FAMILIES:
            lines += ["  - " + body[0], *("    " + line for line in body[1:])]
        else:
            condition = "AgentHasOutline" if family in EXPERIMENTAL_FAMILIES else "AgentHasAllFamilies"
            lines += [
                "  - !If",
                f"    - {condition}",
                "    - " + body[0],
                *("      " + line for line in body[1:]),
                "    - !Ref AWS::NoValue",
            ]
    return lines


def bedrock_outputs(tools: Sequence[Tool]) -> list[str]:
    """One output per family: the ARN of its action group function, to attach to an agent."""
    lines: list[str] = []
    for family in families(tools):
        logical_id = bedrock_function_id(family)
        lines.append(f"{logical_id}Arn:")
        if condition_of(family):
            lines.append(f"  Condition: {condition_of(family)}")
        experimental = "experimental; " if family in EXPERIMENTAL_FAMILIES else ""
        lines += [
            f"  Description: Lambda of the {family} action group for Bedrock agents ({experimental}see docs/bedrock.md)",
            f"  Value: !GetAtt {logical_id}.Arn",
        ]
    return lines


# ----------------------------------------------------------------- blocks ---
@dataclass(frozen=True)
class Block:
    """One generated block of the template: its marker name and what writes it."""

    name: str
    render: Callable[[Sequence[Tool]], list[str]]


def _runner_block(runner: Runner) -> Block:
    def render(tools: Sequence[Tool]) -> list[str]:
        lines = policies(runner_rights(tools, runner))
        if runner.extraction_consumer:
            lines += ["  - Statement:", *("      " + line for line in extraction_consumer_statements())]
        return lines

    return Block(runner.block, render)


BLOCKS = (
    Block("rest-routes", rest_routes),
    Block("http-routes", http_routes),
    Block("api-permissions", api_permissions),
    Block("collection-access", collection_access),
    Block("tool-functions", tool_functions),
    *(_runner_block(runner) for runner in RUNNERS),
    Block("bedrock-functions", bedrock_functions),
    Block("action-groups", agent_action_groups),
    Block("log-groups", log_groups),
    Block("error-alarms", error_alarms),
    Block("bedrock-outputs", bedrock_outputs),
)
THROTTLES = "throttle-alarms"
#: Rendered last, from the fingerprints of the template as the blocks above leave it (SnapStart): each
#: function's published version and alias, MCP's fingerprint variable, and the tool functions again with theirs.
SNAPSTART_VERSIONS = "snapstart-versions"
TOOL_FUNCTIONS = "tool-functions"


def _regions(lines: list[str]) -> dict[str, tuple[int, int, int]]:
    """Block name -> (line of its start marker, line of its end marker, indentation)."""
    found: dict[str, tuple[int, int, int]] = {}
    for number, line in enumerate(lines):
        match = _MARKER.match(line)
        if not match:
            continue
        name = match["name"]
        end = f"{match['indent']}# <<< generated: {name}"
        try:
            stop = next(i for i in range(number + 1, len(lines)) if lines[i] == end)
        except StopIteration:
            raise StaleTemplate(f"block {name} has no end marker ({end.strip()!r})") from None
        if name in found:
            raise StaleTemplate(f"block {name} appears twice")
        found[name] = (number, stop, len(match["indent"]))
    return found


def _replace(lines: list[str], name: str, body: list[str]) -> list[str]:
    regions = _regions(lines)
    if name not in regions:
        raise StaleTemplate(f"template.yaml has no generated block {name}")
    start, stop, indent = regions[name]
    pad = " " * indent
    return lines[: start + 1] + [pad + line if line else "" for line in body] + lines[stop:]


def stack_functions(text: str) -> dict[str, str | None]:
    """Every function of a template's text: logical id -> its condition (None: always deployed)."""
    resources = load_template(text).get("Resources", {})
    return {
        name: resource.get("Condition")
        for name, resource in resources.items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def render_template(text: str, tools: Mapping[str, Tool]) -> str:
    """``text`` with every generated block rewritten from ``tools`` (the catalog, experimental tools too)."""
    served = list(tools.values())
    lines = text.split("\n")
    for block in BLOCKS:
        lines = _replace(lines, block.name, block.render(served))
    functions = stack_functions("\n".join(lines))
    lines = _replace(lines, THROTTLES, throttle_alarms(functions))
    # A fingerprint leaves out the fingerprint variables themselves: the blocks rendered above (without them, or
    # with the previous ones) give the same fingerprints as the template rendered below.
    snapstart = snapstart_functions(served)
    rendered = load_template("\n".join(lines))
    prints = {logical_id: fingerprint(rendered, logical_id) for logical_id in snapstart}
    lines = _replace(lines, TOOL_FUNCTIONS, tool_functions(served, prints))
    for logical_id, name in HAND_WRITTEN.items():
        lines = _replace(lines, name, marker(prints[logical_id]))
    lines = _replace(lines, SNAPSTART_VERSIONS, versions(snapstart, prints))
    return "\n".join(lines)
