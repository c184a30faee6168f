"""Relation type normalisation (KC-4.14). Pure."""

from __future__ import annotations

import re

__all__ = ["CANONICAL_REL_TYPES", "IDENTITY_REL_TYPES", "ROLE_NOUNS", "SYMMETRIC_REL_TYPES", "INVERSE_REL_TYPES",
           "MIRROR_SOURCE_CONTEXT", "clean_rel_type", "normalize_rel_type", "rel_words", "mirror_text"]

CANONICAL_REL_TYPES = frozenset(
    {"reports_to", "manages", "member_of", "works_with", "works_at", "family_of", "friend_of", "partner_of",
     "lives_in", "owns", "studies_at"}
)
IDENTITY_REL_TYPES = frozenset({"same_as", "also_known_as", "nickname_of", "alias_of"})
#: the ``source_context`` of a relation's mirror fact (KC-4.14)
MIRROR_SOURCE_CONTEXT = "inferred_from_relation"

#: kinship nouns past parents, children, siblings and spouses (KC-4.14: all are family_of)
_KIN_NOUNS = ("grandparent grandmother grandfather grandchild grandson granddaughter aunt uncle niece nephew cousin "
              "stepparent stepmother stepfather stepchild stepson stepdaughter stepbrother stepsister half_brother "
              "half_sister parent_in_law mother_in_law father_in_law son_in_law daughter_in_law brother_in_law "
              "sister_in_law").split()
# "step-son", "grand mother": the prefix spelt apart too
_KIN_NOUNS += [re.sub(r"^(step|grand)(?!_)", r"\1_", k) for k in _KIN_NOUNS if re.match(r"^(step|grand)(?!_)", k)]
#: the types whose edge reads the same both ways (``a family_of b`` is ``b family_of a``)
SYMMETRIC_REL_TYPES = frozenset({"family_of", "partner_of", "friend_of", "works_with"})
#: ``a reports_to b`` is ``b manages a``
INVERSE_REL_TYPES = {"reports_to": "manages", "manages": "reports_to"}
#: the aliases that name the target's role for the source: ``(Maya, Emma, "daughter")`` is
#: "Emma is Maya's daughter", and its mirror fact says so (KC-4.14)
ROLE_NOUNS = frozenset(
    "boss manager supervisor team_lead line_manager direct_report subordinate colleague coworker co_worker spouse wife "
    "husband romantic_partner girlfriend boyfriend partner fiance fiancee sibling brother sister parent mother father "
    "child son daughter friend best_friend".split() + _KIN_NOUNS)

#: a ``<kin>_of`` edge's target, as the source's relative: ``(Kenji, Hiroshi, son_of)`` makes
#: Hiroshi Kenji's parent (the target's own word is not said: "parent", not "father")
_KIN_INVERSE = {
    **dict.fromkeys("parent mother father".split(), "child"),
    **dict.fromkeys("child son daughter".split(), "parent"),
    **dict.fromkeys("grandparent grandmother grandfather".split(), "grandchild"),
    **dict.fromkeys("grandchild grandson granddaughter".split(), "grandparent"),
    **dict.fromkeys("stepparent stepmother stepfather".split(), "stepchild"),
    **dict.fromkeys("stepchild stepson stepdaughter".split(), "stepparent"),
    **dict.fromkeys("aunt uncle".split(), "niece or nephew"),
    **dict.fromkeys("niece nephew".split(), "aunt or uncle"),
    **dict.fromkeys("sibling brother sister".split(), "sibling"),
    "cousin": "cousin",
}
#: a role noun's neutral word, as :data:`_KIN_INVERSE` writes it ("my father" is "<her>'s parent")
KIN_CLASS = {
    **dict.fromkeys("parent mother father".split(), "parent"),
    **dict.fromkeys("child son daughter".split(), "child"),
    **dict.fromkeys("grandparent grandmother grandfather".split(), "grandparent"),
    **dict.fromkeys("grandchild grandson granddaughter".split(), "grandchild"),
    **dict.fromkeys("stepparent stepmother stepfather".split(), "stepparent"),
    **dict.fromkeys("stepchild stepson stepdaughter".split(), "stepchild"),
    **dict.fromkeys("niece nephew".split(), "niece or nephew"),
    **dict.fromkeys("aunt uncle".split(), "aunt or uncle"),
    **dict.fromkeys("sibling brother sister".split(), "sibling"),
}

_ALIASES: dict[str, str] = {}
for _target, _names in {
    "reports_to": "boss manager supervisor led_by supervised_by team_lead line_manager",
    "manages": "direct_report subordinate leads supervises",
    "works_with": "colleague coworker co_worker",
    "works_at": "employee_of employed_at employed_by works_for",
    "partner_of": "spouse wife husband married_to dating romantic_partner girlfriend boyfriend partner fiance fiancee",
    "family_of": "sibling brother sister parent mother father child son daughter related_to relative_of "
                 # kinship nouns beyond the first degree, and the "<kin>_of" forms extraction also gives
                 + " ".join(_KIN_NOUNS) + " " + " ".join(f"{k}_of" for k in ("sibling", "brother", "sister", "parent", "mother",
                                                                               "father", "child", "son", "daughter", *_KIN_NOUNS)),
    "friend_of": "friend best_friend social_connection",
    "lives_in": "resides_in lives_at living_in based_in",
    "studies_at": "enrolled_at attends student_at",
    "owns": "owner_of pet_owner has_pet",
    "member_of": "belongs_to part_of",
}.items():
    for _n in _names.split():
        _ALIASES[_n] = _target


def clean_rel_type(raw: object) -> str:
    """Strip, lower-case, spaces and ``-`` → ``_``, drop chars outside ``[a-z0-9_]``,
    collapse and trim ``_``, cut to 64 (the type as said, before the aliases). ``""`` for an
    empty type or a non-string."""
    if not isinstance(raw, str):
        return ""
    t = raw.strip().lower()
    t = re.sub(r"[\s\-]", "_", t)
    t = re.sub(r"[^a-z0-9_]", "", t)
    return re.sub(r"_+", "_", t).strip("_")[:64].strip("_")


def normalize_rel_type(raw: object) -> str:
    """:func:`clean_rel_type`, then map known aliases. Unknown types pass through
    (``roommate`` stays ``roommate``). Returns ``""`` for an empty type."""
    t = clean_rel_type(raw)
    return _ALIASES.get(t, t)


def rel_words(rel_type: str) -> str:
    return rel_type.replace("_", " ")


def mirror_text(source: str, target: str, said: str, rel_type: str) -> str:
    """A relation's mirror fact (KC-4.14). A role noun keeps its word, read as the target's
    role for the source ("Emma is Maya's daughter", not "Maya family of Emma": the canonical
    type loses which relative); a kinship ``<noun>_of`` names the target's role for the
    source in a neutral word (``(Kenji, Aiko, father_of)``: "Aiko is Kenji's child", since
    "Kenji father of Aiko" answers "who is my father?" for Kenji), or keeps its words where
    none is listed ("Ana half brother of Rui"); any other type reads
    ``"{source} {rel words} {target}"``."""
    if said in ROLE_NOUNS:
        return f"{target} is {source}'s {rel_words(said)}"
    if said != rel_type and said.endswith("_of") and said[:-3] in _KIN_INVERSE:
        return f"{target} is {source}'s {_KIN_INVERSE[said[:-3]]}"
    if said != rel_type and said.endswith("_of") and said[:-3] in ROLE_NOUNS:
        return f"{source} {rel_words(said)} {target}"
    return f"{source} {rel_words(rel_type)} {target}"
