"""`sam build` of template.yaml for this machine, for the deployment rehearsal.

template.yaml builds for arm64 (Graviton): its layer then holds aarch64 wheels
(pydantic_core, google-re2, tree-sitter...) that cannot load on an x86_64 machine. The
rehearsal therefore builds a generated copy whose ``Architectures`` and
``BuildArchitecture`` name this machine's architecture, with ``CodeUri``/``ContentUri``
made absolute, into ``.aws-sam/rehearsal/`` (git-ignored with the rest of ``.aws-sam/``).
Nothing else of the template changes, so the build is the one `make sam-build` makes,
apart from the wheels' architecture.

It runs the SAM CLI of ``.venv/sam`` (`make sam-install`) with a python3.12 first on
PATH, as `make sam-build` does, with cached builds, so an unchanged layer is not rebuilt.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAM_VENV = ROOT / ".venv" / "sam"
WORK_DIR = ROOT / ".aws-sam" / "rehearsal"
REGION = "eu-west-1"


def lambda_architecture() -> str:
    """This machine's architecture in Lambda's words (x86_64 or arm64)."""
    machine = platform.machine().lower()
    return "arm64" if machine in ("aarch64", "arm64") else "x86_64"


def python312() -> str:
    """A python3.12 like the Makefile's $(PYTHON): pyenv's first, then the one on PATH."""
    found = sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    if found:
        return str(found[-1])
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(directory) / "python3.12"
        if candidate.exists():
            return str(candidate)
    raise RuntimeError("the rehearsal needs a python3.12 (the Lambda runtime's version)")


def template_for(architecture: str, root: Path = ROOT) -> str:
    """template.yaml with its architecture set to ``architecture`` and its code paths absolute."""
    text = (root / "template.yaml").read_text()
    replacements = [
        (r"(?m)^(\s+Architectures: )\[arm64\]$", rf"\1[{architecture}]"),
        (r"(?m)^(\s+CompatibleArchitectures: )\[arm64\]$", rf"\1[{architecture}]"),
        (r"(?m)^(\s+BuildArchitecture: )arm64$", rf"\1{architecture}"),
    ]
    for pattern, replacement in replacements:
        text, count = re.subn(pattern, replacement, text)
        if count != 1:
            raise RuntimeError(f"template.yaml: expected one match of {pattern!r}, found {count}")
    text, count = re.subn(
        r"(?m)^(\s+(?:CodeUri|ContentUri): )((?:functions|layers)/\S+)$",
        lambda match: f"{match.group(1)}{root / match.group(2)}/",
        text,
    )
    if count == 0:
        raise RuntimeError("template.yaml: no CodeUri/ContentUri found")
    return text


@dataclass(frozen=True)
class Build:
    architecture: str
    build_dir: Path
    layer_python: Path

    def function_dir(self, logical_id: str) -> Path:
        return self.build_dir / logical_id


def sam_build(parameters: dict[str, str], work_dir: Path = WORK_DIR, root: Path = ROOT) -> Build:
    """Build every function and the layer of ``root``'s template for this machine into ``work_dir`` (the
    rehearsal's by default; bench/cold_start.py builds into its own); raise with SAM's output if it fails."""
    architecture = lambda_architecture()
    work_dir.mkdir(parents=True, exist_ok=True)
    template = work_dir / "template.yaml"
    template.write_text(template_for(architecture, root))
    build_dir = work_dir / "build"
    interpreter = python312()
    env = {
        **os.environ,
        "PATH": f"{Path(interpreter).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "SAM_CLI_TELEMETRY": "0",
    }
    env.pop("AWS_SESSION_TOKEN", None)
    env.pop("VIRTUAL_ENV", None)
    overrides = " ".join(f"{key}={value}" for key, value in parameters.items())
    command = [
        str(SAM_VENV / "bin" / "sam"),
        "build",
        "--template-file",
        str(template),
        "--build-dir",
        str(build_dir),
        "--cache-dir",
        str(work_dir / "cache"),
        "--cached",
        "--parallel",
        "--region",
        REGION,
    ]
    if overrides:
        command += ["--parameter-overrides", overrides]
    done = subprocess.run(command, cwd=work_dir, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"sam build failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    compile_bytecode(build_dir, interpreter)
    return Build(architecture, build_dir, build_dir / "SharedLayer" / "python")


#: What `make sam-build` runs after `sam build`: bytecode for every module of the build, checked against
#: nothing at import (Lambda's /var/task and /opt are read-only, so a module without it is compiled again
#: at every cold start; a zip keeps no exact modification times, so only unchecked hash-based bytecode
#: is certain to be used).
COMPILE_ARGUMENTS = ("-m", "compileall", "-q", "-f", "-j", "0", "--invalidation-mode", "unchecked-hash")


def compile_bytecode(build_dir: Path, interpreter: str) -> None:
    """Write the bytecode of every module under ``build_dir`` with ``interpreter`` (the runtime's python3.12)."""
    done = subprocess.run(
        [interpreter, *COMPILE_ARGUMENTS, str(build_dir)], capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"compileall failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


if __name__ == "__main__":
    built = sam_build({"ExperimentalTools": "true"})
    print(built, file=sys.stderr)
