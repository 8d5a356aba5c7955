"""The template's side of observability: the metrics namespace the functions write, and the throttling alarms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_fixtures import CloudFormationLoader

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "shared" / "mnemo"
ALARM_TOPIC = {"If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}


def template() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load((ROOT / "template.yaml").read_text(), Loader=CloudFormationLoader)
    return loaded


def alarm(doc: dict[str, Any], name: str) -> dict[str, Any]:
    resource = doc["Resources"][name]
    assert resource["Type"] == "AWS::CloudWatch::Alarm"
    properties: dict[str, Any] = resource["Properties"]
    assert properties["AlarmActions"] == properties["OKActions"] == ALARM_TOPIC
    assert properties["Threshold"] == 0 and properties["ComparisonOperator"] == "GreaterThanThreshold"
    assert properties["TreatMissingData"] == "notBreaching"
    return properties


def test_each_stage_writes_its_own_metrics_namespace() -> None:
    variables = template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == {"Sub": "Mnemo/${Stage}"}
    assert variables["POWERTOOLS_SERVICE_NAME"] == "mnemo"  # the EMF dimension `service` alarms read


def test_opensearch_throttles_alarm_reads_the_metric_the_adapter_counts() -> None:
    doc = template()
    properties = alarm(doc, "OpenSearchThrottlesAlarm")
    namespace = doc["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    # VectorStore chooses the metric: the S3 Vectors adapter's throttles, or OpenSearch's.
    assert properties["Namespace"] == namespace
    assert properties["MetricName"] == {"If": ["UseS3Vectors", "S3VectorsThrottles", "OpenSearchThrottles"]}
    assert properties["Dimensions"] == [{"Name": "service", "Value": "mnemo"}]
    assert properties["Statistic"] == "Sum"
    source = (PACKAGE / "adapters" / "aws" / "opensearch" / "errors.py").read_text()
    assert source.count('telemetry.count("OpenSearchThrottles")') == 2  # a 429 on a request and in a bulk answer


def test_an_s3_vectors_throttle_counts_the_metric_its_alarm_reads() -> None:
    from botocore.exceptions import ClientError

    from mnemo import telemetry
    from mnemo.adapters.aws.s3vectors.adapter import _translated
    from mnemo.errors import RateLimited

    counted: list[str] = []
    original = telemetry.count
    telemetry.count = lambda name, *args, **kwargs: counted.append(name)  # type: ignore[assignment]
    try:
        throttled = ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "slow down"}}, "QueryVectors")
        with pytest.raises(RateLimited), _translated():
            raise throttled
    finally:
        telemetry.count = original  # type: ignore[assignment]
    assert counted == ["S3VectorsThrottles"]


def test_bedrock_throttles_alarm_watches_both_models_the_stack_invokes() -> None:
    doc = template()
    properties = alarm(doc, "BedrockThrottlesAlarm")
    watched = {
        (m["MetricStat"]["Metric"]["Namespace"], m["MetricStat"]["Metric"]["MetricName"]): m["MetricStat"]
        for m in properties["Metrics"]
        if "MetricStat" in m
    }
    assert set(watched) == {("AWS/Bedrock", "InvocationThrottles")} and len(properties["Metrics"]) == 3
    models = [
        stat["Metric"]["Dimensions"] for m in properties["Metrics"] if "MetricStat" in m for stat in [m["MetricStat"]]
    ]
    assert models == [
        [{"Name": "ModelId", "Value": {"FindInMap": ["Titan", "Model", "Id"]}}],
        [{"Name": "ModelId", "Value": {"Ref": "ExtractorModelId"}}],
    ]
    (total,) = [m for m in properties["Metrics"] if m.get("ReturnData")]
    assert total["Expression"] == "titan + extractor"
