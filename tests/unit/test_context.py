"""The caller's identity (mnemo.context.RequestContext)."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from mnemo.context import LAYER_IDS, MEMORY_LAYERS, SHARED_LAYERS, WRITER_ROLE, RequestContext

ID_FIELDS = ["tenant", "user", "agent", "session", "project", "team", "org"]


def full(**overrides: object) -> RequestContext:
    values: dict[str, object] = {
        "tenant": "acme",
        "user": "alice",
        "agent": "helper",
        "session": "s1",
        "project": "apollo",
        "team": "core",
        "org": "eng",
    }
    values.update(overrides)
    return RequestContext.model_validate(values)


# -------------------------------------------------------------- scope_key ---
def test_scope_key_example() -> None:
    assert full().scope_key("user") == "t=acme|user|u=alice"
    assert full().scope_key("agent") == "t=acme|agent|u=alice|a=helper"
    assert full().scope_key("company") == "t=acme|company"


@pytest.mark.parametrize("layer", MEMORY_LAYERS)
def test_scope_key_differs_per_tenant(layer: str) -> None:
    assert full(tenant="acme").scope_key(layer) != full(tenant="globex").scope_key(layer)


@pytest.mark.parametrize("layer", [layer for layer in MEMORY_LAYERS if "user" in LAYER_IDS[layer]])
def test_scope_key_differs_per_user_on_user_scoped_layers(layer: str) -> None:
    assert full(user="alice").scope_key(layer) != full(user="bob").scope_key(layer)


@pytest.mark.parametrize("layer", [layer for layer in MEMORY_LAYERS if "user" not in LAYER_IDS[layer]])
def test_scope_key_is_shared_by_users_on_shared_layers(layer: str) -> None:
    assert full(user="alice").scope_key(layer) == full(user="bob").scope_key(layer)


@pytest.mark.parametrize("layer", MEMORY_LAYERS)
def test_scope_key_changes_with_every_id_the_layer_needs(layer: str) -> None:
    base = full()
    for name in LAYER_IDS[layer]:
        assert full(**{name: "someone-else"}).scope_key(layer) != base.scope_key(layer), name


def test_scope_key_differs_per_layer() -> None:
    context = full()

    keys = [context.scope_key(layer) for layer in MEMORY_LAYERS]

    assert len(set(keys)) == len(MEMORY_LAYERS)


def test_scope_keys_do_not_collide_across_contexts_and_layers() -> None:
    values = ["a", "b", "a.b", "a=b"]
    seen: dict[str, tuple[str, tuple[str, ...]]] = {}
    for layer in MEMORY_LAYERS:
        names = ("tenant", *LAYER_IDS[layer])
        for combo in itertools.product(values, repeat=len(names)):
            key = RequestContext.model_validate(dict(zip(names, combo, strict=True))).scope_key(layer)
            assert key not in seen, (key, seen.get(key), (layer, combo))
            seen[key] = (layer, combo)


@pytest.mark.parametrize("field", ID_FIELDS)
@pytest.mark.parametrize("bad", ["alice|user", "alice#1", "a|u=bob", "|", "#", "MEM#1"])
def test_ids_with_separators_are_rejected(field: str, bad: str) -> None:
    with pytest.raises(ValidationError):
        full(**{field: bad})


@pytest.mark.parametrize("field", ID_FIELDS)
@pytest.mark.parametrize("bad", ["has space", "x" * 257, "tab\there", "line\nbreak", "ünïcode"])
def test_ids_outside_the_allowed_alphabet_are_rejected(field: str, bad: str) -> None:
    with pytest.raises(ValidationError):
        full(**{field: bad})


def test_a_forged_id_cannot_reach_another_scope() -> None:
    victim = RequestContext(tenant="acme", user="bob", agent="helper")
    assert victim.scope_key("agent") == "t=acme|agent|u=bob|a=helper"

    # Each would produce the victim's key if '|' were accepted.
    with pytest.raises(ValidationError):
        RequestContext(tenant="acme", user="bob|a=helper")
    with pytest.raises(ValidationError):
        RequestContext(tenant="acme|agent|u=bob|a=helper")
    with pytest.raises(ValidationError):
        RequestContext(tenant="acme", user="mallory", agent="x|u=bob|a=helper")


@pytest.mark.parametrize(
    "value",
    ["alice", "alice@example.com", "arn:aws:iam::123456789012:user/alice", "a.b_c-d+e=f,g", "x" * 256],
)
def test_valid_ids_are_accepted_as_is(value: str) -> None:
    assert full(user=value).user == value


def test_empty_optional_ids_become_none() -> None:
    context = RequestContext(tenant="acme", user="", project="")

    assert context.user is None
    assert context.project is None


def test_context_is_immutable() -> None:
    context = full()

    with pytest.raises(ValidationError):
        context.user = "mallory"  # type: ignore[misc]
    assert context.user == "alice"


# ------------------------------------------------------------- missing_ids ---
@pytest.mark.parametrize("layer", MEMORY_LAYERS)
def test_nothing_is_missing_when_every_id_is_present(layer: str) -> None:
    assert full().missing_ids(layer) == []
    assert full().can_read(layer)


@pytest.mark.parametrize("layer", MEMORY_LAYERS)
def test_missing_ids_follow_layer_ids(layer: str) -> None:
    bare = RequestContext(tenant="acme")

    assert bare.missing_ids(layer) == list(LAYER_IDS[layer])
    assert bare.can_read(layer) == (LAYER_IDS[layer] == ())


def test_missing_ids_per_layer() -> None:
    context = RequestContext(tenant="acme", user="alice", team="core")

    assert context.missing_ids("agent") == ["agent"]
    assert context.missing_ids("user") == []
    assert context.missing_ids("session") == ["session"]
    assert context.missing_ids("project") == ["project"]
    assert context.missing_ids("team") == []
    assert context.missing_ids("org") == ["org"]
    assert context.missing_ids("company") == []
    assert RequestContext(tenant="acme", agent="helper").missing_ids("agent") == ["user"]


# --------------------------------------------------------- readable_layers ---
def test_readable_layers_in_precedence_order() -> None:
    assert full().readable_layers() == ["agent", "user", "session", "project", "team", "org", "company"]
    assert list(MEMORY_LAYERS) == ["agent", "user", "session", "project", "team", "org", "company"]


def test_readable_layers_skip_layers_with_missing_ids() -> None:
    context = RequestContext(tenant="acme", user="alice", project="apollo")

    assert context.readable_layers() == ["user", "project", "company"]
    assert RequestContext(tenant="acme").readable_layers() == ["company"]


def test_readable_layers_filtered_by_requested_keep_precedence_order() -> None:
    context = full()

    assert context.readable_layers(["company", "user", "agent"]) == ["agent", "user", "company"]
    assert context.readable_layers(["team"]) == ["team"]


def test_readable_layers_requested_but_unreadable_are_dropped() -> None:
    context = RequestContext(tenant="acme", user="alice")

    assert context.readable_layers(["session", "user", "team"]) == ["user"]
    assert context.readable_layers(["session"]) == []


def test_readable_layers_with_empty_request_means_all() -> None:
    assert full().readable_layers([]) == full().readable_layers()
    assert full().readable_layers(None) == list(MEMORY_LAYERS)


# --------------------------------------------------------------- can_write ---
@pytest.mark.parametrize("layer", sorted(SHARED_LAYERS))
def test_shared_layers_need_the_writer_role(layer: str) -> None:
    assert not full().can_write(layer)
    assert not full(roles=frozenset({"reader", "admin"})).can_write(layer)
    assert full(roles=frozenset({WRITER_ROLE})).can_write(layer)


@pytest.mark.parametrize("layer", ["user", "agent", "session"])
def test_personal_layers_do_not_need_the_writer_role(layer: str) -> None:
    assert full().can_write(layer)
    assert full(roles=frozenset({WRITER_ROLE})).can_write(layer)


@pytest.mark.parametrize("layer", MEMORY_LAYERS)
def test_cannot_write_a_layer_with_missing_ids_even_as_writer(layer: str) -> None:
    context = RequestContext(tenant="acme", roles=frozenset({WRITER_ROLE}))

    assert context.can_write(layer) == (LAYER_IDS[layer] == ())


def test_shared_layers_are_the_organisational_ones() -> None:
    assert set(SHARED_LAYERS) == {"project", "team", "org", "company"}
    assert WRITER_ROLE == "writer"


def test_an_empty_tenant_is_rejected() -> None:
    with pytest.raises(ValidationError):
        RequestContext(tenant="", user="alice")


def test_scope_key_refuses_a_layer_whose_ids_are_missing() -> None:
    with pytest.raises(ValueError):
        RequestContext(tenant="acme").scope_key("user")
