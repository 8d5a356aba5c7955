"""The `mnemo` command: serve, call and describe the tools.

``main`` parses the command line and runs the command it names; each group of
commands is a module of this package that adds its own parsers:

- ``serve``: ``serve`` (HTTP) and ``mcp`` (stdio);
- ``tools``: ``tools``, ``call``, ``openapi``, ``docs``, ``client-gen`` (the catalog);
- ``reindex``: ``reindex`` (the vector index from the records), ``expire`` (expired memories and turns removed);
- ``events``: ``events`` (the change events' deliveries to the webhooks);
- ``knowledge``: ``knowledge validate|push`` and ``sync``;
- ``workspace``: ``workspace push|pull``;
- ``portability``: ``import`` and ``export`` (``memories``: the JSON Lines memories half of ``import``).
- ``erasure``: ``erase-user`` (one user of a tenant, erased from every family).

``help`` makes every option's help show its default, ``progress`` draws the progress
line of the long commands and ``output`` prints their JSON. Each command imports
what it runs when it runs, so ``mnemo --help`` and ``mnemo serve`` load only what
they need.
"""

from __future__ import annotations

import os

# One BLAS thread per process, for every local entry point (serve, call, mcp, import, ...): OpenBLAS threads
# waiting on each other made a 10k x 256 matrix-vector product take 11 ms instead of 0.3 ms on a busy 2-core
# machine, and a pool only fights the embedder's own threads. Set before anything can import numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse


def _settings_env(args: argparse.Namespace) -> None:
    if getattr(args, "data_dir", None):
        os.environ["MNEMO_DATA_DIR"] = str(args.data_dir)


def build_parser() -> argparse.ArgumentParser:
    """The `mnemo` parser: ``--version`` and every command group's sub-commands, in the order `mnemo --help` lists them;
    each sub-command sets ``run``."""
    from mnemo import __version__
    from mnemo.cli import erasure, events, extract, knowledge, portability, reindex, serve, tools, workspace
    from mnemo.cli.help import CommandParser

    parser = CommandParser(prog="mnemo", description="Memory and knowledge tools for AI agents.")
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}")
    # Every sub-command (and theirs) is a CommandParser: its help shows each option's default.
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    # In the order `mnemo --help` lists them.
    serve.add_commands(commands)
    tools.add_commands(commands)
    reindex.add_command(commands)
    events.add_command(commands)
    extract.add_commands(commands)
    knowledge.add_commands(commands)
    workspace.add_commands(commands)
    portability.add_commands(commands)
    erasure.add_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names (the process's arguments when None) and return its exit status. ``--experimental``
    sets MNEMO_EXPERIMENTAL and ``--data-dir`` MNEMO_DATA_DIR before the command runs."""
    args = build_parser().parse_args(argv)
    if getattr(args, "experimental", False):
        # The catalog reads the setting from the environment (front doors consult it before Services exist).
        os.environ["MNEMO_EXPERIMENTAL"] = "1"
    _settings_env(args)
    return int(args.run(args))
