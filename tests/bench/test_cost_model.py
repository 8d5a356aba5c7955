"""bench/cost_model.py: what it reads from a template, and its arithmetic, on a small template and counts of its own.

The template below is a stand-in with the shapes template.yaml uses (a tool function with its API permission
naming whichever API a condition deploys, Globals with Tracing and MemorySize, a conditional alarm and a metric
math alarm, a collection group whose minimum depends on a parameter and whose maxima have allowed values, a
table with point-in-time recovery, a scheduled drain, an extraction queue polled only when a parameter says so,
and a VectorStore parameter whose s3vectors value deploys no collection). The traffic shapes, the stored
memories, the kinds of memory_add (keyed, dated) priced from their own counts, the OCU maxima sized to the
load and the index, S3 Vectors' and AgentCore's prices and the curve are checked by hand on the same counts.
Three tests read template.yaml itself for the cases the benchmark prints, and two the committed
bench/results/deploy_cost.json, so that a template the model cannot read, or a result that names a machine's
folders or lacks a measured phase, fails here rather than in the benchmark. One runs the benchmark itself in
smoke mode (moto and osmem) and checks what a keyed and a dated add send.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cost_meter import TITAN_CHARS_PER_TOKEN
from cost_model import (
    ADD_PHASES,
    CURVE_VOLUMES,
    PHASES,
    PRICES,
    S3VECTORS_QUERIES_PER_ADD,
    SECONDS_A_MONTH,
    SHAPES,
    agentcore_monthly,
    awake_seconds,
    awake_share,
    cold_share,
    config_name,
    curve,
    custom_metrics_month,
    derive_case,
    idle_floor,
    monthly,
    ocu_month,
    repo_relative,
    s3vectors_counts,
    s3vectors_query_processing,
    s3vectors_requests,
    schedule_per_month,
    store_option,
    stored_memories,
    tool_per_million,
    xray_sampled_share,
)

from mnemo.memory.indexing import PAIR_CHARACTERS
from mnemo_codegen import cloudformation_yaml

TEMPLATE = """
Parameters:
  Stage: {Type: String, Default: dev}
  ApiType: {Type: String, Default: HTTP}
  Tracing: {Type: String, Default: Disabled}
  Alarms: {Type: String, Default: auto}
  Extraction: {Type: String, Default: ""}
  VectorStore: {Type: String, Default: opensearch}
  MaxSearchOcu: {Type: Number, Default: 2, AllowedValues: [1, 2, 4, 8, 16, 32, 48, 64, 80, 96]}
  MaxIndexingOcu: {Type: Number, Default: 2, AllowedValues: [1, 2, 4, 8, 16]}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  UseHttp: !Equals [!Ref ApiType, HTTP]
  UseRest: !Not [!Condition UseHttp]
  AlarmsOn: !Or [!Equals [!Ref Alarms, "on"], !And [!Equals [!Ref Alarms, auto], !Condition IsProd]]
  ScaleToZero: !Not [!Condition IsProd]
  ExtractionOn: !Not [!Equals [!Ref Extraction, ""]]
  CreateCollection: !Equals [!Ref VectorStore, opensearch]
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
    Condition: CreateCollection
    Properties:
      Generation: NEXTGEN
      StandbyReplicas: DISABLED
      CapacityLimits:
        MaxIndexingCapacityInOcu: !Ref MaxIndexingOcu
        MaxSearchCapacityInOcu: !Ref MaxSearchOcu
        MinIndexingCapacityInOcu: !If [ScaleToZero, 0, 0.5]
        MinSearchCapacityInOcu: !If [ScaleToZero, 0, 0.5]
  Collection:
    Type: AWS::OpenSearchServerless::Collection
    Condition: CreateCollection
    Properties: {Type: VECTORSEARCH}
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      PointInTimeRecoverySpecification: {PointInTimeRecoveryEnabled: true}
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
    search = {
        **add,
        "requests": {"dynamodb:BatchGetItem": 1, "opensearch:msearch": 1, "opensearch:search k-NN": 1},
        "wru": 0.0,
        "rru": 4.0,
        "titanTokens": 5,
    }
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
    # Awake all month: two search workers and one indexing worker, 0.5 OCU each, 730 h at $0.24.
    assert woken["OpenSearch OCUs (woken by the schedules)"] == pytest.approx(1.5 * 730 * 0.24)


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
    # 10 ms of CPU at 256 MB is 10 * 1769 / 256 ms; a DynamoDB read waits 4 ms at the low end, each of the
    # two OpenSearch requests 15 ms.
    duration = (10 * 1769 / 256 + 4 + 2 * 15) / 1000 * 0.25
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


def test_scale_to_zero_stays_awake_with_traffic_and_bills_the_wakes_workers() -> None:
    assert awake_share(0.0) == 0.0
    assert awake_share(1.0) == pytest.approx(1.0)
    dev = derive_case(template(), "dev", {})
    prod = derive_case(template(), "prod", {"Stage": "prod"})
    measured = counts()
    assert monthly(dev, measured, 0, INIT)["OpenSearch OCUs"] == 0.0
    quiet = monthly(dev, measured, 10_000, INIT)["OpenSearch OCUs"]
    assert 0 < quiet < monthly(prod, measured, 10_000, INIT)["OpenSearch OCUs"]
    # Busy enough to stay up all month, too quiet to need more than the wake's 1.0 search + 0.5 indexing OCU.
    assert monthly(dev, measured, 10_000_000, INIT)["OpenSearch OCUs"] == pytest.approx(1.5 * 730 * 0.24, rel=0.01)
    # Kept up all month at its minimum in prod: 0.5 + 0.5 OCU.
    assert monthly(prod, measured, 10_000, INIT)["OpenSearch OCUs"] == pytest.approx(175.20)


def test_an_even_trickle_of_one_call_every_ten_minutes_keeps_the_collection_awake_all_month() -> None:
    trickle, business, bursts = SHAPES["trickle"], SHAPES["business"], SHAPES["bursts"]
    assert SECONDS_A_MONTH / 4_380 == 600  # one call every 10 minutes
    assert awake_seconds(trickle, 4_380) == SECONDS_A_MONTH
    assert awake_seconds(trickle, 2_190) == pytest.approx(SECONDS_A_MONTH / 2)  # 20-minute gaps: up half the time
    assert awake_seconds(trickle, 100) == 100 * 600
    assert awake_seconds(trickle, 0) == 0.0
    # Business hours: 22 windows of 12 h; calls under 10 minutes apart keep each window up, plus 10 minutes.
    assert awake_seconds(business, 22 * 72) == pytest.approx(22 * (11 * 3600 + 50 * 60 + 600))
    assert awake_seconds(business, 1_000_000) == pytest.approx(22 * (12 * 3600 + 600), rel=1e-3)
    assert awake_seconds(business, 22) == 22 * 600  # one call a day
    # Bursts: sessions of 20 calls over 10 minutes at random; idle between them unless they are frequent.
    assert awake_seconds(bursts, 20) == pytest.approx(SECONDS_A_MONTH * (1 - math.exp(-1200 / SECONDS_A_MONTH)))
    assert awake_seconds(bursts, 10_000_000) == pytest.approx(SECONDS_A_MONTH)
    for shape in SHAPES.values():
        hours = [awake_seconds(shape, volume) for volume in (0, *CURVE_VOLUMES)]
        assert hours == sorted(hours)
        assert hours[-1] <= SECONDS_A_MONTH
    # The bill follows the hours: business hours bill less than the trickle at the same volume.
    dev = derive_case(template(), "dev", {})
    trickled = ocu_month(dev, 100_000, shape=trickle)
    assert trickled.awake_hours == pytest.approx(730)
    assert trickled.dollars == pytest.approx(1.5 * 730 * 0.24)
    assert ocu_month(dev, 100_000, shape=business).dollars < trickled.dollars


def test_search_ocus_grow_with_the_stored_memories_and_need_a_larger_maximum() -> None:
    dev = derive_case(template(), "dev", {})
    assert dev.ocu_max_parameter == "MaxSearchOcu"
    assert dev.ocu_max_allowed[-1] == 96.0
    small = ocu_month(dev, 1_000_000, stored=0)
    assert (small.search, small.max_search) == (1.0, 2.0)
    held = ocu_month(dev, 1_000_000, stored=6_000_000)  # 0.8 search OCU a million memories
    assert held.search == pytest.approx(4.8)
    assert held.max_search == 8.0
    assert held.dollars == pytest.approx((4.8 + 0.5) * 730 * 0.24)
    assert ocu_month(dev, 1_000_000, stored=600_000_000).max_search is None  # 480 OCU: past the template's 96
    # The month's bill carries the collection's storage and the table's, with point-in-time recovery.
    measured = counts(dynamodbBytesPerMemory=1024.0)
    bill = monthly(dev, measured, 1_000_000, INIT, stored=6_000_000)
    table_gb = 6_000_000 * 1024 / 2**30
    assert dev.pitr
    assert bill["DynamoDB storage"] == pytest.approx(table_gb * 0.25)
    assert bill["DynamoDB point-in-time recovery"] == pytest.approx(table_gb * 0.20)
    assert bill["OpenSearch storage"] == pytest.approx(6_000_000 * 4096 / 2**30 * 0.024)
    assert bill["OpenSearch OCUs"] == pytest.approx(held.dollars)


def test_s3vectors_has_no_collection_and_prices_its_requests_by_upload_and_index_size() -> None:
    s3v = derive_case(template(), "s3v", {"VectorStore": "s3vectors"})
    assert s3v.vector_store == "s3vectors" and s3v.ocu_min is None and s3v.scale_to_zero is False
    measured = counts()
    swapped = s3vectors_counts(measured)
    assert swapped["memory_add"]["requests"] == {
        "dynamodb:PutItem": 1,
        "bedrock-runtime:InvokeModel": 1,
        "s3vectors:PutVectors": 1.0,
    }
    assert measured["memory_add"]["requests"]["opensearch:bulk"] == 1  # the measured counts are left alone
    # A PutVectors bills at least 128 KB at $0.20 a GB; a query $2.50 a million and the data it processes:
    # every vector of the index (4 KB of float32, its key and filterable metadata: 4,392 bytes), its first
    # 100 thousand at $0.004 a TB, the rest at $0.002.
    assert s3vectors_requests({"s3vectors:PutVectors": 1}, 0) == pytest.approx(128 * 1024 / 2**30 * 0.20)
    assert s3vectors_query_processing(50_000) == pytest.approx(50_000 * 4392 / 2**40 * 0.004)
    assert s3vectors_query_processing(1_100_000) == pytest.approx(4392 / 2**40 * (100_000 * 0.004 + 1e6 * 0.002))
    query = s3vectors_requests({"s3vectors:QueryVectors": 1}, 1_100_000)
    assert query == pytest.approx(2.50 / 1e6 + s3vectors_query_processing(1_100_000))
    # The search sends two queries (one a namespace ranked) over every stored memory; nothing idles.
    search = tool_per_million(s3v, measured, "memory_search", 1e6, INIT, stored=1_100_000)
    assert search["S3 Vectors requests"] == pytest.approx(2 * query * 1e6)
    bill = monthly(s3v, measured, 1_000_000, INIT, stored=1_100_000)
    assert "OpenSearch OCUs" not in bill and "OpenSearch storage" not in bill
    assert bill["S3 Vectors storage"] == pytest.approx(1_100_000 * (4096 + 40 + 256 + 768) / 2**30 * 0.06)
    floor, dev_floor = idle_floor(s3v, measured, INIT), idle_floor(derive_case(template(), "dev", {}), measured, INIT)
    assert not [line for line in floor if line.startswith("OpenSearch")]
    assert sum(floor.values()) == pytest.approx(sum(dev_floor.values()) - dev_floor["OpenSearch storage"])


def test_agentcore_prices_events_retrievals_and_stored_records_with_no_floor() -> None:
    assert agentcore_monthly(0) == 0.0
    assert agentcore_monthly(1e6) == pytest.approx(0.5e6 / 1000 * 0.25 + 0.5e6 / 1000 * 0.50)
    assert agentcore_monthly(1e6, stored_records=6e6) == pytest.approx(125 + 250 + 6e6 / 1000 * 0.75)
    assert agentcore_monthly(1e6, {"memory_add": 1.0}) == pytest.approx(250)
    # Stored memories: one a memory_add, kept 12 months.
    assert stored_memories(1_000_000) == 6_000_000
    assert stored_memories(10_000, {"memory_add": 0.2, "memory_search": 0.8}) == 24_000


def test_the_curve_has_every_volume_and_shape_and_grows_with_volume() -> None:
    stores = {
        "opensearch": derive_case(template(), "dev", {}),
        "s3vectors": derive_case(template(), "s3v", {"VectorStore": "s3vectors"}),
    }
    points, options = curve(stores, counts(dynamodbBytesPerMemory=900.0), INIT)
    assert len(points) == len(CURVE_VOLUMES) * len(SHAPES) == len(options)
    fields = {"calls_per_month", "shape", "stored_memories", "config", "parameters", "mnemo_usd", "agentcore_usd"}
    assert all(set(point) == fields for point in points)
    assert {(p["calls_per_month"], p["shape"]) for p in points} == {(v, s) for v in CURVE_VOLUMES for s in SHAPES}
    for point, detail in zip(points, options, strict=True):
        assert point["stored_memories"] == stored_memories(point["calls_per_month"])
        assert point["agentcore_usd"] == pytest.approx(
            agentcore_monthly(point["calls_per_month"], stored_records=point["stored_memories"]), abs=0.01
        )
        by_store = detail["options"]
        store = point["parameters"]["VectorStore"]
        # The recommended config is the cheapest the template can deploy; its parameters name it.
        assert point["config"] == config_name(store, by_store[store]) == by_store[store]["config"]
        assert by_store[store]["feasible"]
        assert point["mnemo_usd"] == min(o["usd"] for o in by_store.values() if o["feasible"])
        assert point["mnemo_usd"] == pytest.approx(sum(by_store[store]["bill"].values()), abs=0.01)
    for shape in SHAPES:
        line = [p for p in points if p["shape"] == shape]
        for key in ("stored_memories", "mnemo_usd", "agentcore_usd"):
            values = [p[key] for p in line]
            assert values == sorted(values) and values[0] < values[-1]
    # At 10 thousand calls nothing idles on S3 Vectors, while a collection bills its wakes.
    first = options[0]["options"]
    assert first["s3vectors"]["usd"] < first["opensearch"]["usd"]
    assert points[0]["config"] == "s3vectors"


def test_paths_in_the_results_are_relative_to_the_repository(tmp_path: Path) -> None:
    from aws_fixtures import ROOT

    assert repo_relative(ROOT / "docs" / "deploy-cost.png", ROOT) == "docs/deploy-cost.png"
    assert not repo_relative(tmp_path / "deploy-cost.png", ROOT).startswith("/")
    committed = json.loads((ROOT / "bench" / "results" / "deploy_cost.json").read_text())
    assert committed["plot"] == "docs/deploy-cost.png"

    def strings(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    assert not [text for text in strings(committed) if str(ROOT) in text or text.startswith("/")]
    assert {"curve", "curveAssumptions"} <= set(committed)


def test_a_custom_metric_two_functions_emit_is_billed_once() -> None:
    shared = "Mnemo/dev/EmbeddingTokens[service=mnemo]"
    measured = counts(emf={"memory_add": [shared, "a"], "memory_search": [shared, "b"]})
    busy = custom_metrics_month(measured, {"memory_add": 1.0, "memory_search": 1.0})
    assert busy == pytest.approx(3 * 0.30)
    assert custom_metrics_month(measured, {"memory_add": 0.0, "memory_search": 0.0}) == 0.0


def test_schedule_expressions() -> None:
    assert schedule_per_month("rate(5 minutes)") == pytest.approx(730 * 12)
    assert schedule_per_month("rate(1 hour)") == pytest.approx(730)
    assert schedule_per_month("cron(0 9 * * ? *)") == pytest.approx(730 / 24)
    assert schedule_per_month("cron(0/15 * * * ? *)") == pytest.approx(4 * 730)


@pytest.mark.parametrize("parameters", [{}, {"Stage": "prod"}, {"VectorStore": "s3vectors"}])
def test_template_yaml_is_readable_for_the_benchmarks_cases(parameters: dict[str, str]) -> None:
    from aws_fixtures import ROOT

    real = cloudformation_yaml.load_template((ROOT / "template.yaml").read_text())
    case = derive_case(real, "case", parameters)
    assert set(case.api.values()) <= {"REST", "HTTP"} and set(case.api) == {"memory_add", "memory_search"}
    assert set(case.memory_mb) >= {"memory_add", "memory_search", "indexer", "knowledge_sync"}
    assert case.schedules.get("indexer") and case.schedules.get("knowledge_sync")
    assert case.pitr
    if parameters.get("VectorStore") == "s3vectors":
        assert case.ocu_min is None and case.vector_store == "s3vectors"
    else:
        assert case.ocu_min is not None and case.ocu_max_parameter == "OpenSearchMaxSearchOcu"
        assert case.ocu_max_allowed and case.ocu_max_allowed[-1] >= case.ocu_max[1]
        assert case.indexing_max_parameter == "OpenSearchMaxIndexingOcu"
        assert case.indexing_max_allowed and case.indexing_max_allowed[-1] >= case.ocu_max[0]


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


def _phases() -> dict[str, Any]:
    """Counts with a keyed and a dated add beside the plain one: the keyed one as the plain one (its k-NN
    _msearch counted as two searches), the dated one reading the scope's pointer and its predecessor, writing
    both in a transaction, embedding the pair (more tokens) and checking one search; neither hands the indexer
    a record."""
    plain = counts()["memory_add"]
    keyed = {**plain, "requests": {**plain["requests"], "opensearch:msearch k-NN": 1}, "knnSearches": 2}
    dated = {
        **plain,
        "requests": {
            "dynamodb:GetItem": 2,
            "dynamodb:TransactWriteItems": 1,
            "bedrock-runtime:InvokeModel": 1,
            "opensearch:bulk": 1,
            "opensearch:msearch k-NN": 1,
        },
        "wru": 4.0,
        "rru": 2.0,
        "titanTokens": 100,
        "knnSearches": 1,
    }
    none = {"indexer": {**counts()["indexer"], "requests": {}, "rru": 0.0}, "recordsPerAdd": 0.0}
    return {"memory_add keyed": keyed, "memory_add dated": dated, "indexerOf": dict.fromkeys(ADD_PHASES, none)}


def test_a_keyed_and_a_dated_add_are_priced_from_their_own_counts_in_memory_adds_function() -> None:
    assert PHASES == ("memory_add", "memory_search", "memory_add keyed", "memory_add dated")
    dev = derive_case(template(), "dev", {})
    measured = counts(**_phases())
    dated = tool_per_million(dev, measured, "memory_add dated", 1e6, INIT, high=False)
    assert dated["API Gateway HTTP"] == 1.00
    assert dated["DynamoDB writes"] == pytest.approx(4 * 0.625)
    assert dated["DynamoDB reads"] == pytest.approx(2 * 0.125)  # its own two reads: no indexer record
    assert dated["Titan tokens"] == pytest.approx(100 / 1000 * 0.00002 * 1e6)
    assert dated["Lambda requests"] == pytest.approx(0.20)
    # memory_add's MemorySize (256): 10 ms of CPU scaled, three DynamoDB requests at 4 ms, Titan at 30 ms, two
    # OpenSearch requests at 15 ms.
    duration = (10 * 1769 / 256 + 3 * 4 + 30 + 2 * 15) / 1000 * 0.25
    assert dated["Lambda duration"] == pytest.approx(duration * PRICES["lambda_arm_gb_second"] * 1e6)
    plain = tool_per_million(dev, measured, "memory_add", 1e6, INIT, high=False)
    keyed = tool_per_million(dev, measured, "memory_add keyed", 1e6, INIT, high=False)
    # At the add's share of the mix: the same cold starts as any add (the plain one's indexer has its own too).
    assert dated["Lambda INIT (cold starts)"] == pytest.approx(keyed["Lambda INIT (cold starts)"])
    assert plain["Lambda INIT (cold starts)"] > keyed["Lambda INIT (cold starts)"]
    # The plain add hands the indexer a record (counts()), the keyed one none: one Lambda request, no read.
    assert (plain["Lambda requests"], keyed["Lambda requests"]) == (pytest.approx(0.40), pytest.approx(0.20))
    assert (plain["DynamoDB reads"], keyed["DynamoDB reads"]) == (pytest.approx(0.125), 0.0)
    # A phase with no indexer runs of its own takes the plain add's.
    fallback = counts(**{"memory_add dated": measured["memory_add dated"]})
    assert tool_per_million(dev, fallback, "memory_add dated", 1e6, INIT, high=False)["DynamoDB reads"] == (
        pytest.approx(3 * 0.125)
    )
    # The function's API serves its phases.
    rest = derive_case(template(), "rest", {"ApiType": "REST"})
    assert tool_per_million(rest, measured, "memory_add keyed", 1e6, INIT)["API Gateway REST"] == 3.50


def test_on_s3vectors_each_counted_knn_search_of_an_add_is_one_query() -> None:
    measured = counts(**_phases())
    swapped = s3vectors_counts(measured)
    assert swapped["memory_add dated"]["requests"] == {
        "dynamodb:GetItem": 2,
        "dynamodb:TransactWriteItems": 1,
        "bedrock-runtime:InvokeModel": 1,
        "s3vectors:PutVectors": 1.0,
        "s3vectors:QueryVectors": 1.0,
    }
    assert swapped["memory_add keyed"]["requests"]["s3vectors:QueryVectors"] == 2.0
    # Without the run's count, an add's k-NN _msearch is S3VECTORS_QUERIES_PER_ADD queries (two searches).
    plain = counts()["memory_add"]
    uncounted = counts(memory_add={**plain, "requests": {**plain["requests"], "opensearch:msearch k-NN": 1}})
    assert s3vectors_counts(uncounted)["memory_add"]["requests"]["s3vectors:QueryVectors"] == 2.0
    assert S3VECTORS_QUERIES_PER_ADD == 2
    s3v = derive_case(template(), "s3v", {"VectorStore": "s3vectors"})
    lines = tool_per_million(s3v, measured, "memory_add dated", 1e6, INIT, stored=1_100_000)
    put = s3vectors_requests({"s3vectors:PutVectors": 1}, 0)
    query = s3vectors_requests({"s3vectors:QueryVectors": 1}, 1_100_000)
    assert lines["S3 Vectors requests"] == pytest.approx((put + query) * 1e6)


def test_the_indexing_maximum_is_sized_to_the_adds_as_the_search_one_is() -> None:
    dev = derive_case(template(), "dev", {})
    assert dev.indexing_max_parameter == "MaxIndexingOcu"
    assert dev.indexing_max_allowed == (1.0, 2.0, 4.0, 8.0, 16.0)
    business = SHAPES["business"]
    active = 22 * 12 * 3600
    quiet = ocu_month(dev, 1e6, shape=business)
    assert (quiet.indexing, quiet.max_indexing) == (0.5, 2.0)
    busy = ocu_month(dev, 1e8, shape=business)
    adds = searches = 0.5e8 / active  # about 52.6 a second each
    # 2.6 indexing OCU at 20 adds a second an OCU: billed in full, the maximum raised to hold it.
    assert busy.indexing == pytest.approx(adds / 20)
    assert busy.max_indexing == 4.0
    assert busy.search == pytest.approx(searches / 20) and busy.max_search == 4.0
    assert busy.dollars == pytest.approx((adds + searches) / 20 * busy.awake_hours * 0.24)
    # With the memories stored (600 million: 480 search OCU), a template allowing search maxima up to 1,696.
    wide = dataclasses.replace(dev, ocu_max_allowed=(1.0, 2.0, 4.0, 8.0, *(float(v) for v in range(16, 1697, 16))))
    measured = counts(dynamodbBytesPerMemory=900.0)
    option = store_option(wide, measured, 1e8, INIT, shape=business)
    assert option["feasible"]
    assert option["parameters"] == {"MaxIndexingOcu": 4, "MaxSearchOcu": 480}
    assert (option["maxIndexingOcu"], option["maxSearchOcu"]) == (4.0, 480.0)
    assert config_name("opensearch", option) == "opensearch, MaxIndexingOcu=4, MaxSearchOcu=480"
    # All month (a trickle) the adds are spread thinner: 0.95 OCU, within the default of 2.
    spread = store_option(wide, measured, 1e8, INIT, shape=SHAPES["trickle"])
    assert spread["parameters"] == {"MaxSearchOcu": 480} and spread["maxIndexingOcu"] == 2.0
    # A maximum that is no parameter's cannot be raised: the config cannot be deployed, and the maximum AWS
    # would need is named.
    fixed = dataclasses.replace(wide, indexing_max_parameter=None, indexing_max_allowed=())
    stuck = store_option(fixed, measured, 1e8, INIT, shape=business)
    assert not stuck["feasible"] and stuck["neededMaxIndexingOcu"] == 4


def test_the_committed_result_prices_every_phase_and_names_both_maxima() -> None:
    from aws_fixtures import ROOT

    committed = json.loads((ROOT / "bench" / "results" / "deploy_cost.json").read_text())
    assert set(committed["totalsAt1M"]["dev"]) == set(PHASES)
    assert all(phase in committed["measured"] for phase in PHASES)
    assert set(committed["measured"]["indexerOf"]) == set(ADD_PHASES)
    figures = [row[0] for row in committed["goals"]]
    assert all(any(figure.startswith(f"{phase}, $ per million") for figure in figures) for phase in PHASES)
    for point, detail in zip(committed["curve"], committed["curveOptions"], strict=True):
        assert point["parameters"]["VectorStore"] == point["config"].split(",")[0]
        collection = detail["options"]["opensearch"]
        assert collection["maxIndexingOcu"] >= 2 and collection["maxSearchOcu"] >= 2


def test_the_benchmark_measures_a_keyed_add_as_one_put_and_a_dated_add_as_one_embedding(tmp_path: Path) -> None:
    """bench/deploy_cost.py --smoke on moto and osmem: what a keyed add and a dated add following another send."""
    from aws_fixtures import ROOT

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "MNEMO_BENCH_RESULTS": str(tmp_path), "TMPDIR": str(scratch)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "deploy_cost.py"), "--smoke"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,  # not a limit on speed: a run still going after this long is stuck
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "deploy_cost.json").read_text())
    measured = result["measured"]
    plain, keyed, dated = (measured[phase] for phase in ("memory_add", *ADD_PHASES))
    # A keyed add (each call a new key): one conditional PutItem of 1 WRU, no read, no transaction, one embedding
    # and the near-duplicate check's two k-NN searches.
    assert {name: n for name, n in keyed["requests"].items() if name.startswith("dynamodb:")} == {
        "dynamodb:PutItem": 1.0
    }
    assert (keyed["wru"], keyed["rru"], keyed["titanCalls"], keyed["knnSearches"]) == (1.0, 0.0, 1.0, 2.0)
    # A dated add following another the same day: one Titan call (the pair it is indexed with, at most
    # PAIR_CHARACTERS long: these memories of 200-400 characters are mostly embedded alone), a check for exact
    # repeats only (one k-NN search), the read of the scope's pointer (its tail stands for the predecessor's
    # content), then its record and the pointer each in a PutItem of its own (no transaction).
    assert dated["titanCalls"] == 1.0
    assert dated["titanTokens"] <= max(plain["titanTokens"] * 1.1, PAIR_CHARACTERS / TITAN_CHARS_PER_TOKEN + 1)
    assert dated["knnSearches"] == 1.0
    assert {name: n for name, n in dated["requests"].items() if name.startswith("dynamodb:")} == {
        "dynamodb:GetItem": 1.0,
        "dynamodb:PutItem": 2.0,
    }
    assert (dated["wru"], dated["rru"]) == (2.0, 1.0)
    # Both index inline: the stream filter hands the indexer nothing.
    assert all(measured["indexerOf"][phase]["recordsPerAdd"] == 0.0 for phase in ADD_PHASES)
    # Each phase is priced and checked against the goal.
    assert set(result["totalsAt1M"]["dev"]) == set(PHASES)
    assert sum(1 for row in result["goals"] if row[0].split(",")[0] in PHASES) == len(PHASES)
