"""How names and predicates compare: one key per name, so "Alice", "alice" and "ALICE " are one entity."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACES = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[^\w]+")

DEFAULT_TYPE = "entity"


def name_key(name: str) -> str:
    """A name compared without case, width or spacing differences; hashed so any text makes a safe sort key."""
    folded = _SPACES.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()
    return hashlib.sha256(folded.encode()).hexdigest()[:40]


def predicate_key(predicate: str) -> str:
    """snake_case: "Works At", "works-at" and "works_at" are one predicate."""
    words = _NOT_WORD.sub(" ", unicodedata.normalize("NFKC", predicate).casefold()).split()
    return "_".join(words) or "related_to"


def type_key(kind: str) -> str:
    """An entity type compared as a predicate is: snake_case, so "Person" and "person" are one type."""
    return predicate_key(kind)


def fact_sentence(subject: str, predicate: str, obj: str) -> str:
    """The plain sentence of a triple: "Alice works at Acme" from ("Alice", "works_at", "Acme")."""
    return f"{subject} {predicate.replace('_', ' ')} {obj}"
