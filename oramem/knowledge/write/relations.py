"""Relation type normalisation (KC-4.14). Pure."""

from __future__ import annotations

import re

__all__ = ["CANONICAL_REL_TYPES", "IDENTITY_REL_TYPES", "normalize_rel_type", "rel_words"]

CANONICAL_REL_TYPES = frozenset(
    {"reports_to", "manages", "member_of", "works_with", "works_at", "family_of", "friend_of", "partner_of",
     "lives_in", "owns", "studies_at"}
)
IDENTITY_REL_TYPES = frozenset({"same_as", "also_known_as", "nickname_of", "alias_of"})

_ALIASES: dict[str, str] = {}
for _target, _names in {
    "reports_to": "boss manager supervisor led_by supervised_by",
    "manages": "direct_report subordinate leads supervises",
    "works_with": "colleague coworker co_worker",
    "works_at": "employee_of employed_at employed_by works_for",
    "partner_of": "spouse wife husband married_to dating romantic_partner girlfriend boyfriend",
    "family_of": "sibling brother sister parent mother father child son daughter related_to relative_of",
    "friend_of": "friend best_friend social_connection",
    "lives_in": "resides_in lives_at living_in based_in",
    "studies_at": "enrolled_at attends student_at",
    "owns": "owner_of pet_owner has_pet",
    "member_of": "belongs_to part_of",
}.items():
    for _n in _names.split():
        _ALIASES[_n] = _target


def normalize_rel_type(raw: object) -> str:
    """Strip, lower-case, spaces and ``-`` → ``_``, drop chars outside ``[a-z0-9_]``,
    collapse and trim ``_``, cut to 64; then map known aliases. Unknown types pass through
    (``roommate`` stays ``roommate``). Returns ``""`` for an empty type."""
    if not isinstance(raw, str):
        return ""
    t = raw.strip().lower()
    t = re.sub(r"[\s\-]", "_", t)
    t = re.sub(r"[^a-z0-9_]", "", t)
    t = re.sub(r"_+", "_", t).strip("_")[:64].strip("_")
    return _ALIASES.get(t, t)


def rel_words(rel_type: str) -> str:
    return rel_type.replace("_", " ")
