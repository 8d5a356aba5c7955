"""Help texts of the `mnemo` command: every option shows its default.

``CommandParser`` is the parser class of every sub-command (argparse gives nested
sub-commands their parent's class), so a sub-command added anywhere gets the same
help formatter without asking for it.

An option's help gains ``(default: ...)`` unless:
- its help already speaks of its default (the word "default" appears in it);
- it is a flag (``store_true``: off unless given) or has no default at all;
- its value falls back to a setting when not given: then the setting is named
  (``--data-dir``: ``MNEMO_DATA_DIR, else .mnemo``), unless the help names it already.
Descriptions and epilogs keep their line breaks (they are written as paragraphs and lists).
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

#: Options whose default is resolved later, from a setting: what the help names instead of ``None``.
SETTING_FALLBACKS = {"data_dir": "MNEMO_DATA_DIR, else .mnemo"}
#: The help of ``--experimental``, which ``serve``, ``mcp``, ``tools`` and ``call`` take.
EXPERIMENTAL_HELP = "serve the experimental tools too (code outline); as MNEMO_EXPERIMENTAL=1"


def _with_default(action: argparse.Action) -> str | None:
    """The action's help with its default, or its help as it is (the rules above)."""
    text = action.help or ""
    if action.default is argparse.SUPPRESS or not action.option_strings or "default" in text.lower():
        return action.help
    if action.default is None or action.default is False:
        fallback = SETTING_FALLBACKS.get(action.dest)
        if not fallback or fallback.split(",")[0] in text:  # no setting, or the help names it already
            return action.help
        return f"{text} (default: {fallback})".lstrip()
    shown = str(action.default).replace("%", "%%")  # help texts are %-formatted
    return f"{text} (default: {shown})".lstrip()


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def _format_action(self, action: argparse.Action) -> str:
        if not action.help and _with_default(action):
            # argparse prints no help line for an option without help: give it one that is just the default.
            action = copy.copy(action)
            action.help = _with_default(action)
        return super()._format_action(action)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        return _with_default(action)


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose help shows defaults, whatever formatter its caller named."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["formatter_class"] = HelpFormatter
        super().__init__(*args, **kwargs)
