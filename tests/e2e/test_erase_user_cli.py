"""`mnemo erase-user` on the embedded default: the receipt printed, the user's export empty afterwards (exit 3),
the other user untouched, the receipts shown again with --receipts, and a malformed user refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from erasure_support import ALICE, BOB, populate_person

from helpers import http_request, local_server, make_services
from mnemo.runtime import Services

MNEMO = [sys.executable, "-m", "mnemo.cli"]


def run(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    settings = {"MNEMO_DATA_DIR": str(data), "MNEMO_EMBEDDER": "hashing"}
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, env={**os.environ, **settings})


def test_erase_user_prints_the_receipt_and_leaves_nothing_to_export(tmp_path: Path) -> None:
    data = tmp_path / "data"
    services = make_services(data)
    populate_person(services, ALICE)
    populate_person(services, BOB)
    bob_before = run("export", "--tenant", "acme", "--user", "bob", "-o", str(tmp_path / "bob.jsonl"), data=data)
    assert bob_before.returncode == 0, bob_before.stderr

    erased = run("erase-user", "--tenant", "acme", "--user", "alice", "--json", data=data)

    assert erased.returncode == 0, erased.stderr
    receipt = json.loads(erased.stdout)
    assert (receipt["status"], receipt["tenant"]) == ("completed", "acme")
    assert receipt["counts"]["memories"] > 0
    assert receipt["counts"]["records"] > receipt["counts"]["memories"]
    assert "alice" not in erased.stdout
    nothing = run("export", "--tenant", "acme", "--user", "alice", data=data)
    assert nothing.returncode == 3, nothing.stderr
    bob_after = run("export", "--tenant", "acme", "--user", "bob", "-o", str(tmp_path / "bob-after.jsonl"), data=data)
    assert json.loads(bob_after.stdout)["records"] == json.loads(bob_before.stdout)["records"]

    shown = run("erase-user", "--tenant", "acme", "--user", "alice", "--receipts", data=data)
    assert shown.returncode == 0, shown.stderr
    assert [each["erasureId"] for each in json.loads(shown.stdout)] == [receipt["erasureId"]]
    said = run("erase-user", "--tenant", "acme", "--user", "alice", data=data)
    assert said.returncode == 0
    assert "completed): nothing" in said.stdout


def test_a_malformed_user_is_refused_with_an_envelope(tmp_path: Path) -> None:
    refused = run("erase-user", "--user", "a b", data=tmp_path / "data")
    assert refused.returncode == 1
    assert json.loads(refused.stderr)["errorCode"] == "INVALID_INPUT"


def test_over_http_the_admin_role_comes_from_x_mnemo_roles(services: Services) -> None:
    """The local server grants `admin` as it grants `writer`, from X-Mnemo-Roles (its default roles hold only
    writer); the tenant is the headers' own, and a body `userId` naming another user is refused as ever."""
    populate_person(services, ALICE)
    json_body = {"Content-Type": "application/json", "X-Mnemo-Tenant": "acme", "X-Mnemo-User": "root"}
    with local_server(services) as base:
        status, refused = http_request(base, "POST", "/v1/tools/erase_user", {"subjectUserId": "alice"}, json_body)
        assert (status, refused["errorCode"]) == (403, "UNAUTHORIZED")
        status, claimed = http_request(
            base,
            "POST",
            "/v1/tools/erase_user",
            {"subjectUserId": "alice", "userId": "alice"},
            {**json_body, "X-Mnemo-Roles": "writer,admin"},
        )
        assert (status, claimed["details"]) == (403, {"field": "userId"})
        status, other = http_request(
            base,
            "POST",
            "/v1/tools/erase_user",
            {"subjectUserId": "alice"},
            {**json_body, "X-Mnemo-Tenant": "globex", "X-Mnemo-Roles": "admin"},
        )
        assert (status, other["tenant"], other["counts"]["records"]) == (200, "globex", 0)
        status, receipt = http_request(
            base, "POST", "/v1/tools/erase_user", {"subjectUserId": "alice"}, {**json_body, "X-Mnemo-Roles": "admin"}
        )
    assert (status, receipt["status"], receipt["tenant"]) == (200, "completed", "acme")
    assert receipt["counts"]["memories"] > 0
