"""Write the generated FunctionSchema of every Bedrock action group into template.yaml.

    .venv/bin/python tests/infra/regenerate_bedrock_schemas.py [--check]

Only the ``FunctionSchema`` block of a group whose content differs from the generator's
(``mnemo openapi --bedrock``, with the experimental catalog) is rewritten, in PyYAML's block
style at the template's 120 columns; every other line of the template is left as it is.
``--check`` reports the stale groups and exits 1 without writing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from mnemo.tools.bedrock_schema import (
    action_group_name,
    action_groups,
    bedrock_functions,
    cloudformation_function_schema,
)
from mnemo.tools.registry import load_catalog

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
WIDTH = 120


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def regenerate(lines: list[str]) -> list[str]:
    """The names of the groups rewritten in ``lines`` (changed in place)."""
    stale = []
    for group, members in action_groups(load_catalog(experimental=True).values()).items():
        name = action_group_name(group)
        expected = cloudformation_function_schema(bedrock_functions(members))
        pattern = re.compile(rf"^\s*(- )?ActionGroupName: {re.escape(name)}$")
        start = next(i for i, line in enumerate(lines) if pattern.match(line))
        block = next(i for i in range(start, len(lines)) if lines[i].strip() == "FunctionSchema:")
        indent = _indent(lines[block])
        end = block + 1
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
            end += 1
        while not lines[end - 1].strip():
            end -= 1
        if yaml.safe_load("\n".join(line[indent + 2 :] for line in lines[block + 1 : end])) == expected:
            continue
        text = yaml.safe_dump(expected, sort_keys=False, width=WIDTH - indent - 2, allow_unicode=True)
        lines[block + 1 : end] = [" " * (indent + 2) + line if line else line for line in text.rstrip("\n").split("\n")]
        stale.append(name)
    return stale


def main(argv: list[str]) -> int:
    lines = TEMPLATE.read_text().split("\n")
    stale = regenerate(lines)
    if "--check" in argv:
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    if stale:
        TEMPLATE.write_text("\n".join(lines))
    print("rewrote: " + ", ".join(stale) if stale else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
