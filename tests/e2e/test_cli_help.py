"""`mnemo --version`, and help texts that show every option's default, as a user runs them."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from mnemo.cli import build_parser

MNEMO = [sys.executable, "-m", "mnemo.cli"]
ROOT = Path(__file__).resolve().parents[2]


def mnemo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "PORT"}  # PORT changes --port's default
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, env=env)


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every sub-command, nested ones too, with the words that name it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


def test_version_prints_the_projects_version() -> None:
    shown = mnemo("--version")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert shown.returncode == 0
    assert shown.stdout == f"mnemo {project['version']}\n"


def test_serve_help_shows_the_defaults() -> None:
    shown = mnemo("serve", "--help")
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    assert "(default: 127.0.0.1)" in text
    assert "(default: 8765)" in text  # PORT is not set here


def test_every_option_with_a_default_says_it_in_its_help() -> None:
    """An option that takes a value other than None when left out shows that value; flags (off unless
    given) need not. A --data-dir names where its folder comes from."""
    unsaid = []
    for words, parser in commands(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            defaulted = action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
            if not defaulted and action.dest != "data_dir":
                continue
            rendered = formatter._format_action(action)
            if action.dest == "data_dir":
                if "MNEMO_DATA_DIR" not in rendered:
                    unsaid.append((words, action.dest))
            elif "default" not in rendered.lower():
                unsaid.append((words, action.dest))
    assert unsaid == []


def test_every_sub_command_help_renders() -> None:
    names = [words for words, _ in commands(build_parser())]
    assert ("serve",) in names
    assert ("knowledge", "push") in names
    assert ("workspace", "pull") in names
    for words in names:
        shown = mnemo(*words, "--help")
        assert shown.returncode == 0, (words, shown.stderr)
        assert shown.stdout.startswith(f"usage: mnemo {' '.join(words)}")
