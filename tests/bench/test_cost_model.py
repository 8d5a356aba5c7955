"""bench/cost_model.py: what it reads from a template, and its arithmetic, on a small template and counts of its own.

The template below is a stand-in with the shapes template.yaml uses (a tool function with its API permission
naming whichever API a condition deploys, Globals with Tracing and MemorySize, a conditional alarm and a metric
math alarm, a collection group whose minimum depends on a parameter, a scheduled drain, an extraction queue
polled only when a parameter says so). The last test reads template.yaml itself for the two cases the
benchmark prints, so that a template the model cannot read fails here rather than in the benchmark.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from cost_model import (
    PRICES,
    SECONDS_A_MONTH,
    agentcore_monthly,
    awake_share,
    break_even,
    cold_share,
    custom_metrics_month,
    derive_case,
    idle_floor,
    monthly,
    schedule_per_month,
    tool_per_million,
    xray_sampled_share,
)

from mnemo.tools import cloudformation_yaml

TEMPLATE = """
Parameters:
  Stage: {Type: String, Default: dev}
  ApiType: {Type: String, Default: HTTP}
  Tracing: {Type: String, Default: Disabled}
  Alarms: {Type: String, Default: auto}
  Extraction: {Type: String, Default: ""}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  UseHttp: !Equals [!Ref ApiType, HTTP]
  UseRest: !Not [!Condition UseHttp]
  AlarmsOn: !Or [!Equals [!Ref Alarms, "on"], !And [!Equals [!Ref Alarms, auto], !Condition IsProd]]
  ScaleToZero: !Not [!Condition IsProd]
  ExtractionOn: !Not [!Equals [!Ref Extraction, ""]]
Globals:
  Function:
    MemorySize: 512
    Tracing: !Ref Tracing
    LoggingConfig:
      LogFormat: JSON
      SystemLogLevel: WARN
      ApplicationLogLevel: WARN
Resources:
  RestApi: {Type: AWS::Serverless::Api, Condition: UseRest, Properties: {StageName: !Ref Stage}}
  HttpApi: {Type: AWS::Serverless::HttpApi, Condition: UseHttp, Properties: {StageName: !Ref Stage}}
  AddFunction:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: functions/memory_add/, MemorySize: 256}
  SearchFunction:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: functions/memory_search/, MemorySize: 256}
  IndexerFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/indexer/
      LoggingConfig: {LogFormat: Text}
      Events:
        Stream:
          Type: DynamoDB
          Properties: {BatchSize: 50, MaximumBatchingWindowInSeconds: 1}
        Drain:
          Type: Schedule
          Properties: {Schedule: rate(5 minutes)}
  AddPermission:
    Type: AWS::Lambda::Permission
    Properties:
      FunctionName: !Ref AddFunction
      Principal: apigateway.amazonaws.com
      SourceArn: !Sub
        - arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${ApiId}/*/POST/v1/tools/memory_add
        - ApiId: !If [UseHttp, !Ref HttpApi, !Ref RestApi]
  SearchPermission:
    Type: AWS::Lambda::Permission
    Properties:
      FunctionName: !Ref SearchFunction
      Principal: apigateway.amazonaws.com
      SourceArn: !Sub
        - arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${ApiId}/*/POST/v1/tools/memory_search
        - ApiId: !If [UseHttp, !Ref HttpApi, !Ref RestApi]
  ErrorsAlarm:
    Type: AWS::CloudWatch::Alarm
    Condition: AlarmsOn
    Properties: {MetricName: Errors, Namespace: AWS/Lambda}
  ThrottlesAlarm:
    Type: AWS::CloudWatch::Alarm
    Condition: AlarmsOn
    Properties:
      Metrics:
        - {Id: a, MetricStat: {Metric: {MetricName: Throttles}, Stat: Sum, Period: 300}, ReturnData: false}
        - {Id: b, MetricStat: {Metric: {MetricName: Throttles}, Stat: Sum, Period: 300}, ReturnData: false}
        - {Id: c, MetricStat: {Metric: {MetricName: Throttles}, Stat: Sum, Period: 300}, ReturnData: false}
        - {Id: total, Expression: a + b + c}
  Group:
    Type: AWS::OpenSearchServerless::CollectionGroup
    Properties:
      Generation: NEXTGEN
      StandbyReplicas: DISABLED
      CapacityLimits:
        MaxIndexingCapacityInOcu: 2
        MaxSearchCapacityInOcu: 2
        MinIndexingCapacityInOcu: !If [ScaleToZero, 0, 0.5]
        MinSearchCapacityInOcu: !If [ScaleToZero, 0, 0.5]
  Collection: {Type: AWS::OpenSearchServerless::Collection, Properties: {Type: VECTORSEARCH}}
  ExtractionQueue: {Type: AWS::SQS::Queue, Properties: {FifoQueue: true}}
  ExtractionMapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      EventSourceArn: !GetAtt ExtractionQueue.Arn
      Enabled: !If [ExtractionOn, true, false]
"""


def template() -> dict[str, Any]:
    loaded: dict[str, Any] = cloudformation_yaml.load_template(TEMPLATE)
    return loaded


def counts(**changes: Any) -> dict[str, Any]:
    """Measured counts of one call of each function: round figures, so that the dollars can be checked by hand."""
    add = {
        "requests": {"dynamodb:PutItem": 1, "bedrock-runtime:InvokeModel": 1, "opensearch:bulk": 1},
        "wru": 2.0,
        "rru": 0.0,
        "titanTokens": 50,
        "cpuMs": 10.0,
        "logBytes": 1000,
    }
    search = {**add, "requests": {"dynamodb:BatchGetItem": 1}, "wru": 0.0, "rru": 4.0, "titanTokens": 5}
    indexer = {**add, "requests": {"dynamodb:GetItem": 1}, "wru": 0.0, "rru": 1.0, "titanTokens": 0, "records": 1.0}
    drain = {**add, "requests": {"dynamodb:Query": 17}, "wru": 0.0, "rru": 17.0, "titanTokens": 0}
    measured: dict[str, Any] = {
        "memory_add": add,
        "memory_search": search,
        "indexer": indexer,
        "scheduled": {"indexer": drain},
        "emf": {"memory_add": [], "memory_search": [], "indexer": [], "scheduled:indexer": []},
    }
    measured.update(changes)
    return measured


INIT = {"memory_add": 300.0, "memory_search": 300.0, "indexer": 300.0, "knowledge_sync": 300.0}


def test_the_api_serving_the_tools_and_its_price_come_from_the_template() -> None:
    http = derive_case(template(), "dev", {})
    rest = derive_case(template(), "rest", {"ApiType": "REST"})
    assert http.api == {"memory_add": "HTTP", "memory_search": "HTTP"}
    assert rest.api == {"memory_add": "REST", "memory_search": "REST"}
    measured = counts()
    on_http = tool_per_million(http, measured, "memory_search", 1e6, INIT)
    on_rest = tool_per_million(rest, measured, "memory_search", 1e6, INIT)
    assert on_http["API Gateway HTTP"] == PRICES["apigw_http_per_million"] == 1.00
    assert on_rest["API Gateway REST"] == PRICES["apigw_rest_per_million"] == 3.50
    assert sum(on_rest.values()) - sum(on_http.values()) == pytest.approx(2.50)


def test_tracing_off_records_no_trace_and_on_records_nearly_every_call_at_low_volume() -> None:
    off = derive_case(template(), "dev", {})
    on = derive_case(template(), "traced", {"Tracing": "Active"})
    assert not any(off.tracing.values())
    assert all(on.tracing.values())
    measured = counts()
    assert tool_per_million(off, measured, "memory_add", 1e6, INIT)["X-Ray traces"] == 0.0
    # At 1M calls a month (0.19 adds a second) nearly every add is in the reservoir: two traces (tool + indexer).
    traced = tool_per_million(on, measured, "memory_add", 1e6, INIT)["X-Ray traces"]
    assert 2 * 0.85 * 5.0 < traced <= 2 * 5.0
    assert tool_per_million(on, measured, "memory_search", 1e6, INIT)["X-Ray traces"] == pytest.approx(
        5.0 * xray_sampled_share(0.5e6 / SECONDS_A_MONTH)
    )


def test_xray_default_rule_one_a_second_then_five_percent() -> None:
    assert xray_sampled_share(0.0) == 1.0
    assert xray_sampled_share(0.01) > 0.99
    rate = 0.39  # 1M calls a month
    assert xray_sampled_share(rate) == pytest.approx((1 - math.exp(-rate) + 0.05 * (rate - 1 + math.exp(-rate))) / rate)
    assert xray_sampled_share(100.0) == pytest.approx((1 + 0.05 * 99) / 100, rel=1e-3)  # ~6%


def test_alarms_are_billed_per_metric_and_only_where_their_condition_holds() -> None:
    dev = derive_case(template(), "dev", {})
    prod = derive_case(template(), "prod", {"Stage": "prod"})
    forced = derive_case(template(), "dev-on", {"Alarms": "on"})
    assert dev.alarm_metrics == {}
    assert prod.alarm_metrics == {"ErrorsAlarm": 1, "ThrottlesAlarm": 3}  # the expression itself is free
    assert forced.alarm_metrics == prod.alarm_metrics
    measured = counts()
    assert idle_floor(dev, measured, INIT)["CloudWatch alarms"] == 0.0
    assert idle_floor(prod, measured, INIT)["CloudWatch alarms"] == pytest.approx(4 * 0.10)


def test_the_opensearch_floor_is_zero_when_the_group_scales_to_zero_unless_a_schedule_wakes_it() -> None:
    dev = derive_case(template(), "dev", {})
    prod = derive_case(template(), "prod", {"Stage": "prod"})
    assert dev.scale_to_zero and dev.ocu_min == (0.0, 0.0)
    assert prod.ocu_min == (0.5, 0.5) and not prod.scale_to_zero
    measured = counts()
    assert idle_floor(dev, measured, INIT)["OpenSearch OCUs"] == 0.0
    assert idle_floor(prod, measured, INIT)["OpenSearch OCUs"] == pytest.approx(175.20)
    waking = counts(scheduled={"indexer": {**measured["scheduled"]["indexer"], "requests": {"opensearch:search": 1}}})
    woken = idle_floor(dev, waking, INIT)
    assert "OpenSearch OCUs" not in woken
    assert woken["OpenSearch OCUs (woken by the schedules)"] == pytest.approx(175.20)


def test_the_scheduled_drain_and_its_metrics_are_in_the_idle_floor() -> None:
    dev = derive_case(template(), "dev", {})
    assert dev.schedules == {"indexer": pytest.approx(730 * 12)}
    measured = counts()
    floor = idle_floor(dev, measured, INIT)
    assert floor["custom metrics of the schedules (EMF)"] == 0.0  # nothing emitted, nothing billed
    drain_reads = 730 * 12 * 17 * PRICES["dynamodb_rru_per_million"] / 1e6
    assert floor["scheduled invocations (drain, sync)"] > drain_reads
    emitting = counts(emf={**measured["emf"], "scheduled:indexer": ["Mnemo/dev/IndexOutboxDepth[service=mnemo]"]})
    assert idle_floor(dev, emitting, INIT)["custom metrics of the schedules (EMF)"] == pytest.approx(0.30, rel=1e-3)


def test_sqs_polling_is_paid_only_when_extraction_is_on() -> None:
    off = derive_case(template(), "dev", {})
    on = derive_case(template(), "extracting", {"Extraction": "facts"})
    assert off.polled_queues == {}
    assert on.polled_queues == {"ExtractionQueue": True}
    measured = counts()
    assert idle_floor(off, measured, INIT)["SQS polling (extraction queues)"] == 0.0
    polls = 5 * 3 * 60 * 730  # 5 pollers, a 20-second receive each
    assert idle_floor(on, measured, INIT)["SQS polling (extraction queues)"] == pytest.approx(polls * 0.50 / 1e6)


def test_memory_size_logging_and_the_indexer_batch_come_from_the_template() -> None:
    dev = derive_case(template(), "dev", {})
    assert dev.memory_mb == {"memory_add": 256, "memory_search": 256, "indexer": 512}
    assert dev.platform_log_bytes["memory_add"] == 0  # JSON at system level WARN: no START/END/REPORT
    assert dev.platform_log_bytes["indexer"] > 200  # Text format: START/END/REPORT
    assert dev.application_log_level == "WARN"
    assert (dev.batch_size, dev.batch_window_seconds) == (50, 1.0)


def test_per_call_lines_add_up_by_hand() -> None:
    dev = derive_case(template(), "dev", {})
    lines = tool_per_million(dev, counts(), "memory_search", 1e6, INIT, high=False)
    assert lines["DynamoDB reads"] == pytest.approx(4 * 0.125)
    assert lines["Titan tokens"] == pytest.approx(5 / 1000 * 0.00002 * 1e6)
    assert lines["CloudWatch Logs"] == pytest.approx(1000 / 2**30 * 0.50 * 1e6)
    assert lines["Lambda requests"] == pytest.approx(0.20)
    # 10 ms of CPU at 256 MB is 10 * 1769 / 256 ms; a DynamoDB read waits 4 ms at the low end.
    duration = (10 * 1769 / 256 + 4) / 1000 * 0.25
    assert lines["Lambda duration"] == pytest.approx(duration * PRICES["lambda_arm_gb_second"] * 1e6)
    add = tool_per_million(dev, counts(), "memory_add", 1e6, INIT, high=False)
    assert add["DynamoDB writes"] == pytest.approx(2 * 0.625)
    assert add["DynamoDB reads"] == pytest.approx(1 * 0.125)  # the indexer's read of each record
    assert add["Lambda requests"] == pytest.approx(0.40)  # one batch a record at this volume


def test_init_is_billed_for_cold_starts_only() -> None:
    assert cold_share(0.0) == 1.0
    assert cold_share(1 / 86400) > 0.99  # one call a day: every call is cold
    quiet = math.exp(-420 / 3600)  # one an hour: cold unless the last call was less than 7 minutes before
    assert cold_share(1 / 3600) == pytest.approx(quiet + (1 - quiet) / 2)
    busy = cold_share(10.0)  # ten a second: one cold start an environment lifetime
    assert busy < 1e-3
    # At low volume, calls in a session share a warm environment: only a session's first call is cold.
    in_sessions = cold_share(0.001, calls_per_session=20, session_seconds=600)
    assert in_sessions == pytest.approx(math.exp(-0.00005 * 420) / 20, rel=0.2)
    assert in_sessions < cold_share(0.001) / 5
    dev = derive_case(template(), "dev", {})
    cold = tool_per_million(dev, counts(), "memory_search", 1e4, INIT)["Lambda INIT (cold starts)"]
    warm = tool_per_million(dev, counts(), "memory_search", 1e8, INIT)["Lambda INIT (cold starts)"]
    assert cold > 10 * warm


def test_scale_to_zero_stays_awake_with_traffic_and_the_break_even_is_where_agentcore_passes_mnemo() -> None:
    assert awake_share(0.0) == 0.0
    assert awake_share(1.0) == pytest.approx(1.0)
    dev = derive_case(template(), "dev", {})
    prod = derive_case(template(), "prod", {"Stage": "prod"})
    measured = counts()
    assert monthly(dev, measured, 0, INIT)["OpenSearch OCUs"] == 0.0
    quiet = monthly(dev, measured, 10_000, INIT)["OpenSearch OCUs"]
    assert 0 < quiet < monthly(prod, measured, 10_000, INIT)["OpenSearch OCUs"]
    assert monthly(dev, measured, 10_000_000, INIT)["OpenSearch OCUs"] == pytest.approx(175.20, rel=0.01)
    assert agentcore_monthly(1e6) == pytest.approx(0.5e6 / 1000 * 0.25 + 0.5e6 / 1000 * 0.50)
    volume = break_even(prod, measured, INIT)
    assert volume is not None
    total = sum(monthly(prod, measured, volume * 1.01, INIT).values())
    assert total <= agentcore_monthly(volume * 1.01)
    assert sum(monthly(prod, measured, volume * 0.99, INIT).values()) > agentcore_monthly(volume * 0.99)


def test_a_custom_metric_two_functions_emit_is_billed_once() -> None:
    shared = "Mnemo/dev/Latency[service=mnemo]"
    measured = counts(emf={"memory_add": [shared, "a"], "memory_search": [shared, "b"]})
    busy = custom_metrics_month(measured, {"memory_add": 1.0, "memory_search": 1.0})
    assert busy == pytest.approx(3 * 0.30)
    assert custom_metrics_month(measured, {"memory_add": 0.0, "memory_search": 0.0}) == 0.0


def test_schedule_expressions() -> None:
    assert schedule_per_month("rate(5 minutes)") == pytest.approx(730 * 12)
    assert schedule_per_month("rate(1 hour)") == pytest.approx(730)
    assert schedule_per_month("cron(0 9 * * ? *)") == pytest.approx(730 / 24)
    assert schedule_per_month("cron(0/15 * * * ? *)") == pytest.approx(4 * 730)


@pytest.mark.parametrize("parameters", [{}, {"Stage": "prod"}])
def test_template_yaml_is_readable_for_the_benchmarks_cases(parameters: dict[str, str]) -> None:
    from aws_fixtures import ROOT

    real = cloudformation_yaml.load_template((ROOT / "template.yaml").read_text())
    case = derive_case(real, "case", parameters)
    assert set(case.api.values()) <= {"REST", "HTTP"} and set(case.api) == {"memory_add", "memory_search"}
    assert set(case.memory_mb) >= {"memory_add", "memory_search", "indexer", "knowledge_sync"}
    assert case.schedules.get("indexer") and case.schedules.get("knowledge_sync")
    assert case.ocu_min is not None


def test_an_add_the_stream_filter_keeps_from_the_indexer_costs_no_indexer_invocation() -> None:
    dev = derive_case(template(), "dev", {})
    with_indexer = tool_per_million(dev, counts(), "memory_add", 1e6, INIT, high=False)
    without = tool_per_million(dev, counts(indexerRecordsPerAdd=0.0), "memory_add", 1e6, INIT, high=False)
    assert without["Lambda requests"] == pytest.approx(0.20)
    assert without["DynamoDB reads"] == 0.0
    assert with_indexer["DynamoDB reads"] == pytest.approx(0.125)
    # One add in ten handed over (its inline index write failed): a tenth of the indexer's part.
    tenth = tool_per_million(dev, counts(indexerRecordsPerAdd=0.1), "memory_add", 1e6, INIT, high=False)
    assert tenth["DynamoDB reads"] == pytest.approx(0.0125)


def test_s3_requests_are_priced_by_kind() -> None:
    from cost_model import s3_requests

    assert s3_requests({"s3:ListObjectsV2": 2, "dynamodb:Query": 5}) == pytest.approx(2 * 0.005 / 1000)
    assert s3_requests({"s3:GetObject": 1000, "s3:DeleteObject": 10}) == pytest.approx(0.0004)


def test_a_cold_start_bills_init_unthrottled_and_the_first_calls_extra_at_the_functions_cpu_share() -> None:
    from cost_model import FULL_VCPU_MB, cold_start_ms

    assert cold_start_ms(600.0, 256) == 600.0
    assert cold_start_ms((600.0, 100.0), 256) == pytest.approx(600.0 + 100.0 * FULL_VCPU_MB / 256)
    dev = derive_case(template(), "dev", {})
    rate = 0.5e6 / SECONDS_A_MONTH
    lines = tool_per_million(dev, counts(), "memory_search", 1e6, {**INIT, "memory_search": (600.0, 100.0)})
    seconds = cold_start_ms((600.0, 100.0), 256) / 1000
    expected = cold_share(rate, 10, 600) * 0.25 * seconds * PRICES["lambda_arm_gb_second"] * 1e6
    assert lines["Lambda INIT (cold starts)"] == pytest.approx(expected)
