"""API keys: constant-time matching against every configured key, and the actor tag."""

from __future__ import annotations

from app.tenancy.keys import actor_of, key_matches


def test_key_comparison() -> None:
    assert key_matches("a", ["b", "a"])
    assert not key_matches("a", ["ab", "b"])
    assert not key_matches("", ["a"])
    assert not key_matches("a", [])


def test_actor_tag_names_the_key_without_revealing_it() -> None:
    tag = actor_of("secret-key")
    assert tag.startswith("key:") and len(tag) == len("key:") + 12
    assert "secret" not in tag
    assert tag == actor_of("secret-key") != actor_of("other-key")
    assert actor_of(None) == "open-mode"
