"""template.yaml costs nothing it need not: alarms, tracing, memory, timeouts and logs follow parameters.

- Alarms (auto|on|off; auto: on in prod): every alarm, generated or written by hand, exists only with them.
- Tracing (Disabled|Active, Disabled by default): the functions' X-Ray mode, the REST API's stage tracing and
  Powertools' Tracer follow it together.
- The tools' functions get 256 MB and 29 s (API Gateway's limit, room for the vector collection's wake from
  zero); the functions that run heavy code, or have no API in front, say more.
- Logs: JSON, Lambda's system lines at WARN, the application's at LogLevel in Lambda's names, which Powertools
  reads back as the level POWERTOOLS_LOG_LEVEL names.

Each is checked for what CloudFormation would create, the template's conditions evaluated for chosen
parameters (tests/infra/test_template.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from infra.test_template import choose, condition, functions, parameters, resources_of, template, tool_functions

ALARM = "AWS::CloudWatch::Alarm"
#: Stage x Alarms -> whether the alarms exist.
ALARMS_ON = {
    ("dev", "auto"): False,
    ("prod", "auto"): True,
    ("dev", "on"): True,
    ("prod", "on"): True,
    ("dev", "off"): False,
    ("prod", "off"): False,
}
#: Functions that keep more than the Globals' memory, and why: they run heavy code.
HEAVY = {
    "McpFunction": 512,  # every tool
    "ExtractionFunction": 512,  # model calls over a session's turns
    "KnowledgeSyncFunction": 512,  # whole files parsed and embedded
    "IndexerFunction": 512,  # batches of 50 documents
    "BuildMemoryFromTextFunction": 512,
    "SyncNowFunction": 512,
    "MemoryExtractFunction": 512,
    "BedrockGraphFunction": 512,  # runs build_memory_from_text
    "BedrockSyncFunction": 512,  # runs sync_now
    "BedrockLearningFunction": 512,  # runs memory_extract
    "OutlineSymbolFunction": 1769,  # parsing: one vCPU
    "OutlineFileFunction": 1769,
    "OutlineProjectFunction": 1769,
    "OutlineSyncFunction": 1769,
    "BedrockOutlineFunction": 1769,
}
#: API Gateway's integration limits: the REST API's 29 s, the HTTP API's 30 s.
API_LIMIT = 29


def _created(doc: dict[str, Any], params: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in doc["Resources"].items()
        if "Condition" not in resource or condition(doc, resource["Condition"], params)
    }


@pytest.mark.parametrize(("stage", "setting"), sorted(ALARMS_ON))
def test_every_alarm_exists_only_with_the_alarms_parameter(stage: str, setting: str) -> None:
    doc = template()
    everything = parameters(doc, Stage=stage, Alarms=setting, ExperimentalTools="true", ChangeEvents="on")
    params = everything | {
        "AuthMode": "JWT",
        "JwtIssuer": "https://x.example",
        "JwtAudience": "a",
        "Console": "Enabled",
    }
    rest = everything | {"ApiType": "REST"}
    alarms = resources_of(doc, ALARM)
    assert len(alarms) > 15
    for name, resource in alarms.items():
        assert "Condition" in resource, name
    # With the parameter, every alarm whose resource exists (the API's 5xx: the deployed API's); else none.
    if ALARMS_ON[stage, setting]:
        created = set(_created(doc, params)) & set(alarms)
        assert len(created) == len(alarms) - 1, set(alarms) - created  # all but the REST API's 5xx
    else:
        assert not set(_created(doc, params)) & set(alarms)
        assert not set(_created(doc, rest)) & set(alarms)


def test_the_alarm_conditions_combine_the_parameter_with_what_they_watch() -> None:
    doc = template()
    spec = doc["Parameters"]["Alarms"]
    assert spec["Default"] == "auto" and spec["AllowedValues"] == ["auto", "on", "off"]
    conditions = doc["Conditions"]
    assert conditions["ExperimentalAlarms"] == {"And": [{"Condition": "ServeExperimental"}, {"Condition": "AlarmsOn"}]}
    assert conditions["RestApiAlarms"] == {"And": [{"Condition": "UseRestApi"}, {"Condition": "AlarmsOn"}]}
    assert conditions["HttpApiAlarms"] == {"And": [{"Condition": "UseHttpApi"}, {"Condition": "AlarmsOn"}]}
    assert conditions["ChangeEventsAlarms"] == {"And": [{"Condition": "ChangeEventsOn"}, {"Condition": "AlarmsOn"}]}
    used = {resource["Condition"] for resource in resources_of(doc, ALARM).values()}
    assert used == {
        "AlarmsOn",
        "ExperimentalAlarms",
        "RestApiAlarms",
        "HttpApiAlarms",
        "ChangeEventsAlarms",
    }
    # Nothing that costs while idle is left outside them: no dashboard, no log metric filter.
    kinds = {resource["Type"] for resource in doc["Resources"].values()}
    assert not kinds & {"AWS::CloudWatch::Dashboard", "AWS::Logs::MetricFilter", "AWS::CloudWatch::CompositeAlarm"}


def _metrics_read(alarm: dict[str, Any]) -> int:
    """What CloudWatch bills an alarm for: its one metric, or each metric its metric math reads."""
    queries = alarm["Properties"].get("Metrics")
    return sum(1 for query in queries if "MetricStat" in query) if queries else 1


@pytest.mark.parametrize("optional", [False, True])
def test_prod_alarms_read_metrics_by_group_not_one_per_function(optional: bool) -> None:
    """A prod stack's alarms read far fewer metrics than it has functions, with or without its optional
    functions (experimental tools, the console, change events): adding a tool adds no alarm metric. The
    Alarms parameter states the default stack's count and price, which this holds it to."""
    doc = template()
    extra = {"ExperimentalTools": "true", "ChangeEvents": "on", "Console": "Enabled", "AuthMode": "JWT"}
    params = parameters(doc, Stage="prod", **(extra if optional else {}))
    if optional:
        params |= {"JwtIssuer": "https://x.example", "JwtAudience": "a"}
    created = _created(doc, params)
    alarms = {name: r for name, r in created.items() if r["Type"] == ALARM}
    deployed = [name for name, r in created.items() if r["Type"] == "AWS::Serverless::Function"]
    read = sum(_metrics_read(alarm) for alarm in alarms.values())
    assert read < len(deployed) / 2, (read, len(deployed))
    if not optional:
        stated = " ".join(doc["Parameters"]["Alarms"]["Description"].split())
        assert f"{len(alarms)} alarms read {read} metrics in a default prod stack, ${read * 0.10:.2f} a month" in stated


@pytest.mark.parametrize("setting", ["Disabled", "Active"])
def test_tracing_drives_the_functions_the_rest_api_and_the_tracer_together(setting: str) -> None:
    doc = template()
    spec = doc["Parameters"]["Tracing"]
    assert spec["Default"] == "Disabled" and spec["AllowedValues"] == ["Disabled", "Active"]
    description = " ".join(spec["Description"].split())
    assert "the first request each second, then 5% of the rest" in description  # the sampling rule
    params = parameters(doc, Tracing=setting, ApiType="REST")
    on = setting == "Active"
    globals_ = doc["Globals"]["Function"]
    assert choose(doc, globals_["Tracing"], params) == ("Active" if on else "PassThrough")
    assert choose(doc, globals_["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"], params) == (
        "false" if on else "true"
    )
    assert choose(doc, doc["Resources"]["MnemoApi"]["Properties"]["TracingEnabled"], params) is on
    for name, resource in functions(doc).items():
        assert "Tracing" not in resource["Properties"], f"{name} traces on its own"
        assert "POWERTOOLS_TRACE_DISABLED" not in resource["Properties"].get("Environment", {}).get("Variables", {})


def test_tool_functions_get_256_mb_and_the_api_limit_and_heavy_ones_more() -> None:
    doc = template()
    globals_ = doc["Globals"]["Function"]
    assert globals_["MemorySize"] == 256 and globals_["Timeout"] == API_LIMIT
    for name, resource in functions(doc).items():
        assert resource["Properties"].get("MemorySize", 256) == HEAVY.get(name, 256), name
    # Behind the API, a function answers within its limit; the stream indexer has none and waits longer
    # for a collection waking from zero.
    routed = {function for ids in tool_functions(doc).values() for function in ids} | {"McpFunction"}
    for name in routed:
        timeout = doc["Resources"][name]["Properties"].get("Timeout", globals_["Timeout"])
        assert timeout >= API_LIMIT or name.startswith("Outline") or name == "MemoryExtractFunction", (name, timeout)
    assert doc["Resources"]["IndexerFunction"]["Properties"]["Timeout"] >= 120


@pytest.mark.parametrize("level", ["DEBUG", "INFO", "WARNING", "ERROR"])
def test_lambda_filters_the_logs_at_the_level_powertools_logs_at(level: str) -> None:
    from aws_lambda_powertools.shared.constants import LAMBDA_ADVANCED_LOGGING_LEVELS

    doc = template()
    logging_config = doc["Globals"]["Function"]["LoggingConfig"]
    assert logging_config["LogFormat"] == "JSON" and logging_config["SystemLogLevel"] == "WARN"
    mapping, key, attribute = logging_config["ApplicationLogLevel"]["FindInMap"]
    assert key == {"Ref": "LogLevel"}
    lambda_level = doc["Mappings"][mapping][level][attribute]
    assert lambda_level in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")  # Lambda's names
    # Powertools takes AWS_LAMBDA_LOG_LEVEL first: it must name the level POWERTOOLS_LOG_LEVEL does.
    assert LAMBDA_ADVANCED_LOGGING_LEVELS[lambda_level] == level
    assert doc["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
    assert level in doc["Parameters"]["LogLevel"]["AllowedValues"]
    # Each function keeps its explicit log group, and sets no log level of its own.
    for name, resource in functions(doc).items():
        own = resource["Properties"]["LoggingConfig"]
        assert set(own) == {"LogGroup"}, name
