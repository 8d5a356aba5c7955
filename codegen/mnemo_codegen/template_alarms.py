"""The log groups of template.yaml's generated functions, and the alarms that watch them by group.

Alarms watch groups of functions, or the account, never each function. CloudWatch bills an alarm by the
metrics it reads ($0.10 a month each, a metric-math alarm for every metric in it), so a metric-math alarm over
a group's functions costs what an alarm per function costs: only reading fewer metrics saves. Each function's
failures are seen once, by the cheapest signal that still names its group:

- a tool's own function, MCP's and the console's are invoked by API Gateway only, which answers 5xx for each
  of their failures (500 when Lambda refuses the invocation, a throttle included; 502 for a crash or a
  malformed answer; 504 past the integration timeout): the hand-written ``Api5xxAlarm`` and ``HttpApi5xxAlarm``
  read one metric for all of them;
- each family's Bedrock action group function answers an agent, not an API, so nothing else sees it fail:
  :func:`error_alarms` sums their ``Errors`` in metric-math alarms, ten metrics to an alarm (a hard CloudWatch
  limit), one series per condition, each metric's id the family's name;
- throttles: Mnemo's functions reserve no concurrency, so each draws from the account's unreserved pool, and
  Lambda's own account-wide ``Throttles`` (no dimension: every function of the account and Region) is one
  metric for all of them (:func:`throttle_alarms`);
- the functions behind event sources (the indexer, the extraction, the syncs, the change events) keep their
  own hand-written ``Errors`` alarms, beside their dead-letter queues and the indexer's iterator age.

Which function failed is in AWS/Lambda's per-function metrics and the functions' logs, free to read when an
alarm fires (docs/deploy.md, "Alarms").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnemo.tools.registry import Tool
from mnemo_codegen.template_names import (
    EXPERIMENTAL_CONDITION,
    bedrock_function_id,
    camel,
    condition_of,
    families,
    resource,
)

ALARM = "AWS::CloudWatch::Alarm"
#: The condition of a generated alarm on functions that exist under ``condition`` (None: always): the
#: Alarms parameter (AlarmsOn) and the functions' own condition, which the template combines by name.
ALARM_CONDITIONS: dict[str | None, str] = {
    None: "AlarmsOn",
    EXPERIMENTAL_CONDITION: "ExperimentalAlarms",
}
#: The prefix of the logical id (and name) of the alarms of each condition's functions.
_CONDITION_PREFIXES: dict[str | None, str] = {None: "", EXPERIMENTAL_CONDITION: "Experimental"}
#: Metrics one metric-math alarm may read (a hard CloudWatch limit).
MAX_METRICS_PER_ALARM = 10
ALARM_ACTIONS = [
    "AlarmActions: !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]",
    "OKActions: !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]",
]


def _served(tools: Sequence[Tool]) -> list[tuple[str, str, str | None]]:
    """(logical id without Function, log group name, condition) of each generated function."""
    found = [(camel(tool.name), tool.name, condition_of(tool.family)) for tool in tools]
    for family in families(tools):
        found.append((bedrock_function_id(family).removesuffix("Function"), f"bedrock-{family}", condition_of(family)))
    return found


def log_groups(tools: Sequence[Tool]) -> list[str]:
    """A log group per generated function, kept LogRetentionDays."""
    lines: list[str] = []
    for stem, name, condition in _served(tools):
        lines += resource(f"{stem}LogGroup", "AWS::Logs::LogGroup", condition)
        lines += [
            "  Properties:",
            f"    LogGroupName: !Sub /mnemo/${{Stage}}/{name}",
            "    RetentionInDays: !Ref LogRetentionDays",
            "",
        ]
    return lines[:-1]


def alarm_condition(condition: str | None) -> str:
    """The condition of an alarm watching something that exists under ``condition``: alarms exist only with
    the Alarms parameter on (AlarmsOn), and never without what they watch."""
    try:
        return ALARM_CONDITIONS[condition]
    except KeyError:
        raise ValueError(f"no alarm condition combines AlarmsOn with {condition}: add one to the template") from None


def _alarm_tail() -> list[str]:
    return [
        "    EvaluationPeriods: 1",
        "    Threshold: 0",
        "    ComparisonOperator: GreaterThanThreshold",
        "    TreatMissingData: notBreaching",
        *("    " + line for line in ALARM_ACTIONS),
    ]


def error_alarms(tools: Sequence[Tool]) -> list[str]:
    """The Bedrock action group functions' ``Errors`` (a crash or a timeout: an error envelope is an answer),
    summed by metric math, ten functions to an alarm, one series per condition; each metric's id is its
    family, so the expression names what the alarm watches. The tools' own functions have none: the API's
    5xx alarm sees each of their failures."""
    by_condition: dict[str | None, list[str]] = {}
    for family in families(tools):
        by_condition.setdefault(condition_of(family), []).append(family)
    lines: list[str] = []
    for condition, members in by_condition.items():
        watched_with = alarm_condition(condition)  # refuses a condition the template does not combine
        prefix = _CONDITION_PREFIXES[condition]
        name_prefix = f"{prefix.lower()}-" if prefix else ""
        for start in range(0, len(members), MAX_METRICS_PER_ALARM):
            chunk = members[start : start + MAX_METRICS_PER_ALARM]
            number = "" if start == 0 else str(start // MAX_METRICS_PER_ALARM + 1)
            lines += resource(f"{prefix}BedrockActionGroupsErrors{number}Alarm", ALARM, watched_with)
            lines += [
                "  Properties:",
                f"    AlarmName: !Sub mnemo-${{Stage}}-{name_prefix}bedrock-action-groups-errors{'-' + number if number else ''}",
                "    AlarmDescription: >",
                "      A Bedrock action group function failed without an answer (crash or timeout); each metric's",
                "      id is its family; docs/deploy.md (Alarms) finds the function. Families:",
                f"      {', '.join(chunk)}",
                "    Metrics:",
                "      - Id: total",
                f"        Expression: {' + '.join(chunk)}",
                "        Label: Errors of the Bedrock action group functions",
                "        ReturnData: true",
            ]
            for family in chunk:
                lines += [
                    f"      - Id: {family}",
                    "        ReturnData: false",
                    "        MetricStat:",
                    "          Metric:",
                    "            Namespace: AWS/Lambda",
                    "            MetricName: Errors",
                    "            Dimensions:",
                    "              - Name: FunctionName",
                    f"                Value: !Ref {bedrock_function_id(family)}",
                    "          Period: 300",
                    "          Stat: Sum",
                ]
            lines += [*_alarm_tail(), ""]
    return lines[:-1]


def throttle_alarms(functions: Mapping[str, str | None]) -> list[str]:
    """One alarm on Lambda's account-wide ``Throttles`` (no dimension), for every function of the stack
    (``functions``: logical id -> its condition; none: nothing to watch, no alarm).

    None of the stack's functions reserves concurrency, so each draws from the account's unreserved pool,
    and a throttle anywhere in the account and Region means that pool ran out (or a function of another
    stack reached its own reserved concurrency: docs/deploy.md tells the two apart). One metric, where a
    sum of each function's ``Throttles`` read one per function."""
    if not functions:
        return []
    return [
        *resource("LambdaThrottlesAlarm", ALARM, alarm_condition(None)),
        "  Properties:",
        "    AlarmName: !Sub mnemo-${Stage}-lambda-throttles",
        "    AlarmDescription: >",
        "      A Lambda function of this account and Region was throttled: the unreserved concurrency Mnemo's",
        "      functions share ran out; docs/deploy.md (Alarms) finds the function",
        "    Namespace: AWS/Lambda",
        "    MetricName: Throttles",
        "    Statistic: Sum",
        "    Period: 300",
        *_alarm_tail(),
    ]
