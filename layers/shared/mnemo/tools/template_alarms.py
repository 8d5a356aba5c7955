"""The log groups and alarms of template.yaml's generated functions, and every function's throttle alarm."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mnemo.tools.registry import Tool
from mnemo.tools.template_names import (
    EXPERIMENTAL_CONDITION,
    bedrock_function_id,
    camel,
    condition_of,
    families,
    resource,
)

ALARM = "AWS::CloudWatch::Alarm"
#: The condition of an alarm on a resource that exists under ``condition`` (None: always): the Alarms
#: parameter (AlarmsOn) and the resource's own condition, which the template combines by name.
ALARM_CONDITIONS: dict[str | None, str] = {
    None: "AlarmsOn",
    EXPERIMENTAL_CONDITION: "ExperimentalAlarms",
    "ServeConsole": "ConsoleAlarms",
    "ChangeEventsOn": "ChangeEventsAlarms",
}
#: Metrics one metric-math alarm may read (a hard CloudWatch limit).
MAX_METRICS_PER_ALARM = 10
ALARM_ACTIONS = [
    "AlarmActions: !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]",
    "OKActions: !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]",
]


def _served(tools: Sequence[Tool]) -> list[tuple[str, str, str | None, str]]:
    """(logical id without Function, log and alarm name, condition, what fails) of each generated function."""
    found = [(camel(tool.name), tool.name, condition_of(tool.family), tool.name) for tool in tools]
    for family in families(tools):
        found.append(
            (
                bedrock_function_id(family).removesuffix("Function"),
                f"bedrock-{family}",
                condition_of(family),
                f"The Bedrock {family} action group",
            )
        )
    return found


def log_groups(tools: Sequence[Tool]) -> list[str]:
    """A log group per generated function, kept LogRetentionDays."""
    lines: list[str] = []
    for stem, name, condition, _ in _served(tools):
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
    """An alarm per generated function on Lambda's Errors: a crash or a timeout (an error envelope is an answer)."""
    lines: list[str] = []
    for stem, name, condition, what in _served(tools):
        lines += resource(f"{stem}ErrorsAlarm", ALARM, alarm_condition(condition))
        lines += [
            "  Properties:",
            f"    AlarmName: !Sub mnemo-${{Stage}}-{name}-errors",
            f"    AlarmDescription: {what} failed without an answer (crash or timeout)",
            "    Namespace: AWS/Lambda",
            "    MetricName: Errors",
            "    Dimensions:",
            "      - Name: FunctionName",
            f"        Value: !Ref {stem}Function",
            "    Statistic: Sum",
            "    Period: 300",
            *_alarm_tail(),
            "",
        ]
    return lines[:-1]


#: The names of the throttle alarms of each condition's functions.
_THROTTLE_NAMES = {
    None: "Function",
    EXPERIMENTAL_CONDITION: "Experimental",
    "ServeConsole": "Console",
    "ChangeEventsOn": "ChangeEvents",
}


def throttle_alarms(functions: Mapping[str, str | None]) -> list[str]:
    """Throttles of every function of the stack (``functions``: logical id -> its condition), summed with
    metric math, at most ten metrics to an alarm (a hard CloudWatch limit), one series per condition."""
    by_condition: dict[str | None, list[str]] = {}
    for logical_id, condition in functions.items():
        by_condition.setdefault(condition, []).append(logical_id)
    lines: list[str] = []
    for condition, members in by_condition.items():
        stem = _THROTTLE_NAMES.get(condition) or str(condition)
        for start in range(0, len(members), MAX_METRICS_PER_ALARM):
            chunk = members[start : start + MAX_METRICS_PER_ALARM]
            number = "" if start == 0 else str(start // MAX_METRICS_PER_ALARM + 1)
            ids = [re.sub(r"[^a-z0-9]", "", logical_id.removesuffix("Function").lower()) for logical_id in chunk]
            lines += resource(f"{stem}Throttles{number}Alarm", ALARM, alarm_condition(condition))
            lines += [
                "  Properties:",
                f"    AlarmName: !Sub mnemo-${{Stage}}-{stem.lower()}-throttles{'-' + number if number else ''}",
                "    AlarmDescription: A Mnemo function was throttled (concurrency limit reached)",
                "    Metrics:",
                "      - Id: total",
                f"        Expression: {' + '.join(ids)}",
                "        Label: Throttles of the functions",
                "        ReturnData: true",
            ]
            for metric_id, logical_id in zip(ids, chunk, strict=True):
                lines += [
                    f"      - Id: {metric_id}",
                    "        ReturnData: false",
                    "        MetricStat:",
                    "          Metric:",
                    "            Namespace: AWS/Lambda",
                    "            MetricName: Throttles",
                    "            Dimensions:",
                    "              - Name: FunctionName",
                    f"                Value: !Ref {logical_id}",
                    "          Period: 300",
                    "          Stat: Sum",
                ]
            lines += [*_alarm_tail(), ""]
    return lines[:-1]
