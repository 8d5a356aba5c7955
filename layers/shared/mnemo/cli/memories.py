"""The memories half of `mnemo import FILE`: memory_add inputs from JSON Lines (format version 1), read and
added by ``mnemo.portability.memories`` with the caller's identity, answered with one JSON summary (or an
error envelope) on stdout."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from mnemo.cli.output import print_json
from mnemo.cli.progress import Progress
from mnemo.errors import InvalidInput, MnemoError, ProviderError

#: Memories embedded, written and indexed together, unless ``mnemo import --batch`` says otherwise.
DEFAULT_BATCH = 500


def batch_size(text: str) -> int:
    """The ``--batch`` argument type: an integer from 1 to 10,000, else an argparse error."""
    value = int(text)
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError("must be between 1 and 10000")
    return value


def import_memories(path: Path, label: str, batch: int) -> int:
    """Validate every line of ``path``, then add them; ``label`` names the file in the summary."""
    from mnemo.entry.identity import context_from_environment
    from mnemo.portability.memories import read_lines, run_import, with_derived_keys
    from mnemo.runtime import get_services
    from mnemo.tools.registry import get_tool, parse_json_body

    try:
        context = context_from_environment(os.environ)
        with path.open(encoding="utf-8") as handle:
            parse_request = get_tool("memory_add").parse
            lines = read_lines(handle, context, parse_json=parse_json_body, parse_request=parse_request)
        lines = with_derived_keys(lines)
        started = time.perf_counter()
        progress = Progress("imported", len(lines), sys.stderr)
        counts = run_import(get_services().memory, lines, context, batch=batch, progress=progress.update)
        progress.close()
        seconds = time.perf_counter() - started
    except MnemoError as error:
        print_json(error.envelope())
        return 1
    except UnicodeDecodeError as error:
        print_json(InvalidInput(f"file: not UTF-8 text ({error.reason})", {"field": "file"}).envelope())
        return 1
    except Exception as error:  # a store or index failure: an envelope, never a traceback
        stopped = ProviderError(
            f"the import stopped: {type(error).__name__}: {error}. The memories written before it are kept; "
            "running the same import again resumes it (lines already stored are replayed)",
            {"file": label},
        )
        print_json(stopped.envelope())
        return 1
    print_json(
        {
            "file": label,
            **counts,
            "seconds": round(seconds, 3),
            "perSecond": round(len(lines) / seconds, 1) if seconds > 0 else None,
        }
    )
    return 0
