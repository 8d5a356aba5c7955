"""The client installs alone (clients/python, distribution mnemo-client): its wheel holds mnemo.client only,
and it answers from an interpreter that sees nothing but the standard library and that wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from client_wheel import build_client_wheel

from helpers import local_server
from mnemo.runtime import Services

SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from mnemo.client import LocalIdentity, MnemoClient, NotFoundError
client = MnemoClient(sys.argv[2], auth=LocalIdentity(user="alice"))
added = client.memory_add(content="The client needs only the standard library")
found = client.memory_search(query="standard library client", threshold=0.0)["results"]
try:
    client.memory_delete(memory_id="mem_nope")
except NotFoundError as error:
    missing = error.code
print(json.dumps({"added": added["memoryId"], "found": found[0]["memoryId"], "missing": missing,
                  "modules": sorted(name for name in sys.modules if name.split(".")[0] in ("pydantic", "boto3"))}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_client_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_the_client_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(name for name in names if name.startswith("mnemo/"))
    modules = (
        "__init__.py",
        "catalog.json",
        "delegation.py",
        "errors.py",
        "langchain.py",
        "langgraph.py",
        "listing.py",
        "openai_agents.py",
        "repeat.py",
        "strands.py",
        "strands_session.py",
        "tools.py",
        "transport.py",
    )
    assert shipped == [f"mnemo/client/{name}" for name in modules]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist")]
    assert all("extra ==" in line for line in requires)
    assert len(requires) == 5  # the sigv4, langchain, strands, langgraph, openai-agents extras


def test_installed_alone_it_calls_a_real_server(wheel: Path, tmp_path: Path, services: Services) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    with local_server(services) as url:
        # -S: no site-packages, so only the standard library and the installed wheel can be imported.
        done = subprocess.run(
            [sys.executable, "-S", "-c", SCRIPT, str(target), url], check=True, capture_output=True, text=True
        )
    answer = json.loads(done.stdout)
    assert answer["added"] == answer["found"]
    assert answer["missing"] == "NOT_FOUND"
    assert answer["modules"] == []
