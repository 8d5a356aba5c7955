"""A copy of the repository as a clone would have it, and a Python that runs the copy's own packages: what the
throwaway-tool and throwaway-family rehearsals (tests/infra/test_new_tool.py, test_new_family.py) work in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def copy_repository(target: Path) -> None:
    """The repository's files as a clone would have them (tracked, and new ones not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (bytecode caches aside) and its bytes."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def run_in(copy: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """A Python in the copy: its own mnemo and mnemo_codegen packages first on the path, the project's environment
    otherwise."""
    own = [copy / "layers" / "shared", copy / "codegen", copy / "tests" / "support"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, own))}
    return subprocess.run(
        [sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
