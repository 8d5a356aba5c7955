"""Everything generated from the catalog, in one place: ``mnemo generate`` (``make docs``) writes it,
``mnemo generate --check`` (a test, so CI) names what is stale.

- template.yaml's generated blocks (``mnemo_codegen.template_gen``): functions, routes, permissions,
  policies, logs, alarms, the Bedrock action groups and their schemas;
- ``functions/<tool>/app.py`` and ``functions/bedrock_<family>/app.py``, the Lambda entries;
- docs/tools.md, and ``mnemo.client``'s typed methods and catalog.json;
- the counts in README.md and docs/*.md, each written between ``<!--count:NAME-->`` and ``<!--/count-->``
  (tools, all-tools, experimental-tools, functions).

Adding a tool is then its request and response models, its service method, its catalog entry (with its
``Rights``), its test, and ``make docs``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, Tool, load_catalog

TEMPLATE = "template.yaml"
TOOLS_DOC = "docs/tools.md"
CLIENT_MODULE = "layers/shared/mnemo/client/tools.py"
CLIENT_CATALOG = "layers/shared/mnemo/client/catalog.json"
#: Markdown files whose counts follow the catalog.
COUNTED = ("README.md", "docs/*.md")
_COUNT = re.compile(r"<!--count:(?P<name>[a-z-]+)-->(?P<value>[^<]*)<!--/count-->")


def tool_entry(tool: Tool) -> str:
    """functions/<tool>/app.py: the tool's Lambda behind API Gateway."""
    experimental = " (experimental)" if tool.family in EXPERIMENTAL_FAMILIES else ""
    return (
        f'"""Lambda entry for the {tool.name} tool{experimental}: API Gateway proxy event in, proxy response out."""\n'
        "\n"
        "from mnemo.entry.apigw import tool_handler\n"
        "\n"
        f'handler = tool_handler("{tool.name}", family="{tool.family}")\n'
    )


def bedrock_entry(family: str) -> str:
    """functions/bedrock_<family>/app.py: the family's Bedrock action group Lambda."""
    experimental = "experimental; " if family in EXPERIMENTAL_FAMILIES else ""
    return (
        f'"""Lambda entry for the {family} action group of a Bedrock agent ({experimental}OpenAPI or function '
        'details)."""\n'
        "\n"
        "from mnemo.entry.bedrock import action_group_handler\n"
        "\n"
        f'handler = action_group_handler("{family}")\n'
    )


def counts(tools: Mapping[str, Tool], template_text: str) -> dict[str, int]:
    """The figures the docs quote: tools served by default, with the experimental ones, and functions."""
    from mnemo_codegen.template_gen import stack_functions

    experimental = sum(1 for tool in tools.values() if tool.family in EXPERIMENTAL_FAMILIES)
    return {
        "tools": len(tools) - experimental,
        "all-tools": len(tools),
        "experimental-tools": experimental,
        "functions": len(stack_functions(template_text)),
    }


def recount(text: str, figures: Mapping[str, int]) -> str:
    """``text`` with each count marker's value set from ``figures`` (an unknown name is an error)."""

    def value(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in figures:
            raise ValueError(f"unknown count {name!r}; one of {', '.join(figures)}")
        return f"<!--count:{name}-->{figures[name]}<!--/count-->"

    return _COUNT.sub(value, text)


def expected(root: Path, tools: Mapping[str, Tool] | None = None) -> dict[Path, str]:
    """Every generated file under ``root`` with the content the catalog gives it."""
    from mnemo_codegen.client_gen import render_client_catalog, render_client_module
    from mnemo_codegen.docs import render_tools_markdown
    from mnemo_codegen.template_gen import render_template
    from mnemo_codegen.template_names import families

    catalog = dict(tools if tools is not None else load_catalog(experimental=True))
    template = render_template((root / TEMPLATE).read_text(), catalog)
    files = {
        root / TEMPLATE: template,
        root / TOOLS_DOC: render_tools_markdown(catalog),
        root / CLIENT_MODULE: render_client_module(catalog),
        root / CLIENT_CATALOG: render_client_catalog(catalog),
    }
    for tool in catalog.values():
        files[root / "functions" / tool.name / "app.py"] = tool_entry(tool)
    for family in families(catalog.values()):
        files[root / "functions" / f"bedrock_{family}" / "app.py"] = bedrock_entry(family)
    figures = counts(catalog, template)
    for pattern in COUNTED:
        for path in sorted(root.glob(pattern)):
            if path not in files:
                text = path.read_text()
                if _COUNT.search(text):
                    files[path] = recount(text, figures)
    return files


def _differing(root: Path, tools: Mapping[str, Tool] | None) -> dict[Path, str]:
    """The generated files whose content on disk is not what the catalog gives (missing ones too)."""
    return {
        path: content
        for path, content in expected(root, tools).items()
        if not path.exists() or path.read_text() != content
    }


def stale(root: Path, tools: Mapping[str, Tool] | None = None) -> list[Path]:
    """The generated files under ``root`` that differ from what the catalog gives (or are missing)."""
    return list(_differing(root, tools))


def write(root: Path, tools: Mapping[str, Tool] | None = None) -> list[Path]:
    """Write every stale generated file under ``root``; the paths written."""
    written = _differing(root, tools)
    for path, content in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return list(written)
