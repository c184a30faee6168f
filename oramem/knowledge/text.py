"""Text helpers shared by every step (KC-0.5): ``norm``, ``slug``, entity keys, token
estimates, n-grams and UTC time handling."""

from __future__ import annotations

import functools
import re
import unicodedata
from datetime import datetime
from typing import Any, Optional, overload

from .. import timeutil

__all__ = [
    "estimate_tokens",
    "my_phrases",
    "norm",
    "slug",
    "entity_key",
    "canonical_entity_type",
    "ngrams",
    "word_tokens",
    "contains_words",
    "to_utc",
    "iso",
    "parse_when",
    "validate_agent_id",
]

_WS = re.compile(r"\s+")
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"\w+", re.UNICODE)


def estimate_tokens(text: str) -> int:
    """KC-0.5: ``len(text) // 4``."""
    return len(text) // 4


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith(("P", "S"))


def norm(s: str) -> str:
    """NFKD, combining marks dropped, lower-cased, whitespace collapsed, leading and
    trailing punctuation stripped (KC-0.5)."""
    if not s:
        return ""
    return _norm(s)


@functools.lru_cache(maxsize=16384)
def _norm(s: str) -> str:
    """:func:`norm` of a non-empty string, memoised: a write normalises the same names,
    aliases and fact texts many times (issue 25 item 6: ~100 calls per write); a pure function of
    its text, so nothing of one call or user leaks into another's result."""
    decomposed = unicodedata.normalize("NFKD", s)
    text = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()
    text = _WS.sub(" ", text).strip()
    start, end = 0, len(text)
    while start < end and (_is_punct(text[start]) or text[start].isspace()):
        start += 1
    while end > start and (_is_punct(text[end - 1]) or text[end - 1].isspace()):
        end -= 1
    return text[start:end]


def slug(s: str) -> str:
    """ASCII ``norm(s)`` with each run outside ``[a-z0-9]`` turned into ``_``, trimmed."""
    ascii_text = norm(s).encode("ascii", "ignore").decode("ascii")
    return _NON_SLUG.sub("_", ascii_text).strip("_")


def entity_key(entity_type: str, name: str) -> str:
    """``f"{entity_type}:{slug(name)}"`` (``person:ana_souza``)."""
    return f"{entity_type}:{slug(name)}"


_TYPE_ALIASES = {
    "company": "organization",
    "org": "organization",
    "organisation": "organization",
    "city": "place",
    "country": "place",
    "location": "place",
}


def canonical_entity_type(raw: Any) -> str:
    """KC-4.9 create: lower snake_case of at most 32 chars; company/org → organization;
    city/country/location → place; empty → other."""
    if not isinstance(raw, str):
        return "other"
    t = slug(raw)[:32].strip("_")
    if not t:
        return "other"
    return _TYPE_ALIASES.get(t, t)


def word_tokens(text: str) -> list[str]:
    return _WORD.findall(norm(text))


def ngrams(text: str, max_n: int = 4) -> list[str]:
    """Distinct 1..max_n word n-grams of ``norm(text)``, in first-occurrence order."""
    words = word_tokens(text)
    seen: dict[str, None] = {}
    for n in range(1, max_n + 1):
        for i in range(len(words) - n + 1):
            seen.setdefault(" ".join(words[i : i + n]), None)
    return list(seen)


def contains_words(haystack_norm_words: list[str], needle: str) -> bool:
    """True when ``norm(needle)`` occurs as whole words in the token list."""
    target = word_tokens(needle)
    if not target:
        return False
    n = len(target)
    for i in range(len(haystack_norm_words) - n + 1):
        if haystack_norm_words[i : i + n] == target:
            return True
    return False


#: the English first-person subject and object forms of a query and what each becomes with the
#: reader's name N (KC-5.4 [ext]: a user-scoped retrieve reads "I" as the reader). "my" and
#: "mine" stay as spoken: "my sister" asks about another entity, and her name in the query would
#: lift all her own facts above it (bench/results/knowledge_quality.md)
_FIRST_PERSON = {"i'm": "{n} is", "i've": "{n} has", "i'll": "{n} will", "i'd": "{n} would", "i": "{n}", "me": "{n}",
                 "myself": "{n}"}
_FIRST_PERSON_RE = re.compile(r"(?<![\w'])(i'm|i've|i'll|i'd|i|me|myself)(?![\w'])", re.IGNORECASE)


#: "my" and "mine", read as the reader's only where nothing else matched (KC-5.4 [ext])
_POSSESSIVE_RE = re.compile(r"(?<![\w'])(my|mine)(?![\w'])", re.IGNORECASE)


def first_person(query: str) -> bool:
    """Whether ``query`` speaks in the first person: names its speaker as subject or object (I,
    me, myself) or says "my"/"mine" (English)."""
    q = query.replace("\u2019", "'")
    return _FIRST_PERSON_RE.search(q) is not None or _POSSESSIVE_RE.search(q) is not None


def in_third_person(query: str, name: str) -> str:
    """``query`` with its first-person subject and object forms replaced by ``name`` ("where do
    I live?" -> "where do Carol live?"; "my" stays): the facts a write extracts name the speaker
    in the third person (KC-4.3), and a sentence model puts "where do I live?" far from "Carol
    lives in Rome" (cosine 0.22 with all-MiniLM-L6-v2; 0.83 once rewritten)."""
    return _FIRST_PERSON_RE.sub(lambda m: _FIRST_PERSON[m.group(1).lower()].format(n=name), query.replace("\u2019", "'"))


#: "my" and the one or two words after it, a possessive "'s" left out ("my grandfather's hobby")
_MY_PHRASE_RE = re.compile(r"(?<![\w'])my\s+([a-z][a-z-]*)(?:'s|\s+([a-z][a-z-]*)(?:'s)?)?", re.IGNORECASE)


def my_phrases(query: str) -> list[list[tuple[int, int, str]]]:
    """Per "my" of ``query``, the relation words it may be followed by, longest first, each as
    ``(start, end, word)``: the span from "my" to the word's end and the word in
    ``normalize_rel_type``'s spelling ("my team lead" -> ``team_lead``, then ``team``; a plural
    also singular: "my parents" -> ``parents``, ``parent``). KC-5.4 [ext]: "my <word>" is read
    as the entity her graph relates her to by that word."""
    q = query.replace("\u2019", "'")
    out: list[list[tuple[int, int, str]]] = []
    for m in _MY_PHRASE_RE.finditer(q):
        words: list[tuple[int, int, str]] = []
        one, two = m.group(1).lower(), (m.group(2) or "").lower()
        spans = ([(m.end(2), f"{one}_{two}")] if two else []) + [(m.end(1), one)]
        for end, word in spans:
            word = word.replace("-", "_")
            words.append((m.start(), end, word))
            if word.endswith("s") and len(word) > 3:
                words.append((m.start(), end, word[:-1]))
        out.append(words)
    return out


def merged_names(display_name: Optional[str], key: str) -> list[str]:
    """The aliases an entity merge gives the winner for the merged-away entity (KC-6.5): its
    normalised display name, its key's slug part, that part with spaces, and the key itself.
    An erasure that takes an entity born of the erased user's words takes these too (KC-3.10)."""
    part = key.split(":", 1)[-1]
    return list(dict.fromkeys(x for x in (norm(display_name or ""), part, norm(part.replace("_", " ")), key) if x))


#: nouns that name something of the speaker herself, never another entity of hers: "my job" is
#: hers, "my sister" is someone else (KC-5.4 [ext]; a closed list: a word outside it stays "my")
ATTRIBUTE_WORDS = frozenset("""
job jobs profession occupation career work employer workplace office desk title role position salary income wage pay
shift shifts schedule hours name nickname age birthday birthdate birthplace hometown nationality citizenship
address email phone number language languages height weight size blood allergy allergies diet diagnosis condition
conditions health medication medications hobby hobbies favourite favorite favourites favorites degree major
education background commute routine habit habits goal goals
""".split())


def in_third_person_attributes(query: str, name: str) -> str:
    """:func:`in_third_person` with "my" also read as ``name``'s before a word of
    :data:`ATTRIBUTE_WORDS` ("what's my job?" -> "what's Carol's job?"; "what does my sister
    do?" keeps "my"). The query as spoken finds some other fact first ("Carol lives in Rome"),
    so :func:`in_third_person_possessive`, searched only when nothing was found, never runs."""
    def sub(m: re.Match[str]) -> str:
        return f"{name}'s {m.group(1)}" if m.group(1).lower() in ATTRIBUTE_WORDS else m.group(0)
    return _MY_WORD_RE.sub(sub, in_third_person(query, name))


_MY_WORD_RE = re.compile(r"(?<![\w'])my\s+([a-z]+)(?![\w])", re.IGNORECASE)


def in_third_person_possessive(query: str, name: str) -> str:
    """:func:`in_third_person` with "my"/"mine" also read as ``name``'s ("what is my job?" ->
    "what is Carol's job?"). The semantic signal searches with it only when the query as spoken
    and as :func:`in_third_person` reads it find no fact: her name in the query lifts all her
    own facts above a fact about another entity of hers ("what does my sister do?"), and where
    nothing was found there is nothing to lift them over (bench/results/knowledge_quality.md)."""
    return _POSSESSIVE_RE.sub(f"{name}'s", in_third_person(query, name))


def to_utc(value: datetime) -> datetime:
    """Aware UTC datetime; naive input means UTC (KC-0.2)."""
    return timeutil.to_utc(value)


def iso(value: Optional[datetime]) -> Optional[str]:
    """Fixed-format ISO-8601 UTC text (comparable as strings)."""
    if value is None:
        return None
    return timeutil.knowledge_text(value)


@overload
def parse_when(value: None, argument: str) -> None: ...
@overload
def parse_when(value: Any, argument: str) -> datetime: ...
def parse_when(value: Any, argument: str) -> Optional[datetime]:
    """A datetime or an ISO-8601 string (naive = UTC) → aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return to_utc(value)
    if isinstance(value, str):
        moment = timeutil.try_parse_iso(value)
        if moment is not None:
            return to_utc(moment)
    raise ValueError(f"{argument} must be a datetime or an ISO-8601 string, got {value!r}")


def validate_agent_id(agent_id: Any) -> str:
    """KC-0.1: a non-empty string of at most 256 characters."""
    if not isinstance(agent_id, str) or not agent_id.strip() or len(agent_id) > 256:
        raise ValueError(f"agent_id must be a non-empty string (not only white space) of at most 256 characters, got {agent_id!r}")
    return agent_id
