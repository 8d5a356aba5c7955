"""The Python client's wheel (clients/python, distribution mnemo-client), built as a user builds it.

pip builds a local project in its source tree (``build/`` and ``mnemo_client.egg-info/`` beside its
pyproject.toml), and the two suites that build the wheel may run at once on pytest-xdist workers: each build
therefore runs on a copy of the sources of its own (``mnemo/client`` is a link to the layer's package; the
copy holds the files), and the checkout is left as it was.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


def build_client_wheel(out: Path) -> Path:
    """`pip wheel --no-deps` of the client into ``out``; the wheel's path."""
    sources = out / "mnemo-client-sources"
    shutil.copytree(CLIENT, sources, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(sources)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("mnemo_client-*.whl")
    return built
