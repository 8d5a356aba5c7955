"""`mnemo tools`, `call`, `openapi`, `docs`, `client-gen` and `generate`: the tool catalog from a shell, and what is
generated from it.

`docs`, `client-gen` and `generate` run the generator, the ``mnemo_codegen`` package (codegen/): it is installed
with the project but not shipped in the shared Lambda layer, so it is imported inside those commands only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mnemo.cli.help import EXPERIMENTAL_HELP
from mnemo.cli.output import print_json
from mnemo.errors import InvalidInput, MnemoError


def cmd_tools(args: argparse.Namespace) -> int:
    """`mnemo tools`: each tool's name and description, or with ``--json`` the whole listing with its JSON Schemas."""
    from mnemo.tools.registry import load_catalog
    from mnemo.tools.schema import tool_listing

    listing = tool_listing(load_catalog())
    if args.json:
        print_json(listing)
    else:
        for entry in listing:
            print(f"{entry['name']:<16} {entry['description']}")
    return 0


def cmd_call(args: argparse.Namespace) -> int:
    """`mnemo call TOOL [PAYLOAD]`: run one tool in process with the identity from the MNEMO_* variables and print its
    JSON answer; 1 with the error envelope when the payload or the call fails."""
    from mnemo.entry.identity import context_from_environment
    from mnemo.runtime import get_services
    from mnemo.tools.registry import get_tool

    try:
        try:
            payload = json.loads(args.payload)
        except json.JSONDecodeError as error:
            raise InvalidInput(f"body: not valid JSON ({error.msg})", {"field": "body"}) from None
        tool = get_tool(args.tool)
        result = tool.invoke(get_services(), context_from_environment(os.environ), payload)
    except MnemoError as error:
        print_json(error.envelope())
        return 1
    print_json(result)
    return 0


def cmd_openapi(args: argparse.Namespace) -> int:
    """`mnemo openapi`: the OpenAPI 3.0 document to stdout or ``--output``; with ``--bedrock`` the Bedrock Agents
    definitions per action group instead. 2 when ``--output-dir`` comes without ``--bedrock``."""
    from mnemo.tools.registry import load_catalog
    from mnemo.tools.schema import openapi_document

    if args.bedrock:
        return _bedrock_definitions(args.output_dir)
    if args.output_dir:
        print("--output-dir goes with --bedrock (one file per action group)", file=sys.stderr)
        return 2
    document = json.dumps(openapi_document(load_catalog(), server_url=args.server_url), indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(document)
    else:
        sys.stdout.write(document)
    return 0


def _bedrock_definitions(output_dir: str | None) -> int:
    """Per action group: <group>.openapi.json and <group>.functions.json (to a directory, or stdout)."""
    from mnemo.tools.bedrock_schema import action_groups, bedrock_functions, bedrock_openapi
    from mnemo.tools.registry import load_catalog

    if output_dir:
        from mnemo.tools.bedrock_schema import write_definitions

        for path in write_definitions(load_catalog(), Path(output_dir)):
            print(f"wrote {path}")
        return 0
    documents = {}
    for group, tools in action_groups(load_catalog().values()).items():
        documents[f"{group}.openapi.json"] = bedrock_openapi(group, tools)
        documents[f"{group}.functions.json"] = bedrock_functions(tools)
    print_json(documents)
    return 0


def cmd_client_gen(args: argparse.Namespace) -> int:
    """`mnemo client-gen`: write the Python client's typed methods, and catalog.json beside them, from the catalog with
    the experimental tools."""
    from mnemo.tools.registry import load_catalog
    from mnemo_codegen.client_gen import render_client_catalog, render_client_module

    catalog = load_catalog(experimental=True)
    Path(args.output).write_text(render_client_module(catalog))
    listing = Path(args.output).with_name("catalog.json")
    listing.write_text(render_client_catalog(catalog))
    print(f"wrote {args.output} and {listing}")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    """`mnemo docs`: write the tool reference (docs/tools.md by default) from the catalog with the experimental
    tools."""
    from mnemo.tools.registry import load_catalog
    from mnemo_codegen.docs import render_tools_markdown

    Path(args.output).write_text(render_tools_markdown(load_catalog(experimental=True)))
    print(f"wrote {args.output}")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    """Write (or, with --check, name) every file generated from the catalog."""
    from mnemo_codegen.generate import stale, write
    from mnemo_codegen.template_gen import StaleTemplate

    root = Path(args.root).resolve()
    if not (root / "template.yaml").is_file():
        print(
            f"{root} is not a Mnemo checkout (no template.yaml): run it from the repository, or pass --root",
            file=sys.stderr,
        )
        return 2
    try:
        if args.check:
            found = stale(root)
            for path in found:
                print(f"stale: {path.relative_to(root)}")
            if found:
                print("run `make docs` (mnemo generate) and commit the result", file=sys.stderr)
            return 1 if found else 0
        for path in write(root):
            print(f"wrote {path.relative_to(root)}")
    except StaleTemplate as error:
        print(f"template.yaml: {error}", file=sys.stderr)
        return 2
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the `tools`, `call`, `openapi`, `docs` and `client-gen` parsers."""
    generate = commands.add_parser(
        "generate", help="write what is generated from the catalog: template.yaml's blocks, docs, client, entries"
    )
    generate.add_argument("--root", default=".", help="the repository to write into (default: here)")
    generate.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    generate.set_defaults(run=cmd_generate)

    tools = commands.add_parser("tools", help="list the tool catalog")
    tools.add_argument("--json", action="store_true", help="names, descriptions and JSON Schemas")
    tools.add_argument("--experimental", action="store_true", help=EXPERIMENTAL_HELP)
    tools.set_defaults(run=cmd_tools)

    call = commands.add_parser("call", help="call one tool in process; identity from MNEMO_* variables")
    call.add_argument("tool")
    call.add_argument("payload", nargs="?", default="{}")
    call.add_argument("--data-dir", type=Path)
    call.add_argument("--experimental", action="store_true", help=EXPERIMENTAL_HELP)
    call.set_defaults(run=cmd_call)

    openapi = commands.add_parser("openapi", help="print the OpenAPI 3.0 document")
    openapi.add_argument("--output", "-o")
    openapi.add_argument("--server-url")
    openapi.add_argument(
        "--bedrock", action="store_true", help="Bedrock Agents action groups: OpenAPI and function details per family"
    )
    openapi.add_argument("--output-dir", help="with --bedrock: write <group>.openapi.json and <group>.functions.json")
    openapi.set_defaults(run=cmd_openapi)

    docs = commands.add_parser("docs", help="write the tool reference (docs/tools.md)")
    docs.add_argument("--output", "-o", default="docs/tools.md")
    docs.set_defaults(run=cmd_docs)

    client_gen = commands.add_parser("client-gen", help="write the Python client's typed methods from the catalog")
    client_gen.add_argument("--output", "-o", default="layers/shared/mnemo/client/tools.py")
    client_gen.set_defaults(run=cmd_client_gen)
