"""What the commands print on stdout: a JSON answer (a result, a summary or an error envelope), indented."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(payload: Any) -> None:
    """Write ``payload`` to stdout as JSON indented by two spaces, with a final newline."""
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")
