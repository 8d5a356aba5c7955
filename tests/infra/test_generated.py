"""What is generated from the catalog is current, and the generator keeps its promises.

`mnemo generate --check` must find nothing stale in the repository: template.yaml's generated blocks,
functions/*/app.py, docs/tools.md, the client and the counts in the docs. The rest checks the generator
itself: its blocks, its refusals, and that a function is granted only what its tools declare.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, load_catalog
from mnemo.tools.rights import WORKSPACE_READ, Rights
from mnemo_codegen.cloudformation_yaml import load_template
from mnemo_codegen.generate import recount, stale
from mnemo_codegen.template_alarms import MAX_METRICS_PER_ALARM, alarm_condition, error_alarms, throttle_alarms
from mnemo_codegen.template_gen import StaleTemplate, render_template
from mnemo_codegen.template_names import bedrock_function_id, function_id
from mnemo_codegen.template_policies import policies

ROOT = Path(__file__).resolve().parents[2]


def test_every_generated_file_is_current() -> None:
    found = stale(ROOT)
    assert not found, f"stale (run `make docs`): {[str(path.relative_to(ROOT)) for path in found]}"


def test_the_template_says_it_is_partly_generated_and_from_what() -> None:
    head = (ROOT / "template.yaml").read_text().split("\n")[:8]
    assert head[0].startswith("# Partly generated.")
    assert any("mnemo generate" in line and "template_gen.py" in line for line in head)


def test_a_missing_or_unclosed_block_is_refused() -> None:
    text = (ROOT / "template.yaml").read_text()
    catalog = load_catalog(experimental=True)
    without_end = text.replace("# <<< generated: log-groups", "# (removed)")
    with pytest.raises(StaleTemplate, match="log-groups"):
        render_template(without_end, catalog)
    without_block = text.replace("# >>> generated: error-alarms", "# (removed)")
    with pytest.raises(StaleTemplate, match="error-alarms"):
        render_template(without_block, catalog)


def test_rendering_twice_changes_nothing() -> None:
    text = (ROOT / "template.yaml").read_text()
    catalog = load_catalog(experimental=True)
    once = render_template(text, catalog)
    assert render_template(once, catalog) == once


def test_every_tool_function_is_granted_exactly_its_declared_rights() -> None:
    doc = load_template((ROOT / "template.yaml").read_text())
    for tool in load_catalog(experimental=True).values():
        granted = doc["Resources"][function_id(tool)]["Properties"]["Policies"]
        expected = load_template("\n".join(policies(tool.rights)))["Policies"]
        assert granted == expected, tool.name


def test_rights_union_takes_the_larger_of_each() -> None:
    read = Rights(records="read", embeds=True, index="read")
    delete = Rights(records="read-put", index="delete", bucket=WORKSPACE_READ)
    both = read.union(delete)
    assert both == Rights(records="read-put", embeds=True, index="delete", bucket=WORKSPACE_READ)
    assert Rights.covering([]) == Rights(records="read")


def test_rights_refuse_what_cannot_be_granted() -> None:
    with pytest.raises(ValueError, match="records"):
        Rights(records="write")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="index access"):
        Rights(records="read", embeds=True)


def test_action_group_error_alarms_read_at_most_ten_metrics_each() -> None:
    """Every family's action group function is in one alarm of its condition, each metric named for its family."""
    catalog = load_catalog(experimental=True)
    tools = [replace(tool, family=f"family{n}") for n, tool in enumerate(catalog.values())][:23]
    tools.append(next(tool for tool in catalog.values() if tool.family in EXPERIMENTAL_FAMILIES))
    doc = load_template("\n".join(error_alarms(tools)))
    watched = []
    for alarm in doc.values():
        metrics = alarm["Properties"]["Metrics"]
        assert len(metrics) - 1 <= MAX_METRICS_PER_ALARM
        assert metrics[0]["Expression"] == " + ".join(m["Id"] for m in metrics[1:])
        for metric in metrics[1:]:
            (dimension,) = metric["MetricStat"]["Metric"]["Dimensions"]
            assert dimension["Value"]["Ref"] == bedrock_function_id(metric["Id"])
            watched.append(metric["Id"])
    assert sorted(watched) == sorted(tool.family for tool in tools)
    assert len(doc) == 4  # 23 families: 10 + 10 + 3, and the experimental family's own
    # Every alarm needs the Alarms parameter: AlarmsOn, or combined with its functions' own condition.
    assert [alarm["Condition"] for alarm in doc.values()].count("ExperimentalAlarms") == 1
    assert {alarm["Condition"] for alarm in doc.values()} == {"AlarmsOn", "ExperimentalAlarms"}


def test_the_throttle_alarm_reads_the_accounts_one_metric_whatever_the_functions() -> None:
    few = load_template("\n".join(throttle_alarms({"OneFunction": None})))
    many = load_template("\n".join(throttle_alarms({f"Tool{n}Function": None for n in range(60)})))
    assert few == many
    (alarm,) = few.values()
    assert (alarm["Properties"]["Namespace"], alarm["Properties"]["MetricName"]) == ("AWS/Lambda", "Throttles")
    assert "Dimensions" not in alarm["Properties"] and alarm["Condition"] == "AlarmsOn"
    assert throttle_alarms({}) == []  # nothing to watch


def test_an_alarm_on_a_condition_the_template_does_not_combine_is_refused() -> None:
    with pytest.raises(ValueError, match="no alarm condition"):
        alarm_condition("SomeNewCondition")


def test_count_markers_follow_the_figures() -> None:
    text = "over the <!--count:tools-->1<!--/count--> tools and <!--count:functions-->2<!--/count--> functions"
    assert recount(text, {"tools": 40, "functions": 56}) == text.replace(">1<", ">40<").replace(">2<", ">56<")
    with pytest.raises(ValueError, match="unknown count"):
        recount("<!--count:tool-->1<!--/count-->", {"tools": 40})


def test_the_client_repeats_exactly_the_tools_the_catalog_marks_repeatable() -> None:
    from mnemo.client.repeat import READ_ONLY

    catalog = load_catalog(experimental=True)
    assert {name for name, tool in catalog.items() if tool.repeatable} == READ_ONLY
    listing = json.loads((ROOT / "layers/shared/mnemo/client/catalog.json").read_text())
    assert listing  # generated alongside


def test_mnemo_generate_check_names_what_is_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mnemo.cli import main

    assert main(["generate", "--check", "--root", str(ROOT)]) == 0
    assert main(["generate", "--check", "--root", str(tmp_path)]) == 2  # not a checkout: said, no traceback
    assert "not a Mnemo checkout" in capsys.readouterr().err
    (tmp_path / "template.yaml").write_text("Resources: {}\n")  # a template without its generated blocks
    assert main(["generate", "--root", str(tmp_path)]) == 2
    assert "has no generated block" in capsys.readouterr().err
