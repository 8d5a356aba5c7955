"""API key callers: one key is one caller, in the deployment's one API key tenant (mnemo.entry.identity)."""

from __future__ import annotations

import pytest
from identity_events import api_key_event, fixture

from mnemo.context import RequestContext
from mnemo.entry.identity import context_from_event
from mnemo.errors import Unauthorized


def test_the_tenant_is_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_API_KEY_TENANT", "acme")
    assert context_from_event(api_key_event("k1")) == RequestContext(tenant="acme", user="apikey:k1")


def test_unset_the_tenant_is_the_apis_account_never_a_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMO_API_KEY_TENANT", raising=False)
    assert context_from_event(fixture("rest_api_key")) == RequestContext(
        tenant="111122223333", user="apikey:a1b2c3d4e5"
    )


@pytest.mark.parametrize("header", ["X-Mnemo-User", "X-Mnemo-Tenant", "x-mnemo-session"])
def test_an_api_key_caller_sending_identity_headers_is_refused_naming_the_header(header: str) -> None:
    with pytest.raises(Unauthorized) as raised:
        context_from_event(api_key_event("k1", headers={header: "alice"}))
    assert raised.value.details == {"field": "-".join(part.capitalize() for part in header.split("-"))}
