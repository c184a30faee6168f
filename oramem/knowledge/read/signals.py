"""The retrieve signals (KC-5.1, KC-5.3, KC-5.4): the caller's entity keys resolved, the query
expanded, then semantic and keyword search through the store's indexes, pattern rows, the
graph walk (one recursive SQL query over the relationship table) and the events."""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from typing import Any, NamedTuple, Optional

import numpy as np
import sqlalchemy as sa

from ..db import queries as reads
from ..text import (ATTRIBUTE_WORDS, entity_key, first_person, in_third_person, in_third_person_attributes, in_third_person_possessive,
                    my_phrases, ngrams, norm, slug)
from ..write.relations import (INVERSE_REL_TYPES, KIN_CLASS, MIRROR_SOURCE_CONTEXT, SYMMETRIC_REL_TYPES, normalize_rel_type,
                               rel_words)
from ..types import ExpandedQuery, GraphRetrievalResult, RetrievalPlan
from .scoring import clip01, days, plan_retrieval, recency_score
from .state import RetrieveState
from .visibility import fact_visible, p_edge_visible, p_sql_visible, sql_visible, store_filter

__all__ = ["plan_inputs", "plan_for", "reader_name", "reader_relatives", "resolve_keys", "expand_query", "embed_query", "direct_signals",
           "pattern_facts", "graph_signal", "event_signal"]

MAX_NEIGHBOURS_PER_HOP = 10  # graph BFS: surplus neighbours cut by importance, then strength
#: hop keys per statement of the graph signal's fact read (two branches per key)
GRAPH_KEYS_PER_STATEMENT = 16


def plan_inputs(st: RetrieveState, conn: sa.Connection) -> tuple[list[str], list[str]]:
    e, rg = st.t.entity, st.t.registry
    shared_only = st.user_id is None
    types_stmt = reads.cached_stmt(e, ("plan_types", shared_only), lambda: (
        sa.select(e.c.entity_type).where(reads.p_visible(e, shared_only), e.c.is_active == True).distinct()))  # noqa: E712
    keys_stmt = reads.cached_stmt(rg, ("plan_keys",), lambda: (
        sa.select(rg.c.key).where(rg.c.agent_id == sa.bindparam("p_agent"), rg.c.status == sa.bindparam("p_status")).order_by(rg.c.key)))
    types = [r[0] for r in conn.execute(types_stmt, {"p_agent": st.agent_id, "p_user": st.user_id})]
    keys = [r[0] for r in conn.execute(keys_stmt, {"p_agent": st.agent_id, "p_status": "active"})]
    return sorted(types), keys


def plan_for(st: RetrieveState, conn: sa.Connection) -> RetrievalPlan:
    """KC-5.2's plan for this reader. The registry's active keys are the agent's, every user's
    sightings counted (KC-3.7), so an aggregation's ``attribute_filter`` is a key named in the
    query that a fact the reader may see carries (KC-3.8): another user's private key never
    filters her pattern queries, nor shows in her plan. A key none of her visible facts
    carries is dropped and the query planned again: one probe per key the plan names, over
    the agent's facts as the pattern query itself reads them (only a query naming an entity
    type and an active key gets here)."""
    types, keys = plan_inputs(st, conn)
    f = st.t.fact
    while True:
        plan = plan_retrieval(st.query, entity_types=types, active_attribute_keys=keys, as_of=st.view.as_of)
        attr = next((p.attribute_filter for p in plan.pattern_queries if p.attribute_filter), None)
        if attr is None or conn.execute(sa.select(f.c.id).where(
                reads.visible(f, st.agent_id, st.user_id), f.c.attribute_key == attr).limit(1)).first() is not None:
            return plan
        keys = [k for k in keys if k != attr]


#: the reader's newest events whose speakers name her (KC-5.4 [ext])
READER_EVENTS = 20
#: speakers that are never the reader: an application that logs the assistant's turns into her
#: scope names them so (red31: a tie went to the assistant's newer reply), besides the agent's id
NOT_THE_READER = frozenset({"assistant", "ai", "ai assistant", "bot", "chatbot", "agent", "system", "model"})


def reader_name(st: RetrieveState, conn: sa.Connection) -> Optional[str]:
    """Who "I" is in a first-person query of a user-scoped retrieve (KC-5.4 [ext]): the speaker
    of most of the reader's own :data:`READER_EVENTS` newest events (ties: the newest), read from
    her scope only (``user_id`` = the reader; never the shared events, whose speakers may be
    anyone), leaving out the speakers that are the agent (its id, or a name in
    :data:`NOT_THE_READER`). None for a shared-only retrieve, a query not in the first person, or
    a reader with no event of her own voice."""
    if st.user_id is None or not first_person(st.query):
        return None
    ev = st.t.event
    stmt = reads.cached_stmt(ev, ("reader_name",), lambda: (
        sa.select(ev.c.speaker)
        .where(ev.c.agent_id == sa.bindparam("p_agent"), ev.c.user_id == sa.bindparam("p_user"), ev.c.speaker.is_not(None))
        .order_by(sa.desc(ev.c.occurred_at), sa.desc(ev.c.id))
        .limit(sa.bindparam("p_limit", type_=sa.Integer, literal_execute=True))))
    rows = conn.execute(stmt, {"p_agent": st.agent_id, "p_user": st.user_id, "p_limit": READER_EVENTS})
    names = [str(r[0]).strip() for r in rows]
    names = [n for n in names if n and norm(n) not in NOT_THE_READER and norm(n) != norm(st.agent_id)]
    if not names:
        return None
    counts = Counter(names)
    best = max(counts.values())
    return next(n for n in names if counts[n] == best)  # newest first: a tie goes to the newest


#: "my <word>": at most this many of her entities the word relates her to (strongest edges first)
RELATIVES_PER_WORD = 3
#: "my <word>": her newest edges read to find them (her own scope only)
READER_EDGES = 200
#: "my <word>": only the first this many "my" of a query are read, and it gives at most
#: :data:`READINGS_MAX` readings in all: each reading is the whole query embedded and searched
#: once more, so "my sister" said 300 times in a 7 KB query made 600 texts (4.3 MB) to embed
#: and 600 store searches (red33)
MY_PHRASES_MAX = 3
READINGS_MAX = 6
#: the words of a question that asks only who "my <word>" is ("who is my daughter?", "what is
#: my boss's name?"): the relation is the answer, so the relative is named with it
IDENTITY_WORDS = frozenset("who whom what which is are was were s the a an name names named called tell me about".split())
_WORD_RE = re.compile(r"[a-z]+")


class _Relatives(NamedTuple):
    """One "my <word>" of the query and the entities of hers it names: ``(key, evidence fact
    id)`` per edge, strongest edge first (KC-5.4 [ext])."""
    start: int  # the span from "my" to the word's end
    end: int
    word: str  # in normalize_rel_type's spelling ("team_lead")
    ends: list[tuple[str, Optional[str]]]


def reader_relatives(st: RetrieveState, conn: sa.Connection, reader: Optional[str]) -> list[str]:
    """The query with each "my <word>" replaced by the name of an entity her graph relates the
    reader to by that word (KC-5.4 [ext]): "what does my sister do?" -> "what does Dana do?"
    when an edge of hers has the type the word normalises to (KC-4.14: sister -> family_of),
    with her as its source (a symmetric type or the inverse type: either end). When some of
    those edges' evidence facts say "<reader>'s <word>" ("Dana is Carol's sister", KC-4.14's
    mirror fact) or its neutral kin word ("my father": "Hiroshi is Kenji's parent") only they
    count (family_of also holds her father), else all of them, strongest
    first; at most :data:`RELATIVES_PER_WORD` per word, the first :data:`MY_PHRASES_MAX` "my"
    of the query only and :data:`READINGS_MAX` readings in all (each is one more embedding of the
    whole query and one more store search). A question that asks only who it is
    ("who is my sister?") names the relation with her: "who is Carol's sister Dana?". Read from
    her scope only (``user_id`` = the reader, never the shared rows nor another user's), names
    from the entities she sees. Empty without a reader or a "my <word>" naming an edge of hers."""
    if reader is None or st.user_id is None:
        return []
    phrases = my_phrases(st.query)[:MY_PHRASES_MAX]
    if not phrases:
        return []
    me = entity_key("person", reader)
    edges = _reader_edges(st, conn, me)
    if not edges:
        return []
    hits = [_relatives_by_type(words, edges, me) for words in phrases]
    if any(hit is None and _relative_words(words) for hit, words in zip(hits, phrases)):
        hits = _relatives_in_her_words(st, conn, reader, phrases, hits, edges, me)
    found = [hit for hit in hits if hit is not None]
    if not found:
        return []
    keys = sorted({k for hit in found for k, _ in hit.ends})
    ents = reads.load_entities(conn, st.t, st.agent_id, keys, st.user_id, read=True)
    said = _evidence_texts(st, conn, found)
    readings = _readings(st.query, reader, found, ents, said)[:READINGS_MAX]
    st.relation_readings = {text for text, names_relation in readings if names_relation}
    return [text for text, _ in readings]


def _reader_edges(st: RetrieveState, conn: sa.Connection, me: str) -> list[Any]:
    """Her newest :data:`READER_EDGES` edges that have her entity ``me`` at either end, strongest
    first: ``(source, target, rel_type, evidence fact id)``, her own scope only."""
    r = st.t.relationship
    _, _, _, current = st.shape()
    stmt = reads.cached_stmt(r, ("reader_edges", current), lambda: (
        sa.select(r.c.source_entity_key, r.c.target_entity_key, r.c.rel_type, r.c.evidence_fact_id)
        .where(r.c.agent_id == sa.bindparam("p_agent"), r.c.user_id == sa.bindparam("p_user"),
               sa.or_(r.c.source_entity_key == sa.bindparam("p_me"), r.c.target_entity_key == sa.bindparam("p_me")),
               *p_edge_visible(r, current))
        .order_by(sa.desc(r.c.strength), sa.desc(r.c.updated_at), r.c.id)
        .limit(sa.bindparam("p_limit", type_=sa.Integer, literal_execute=True))))
    return list(conn.execute(stmt, st.params(p_me=me, p_limit=READER_EDGES)).all())


def _other_end(src: str, tgt: str, rel_type: str, want: str, me: str) -> Optional[str]:
    """The entity an edge relates her (``me``) to when it has the type ``want``: the target of
    her edge of that type, or the source of an edge to her whose type reads the same both ways
    or is ``want``'s inverse; None when the edge says no such thing."""
    have = normalize_rel_type(rel_type)
    if src == me and have == want:
        return tgt
    if tgt == me and (have == want and want in SYMMETRIC_REL_TYPES or INVERSE_REL_TYPES.get(want) == have):
        return src
    return None


def _relatives_by_type(words: list[tuple[int, int, str]], edges: list[Any], me: str) -> Optional[_Relatives]:
    """One "my": its first word (longest first) whose type (KC-4.14) is that of an edge of hers,
    with the other ends of those edges; None when no word is."""
    for start, end, word in words:
        want = normalize_rel_type(word)
        ends: list[tuple[str, Optional[str]]] = []
        for src, tgt, rel_type, evidence in edges:
            other = _other_end(src, tgt, rel_type, want, me)
            if other is not None and other != me and all(other != k for k, _ in ends):
                ends.append((other, evidence))
        if ends:
            return _Relatives(start, end, word, ends)
    return None


def _relatives_in_her_words(st: RetrieveState, conn: sa.Connection, reader: str, phrases: list[list[tuple[int, int, str]]],
                            hits: list[Optional[_Relatives]], edges: list[Any], me: str) -> list[Optional[_Relatives]]:
    """``hits`` with each "my" that no edge type names (None) read through her own words: the
    entities of her edges whose evidence fact came from an event of hers, spoken by her, that
    says "my <word> <the entity's name>" ("My landlord Mr. Berg raised the rent": "what did my
    landlord do?" -> "what did Mr. Berg do?"; "my parrot", "my therapist", "my mentor" and any
    other noun no synonym list holds), strongest edge first. Her scope only (her edges, her
    facts, her events; an event of her scope spoken by someone else says someone else's "my")."""
    said = _her_evidence_events(st, conn, reader, edges)
    if not said:
        return hits
    ends_by_word = {i: _relative_words(words) for i, words in enumerate(phrases) if hits[i] is None and _relative_words(words)}
    candidates = {k for k, _, text in _others_and_texts(edges, me, said) for words in ends_by_word.values()
                  for _, _, word in words if _my_word_re(word).search(text)}
    if not candidates:
        return hits
    ents = reads.load_entities(conn, st.t, st.agent_id, sorted(candidates), st.user_id, read=True)
    out = list(hits)
    for i, words in ends_by_word.items():
        for start, end, word in words:
            ends: list[tuple[str, Optional[str]]] = []
            for other, evidence, text in _others_and_texts(edges, me, said):
                name = ents.get(other, {}).get("display_name")
                if name and all(other != k for k, _ in ends) and _my_word_re(word, str(name)).search(text):
                    ends.append((other, evidence))
            if ends:
                out[i] = _Relatives(start, end, word, ends)
                break
    return out


def _relative_words(words: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The words of one "my" that may name a relative: not one of her own attributes ("my
    job": :data:`ATTRIBUTE_WORDS`, never another entity of hers), so "what is my job?" reads
    no events; "my work colleague" keeps ``work_colleague``. Nor a noun and the verb that
    names it ("what is my parrot called?": ``parrot``, not ``parrot_called``, kg41)."""
    return [w for w in words if w[2] not in ATTRIBUTE_WORDS and w[2].split("_")[-1] not in _NAMING_VERBS]


def _her_evidence_events(st: RetrieveState, conn: sa.Connection, reader: str, edges: list[Any]) -> dict[str, str]:
    """Per evidence fact of her edges, the text of the event it was learnt from, when that event
    is of her scope and spoken by her (the speaker read as :func:`reader_name` reads it)."""
    ids = sorted({str(ev) for *_, ev in edges if ev})
    if not ids:
        return {}
    stmt = reads.cached_stmt(st.t.fact, ("reader_evidence_events",), lambda: evidence_events_stmt(st.t.fact, st.t.event))
    out: dict[str, str] = {}
    for batch in reads.chunked(ids):
        for fact_id, speaker, text in conn.execute(stmt, {"p_ids": batch, "p_agent": st.agent_id, "p_user": st.user_id}):
            if speaker is not None and norm(str(speaker)) == norm(reader) and text:
                out[str(fact_id)] = str(text).replace("\u2019", "'")
    return out


def evidence_events_stmt(f: sa.Table, ev: sa.Table) -> sa.Select[Any]:
    """Facts ``p_ids`` of the scope (``p_agent``, ``p_user``) with the speaker and text of the
    event each was learnt from, in the same scope. The event's text (a CLOB on Oracle) is only
    selected: the join is on the id columns."""
    return (sa.select(f.c.id, ev.c.speaker, ev.c.text)
            .select_from(f.join(ev, ev.c.id == f.c.source_event_id))
            .where(f.c.id.in_(reads.expanding("p_ids")), f.c.agent_id == sa.bindparam("p_agent"),
                   f.c.user_id == sa.bindparam("p_user"), ev.c.agent_id == f.c.agent_id, ev.c.user_id == f.c.user_id))


def _others_and_texts(edges: list[Any], me: str, said: dict[str, str]) -> list[tuple[str, Optional[str], str]]:
    """Per edge of hers whose evidence event she spoke: the other end, the evidence fact id and
    the event's text, strongest edge first."""
    out: list[tuple[str, Optional[str], str]] = []
    for src, tgt, _, evidence in edges:
        other = tgt if src == me else src
        if other != me and evidence and str(evidence) in said:
            out.append((other, evidence, said[str(evidence)]))
    return out


#: verbs that give a name ("my parrot called Zuzu"): never the second word of a relative noun
_NAMING_VERBS = frozenset({"called", "named"})
#: a clause between "my <word>" and the name that names the noun (kg41): "my parrot, who is
#: called Zuzu", "who's called", "which is named", "whose name is", "named", "called"
_NAMING_CLAUSE = r"(?:(?:(?:who|which|that)(?:\s+is|'s)\s+)?(?:called|named)\s+|whose\s+name\s+is\s+)?"


def _my_word_re(word: str, name: Optional[str] = None) -> re.Pattern[str]:
    """"my <word>" (its parts apart by spaces or hyphens), then ``name`` when given, right
    after it ("my landlord, Mr. Berg") or after a clause that names it (:data:`_NAMING_CLAUSE`:
    "my parrot, who is called Zuzu"), case-insensitive, whole words."""
    spelled = r"[\s_-]+".join(re.escape(part) for part in word.split("_") if part)
    tail = "" if name is None else (r"\s*,?\s+" + _NAMING_CLAUSE
                                    + r"\s+".join(re.escape(part) for part in name.split()))
    return re.compile(rf"(?<![\w'])my\s+{spelled}{tail}(?![\w])", re.IGNORECASE)


def _evidence_texts(st: RetrieveState, conn: sa.Connection, found: list[_Relatives]) -> dict[str, str]:
    """The texts of the found edges' evidence facts she may see, by fact id."""
    ids = sorted({ev for hit in found for _, ev in hit.ends if ev})
    if not ids:
        return {}
    f = st.t.fact
    return {str(i): str(text) for i, text in conn.execute(
        sa.select(f.c.id, f.c.fact_text).where(reads.visible(f, st.agent_id, st.user_id), f.c.id.in_(ids)))}


def _readings(query: str, reader: str, found: list[_Relatives], ents: dict[str, dict[str, Any]],
              said: dict[str, str]) -> list[tuple[str, bool]]:
    """The query once per relative found: "my <word>" replaced by the relative's name, or by
    "<reader>'s <word> <name>" when the question asks only who it is (then True: the reading
    names the relation). Per word the relatives whose evidence fact says "<reader>'s <word>"
    (or its neutral kin word) when some do, else all, at most :data:`RELATIVES_PER_WORD`; an
    inactive or unnamed entity is none."""
    texts: list[tuple[str, bool]] = []
    for hit in found:
        named = [(k, ev) for k, ev in hit.ends if k in ents and ents[k]["is_active"] and ents[k].get("display_name")]
        said_so = [k for k, ev in named if ev and _says_her_word(said.get(ev, ""), reader, hit.word)]
        who = _asks_who(query, hit)
        for k in (said_so or [k for k, _ in named])[:RELATIVES_PER_WORD]:
            name = str(ents[k]["display_name"])
            sub = f"{reader}'s {rel_words(hit.word)} {name}" if who else name
            text = query[:hit.start] + sub + query[hit.end:]
            if all(text != t for t, _ in texts):
                texts.append((text, who))
    return texts


def _says_her_word(text: str, reader: str, word: str) -> bool:
    """Whether ``text`` says "<reader>'s <word>" ("Carol's sister", KC-4.14's mirror fact) or its
    neutral kin word, as a ``<kin>_of`` mirror fact does ("my father": "Carol's parent")."""
    says = {norm(f"{reader}'s {w}") for w in (rel_words(word), KIN_CLASS.get(word, rel_words(word)))}
    return any(p in norm(text) for p in says)


def _asks_who(query: str, hit: _Relatives) -> bool:
    """Whether the query's words other than "my <word>" only ask who it is (:data:`IDENTITY_WORDS`)."""
    rest = _WORD_RE.findall((query[:hit.start] + " " + query[hit.end:]).lower())
    return all(w in IDENTITY_WORDS for w in rest)


def resolve_keys(st: RetrieveState, conn: sa.Connection) -> tuple[list[str], bool]:
    """KC-5.1: canonical key, then alias, then slug; unknown keys warn."""
    if not st.entity_keys_in:
        return [], False
    e = st.t.entity
    out: list[str] = []
    for raw in st.entity_keys_in:
        key = str(raw)
        hit = conn.execute(
            sa.select(e.c.canonical_key).where(reads.visible(e, st.agent_id, st.user_id), e.c.canonical_key == key, e.c.is_active == True)  # noqa: E712
        ).first()
        found = hit[0] if hit else None
        if found is None:
            al = reads.lookup_aliases(conn, st.t, st.agent_id, [norm(key)], st.user_id, read=True)
            if norm(key) in al:
                found = al[norm(key)][0]
        if found is None:
            part = key.split(":", 1)[1] if ":" in key else key
            al = reads.lookup_aliases(conn, st.t, st.agent_id, [norm(part), norm(part.replace("_", " "))], st.user_id, read=True)
            for a in (norm(part), norm(part.replace("_", " "))):
                if a in al:
                    found = al[a][0]
                    break
        if found is None:
            cands = reads.entities_by_slug(conn, st.t, st.agent_id, slug(key.split(":", 1)[-1]), st.user_id, read=True)
            if cands:
                found = cands[0]["canonical_key"]
        if found is None:
            st.warn(f"unknown entity key: {key}")
        elif found not in out:
            out.append(found)
    return out, not out


def expand_query(st: RetrieveState, conn: sa.Connection, resolved: list[str]) -> tuple[ExpandedQuery, list[str]]:
    """Returns the expansion and the directly primed keys (aliases, names, entity_keys)."""
    t = st.t
    grams = [g for g in ngrams(st.query, 4) if len(g) >= 3]
    hits = reads.lookup_aliases(conn, t, st.agent_id, grams, st.user_id, read=True)
    primed: list[str] = []
    for k in resolved:
        if k not in primed:
            primed.append(k)
    by_slug = reads.entities_by_slugs(conn, t, st.agent_id, [slug(g) for g in grams], st.user_id, read=True)
    for g in grams:
        if g in hits and hits[g][0] not in primed:
            primed.append(hits[g][0])
        for e in by_slug.get(slug(g), []):  # display names (the speaker has no alias row)
            if e["canonical_key"] not in primed:
                primed.append(e["canonical_key"])
    if primed:
        ents = reads.load_entities(conn, t, st.agent_id, primed, st.user_id, read=True)
        primed = [k for k in primed if k in ents and ents[k]["is_active"]][:10]
    neighbours: list[str] = []
    if primed:
        r = t.relationship
        shared_only, _, _, current = st.shape()
        rel_stmt = reads.cached_stmt(r, ("expand_edges", shared_only, current), lambda: (
            sa.select(r.c.source_entity_key, r.c.target_entity_key, r.c.strength, r.c.id)
            .where(reads.p_visible(r, shared_only),
                   sa.or_(r.c.source_entity_key.in_(reads.expanding("p_keys")), r.c.target_entity_key.in_(reads.expanding("p_keys"))),
                   *p_edge_visible(r, current))
            .order_by(sa.desc(r.c.strength), r.c.id)))
        rows = conn.execute(rel_stmt, st.params(p_keys=list(primed))).all()
        for s, tg, _, _ in rows:
            other = tg if s in primed else s
            if other not in primed and other not in neighbours:
                neighbours.append(other)
            if len(neighbours) >= 5:
                break
    primed_all = primed + neighbours
    terms: list[str] = []
    if primed:
        f = t.fact
        shared_only = st.user_id is None
        n_arms = reads.rank_arms(len(primed))  # primed holds at most 10 keys

        def build_terms() -> sa.Select[Any]:
            # the first 200 current facts of the primed keys in rank order: each key's first
            # 200 from the rank index, then the first 200 of those (the same rows, in the
            # same order, as one ORDER BY ... LIMIT 200 over every fact of the keys)
            cols = [f.c.attribute_key, f.c.value_json, f.c.ttl_days, f.c.ingested_at]
            sub = reads.ranked_facts(f, n_arms, [reads.p_visible(f, shared_only), f.c.valid_to.is_(None), f.c.invalidated_at.is_(None)],
                                     sa.bindparam("p_cut", type_=sa.Integer, literal_execute=True))
            return (sa.select(*cols).select_from(sub.join(f, f.c.id == sub.c.id))
                    .order_by(sa.desc(sub.c.importance), sa.desc(sub.c.valid_from), sub.c.id)
                    .limit(sa.bindparam("p_cut", type_=sa.Integer, literal_execute=True)))

        terms_stmt = reads.cached_stmt(f, ("expand_terms_by_key", shared_only, n_arms), build_terms)
        cut = TERMS_CUT
        while True:
            primed_rows = conn.execute(terms_stmt, {"p_agent": st.agent_id, "p_user": st.user_id, "p_cut": cut,
                                                    **reads.rank_keys(list(primed), n_arms)})
            # plain rows, no mapping per row: up to 200 of them when the keys' facts share their
            # attribute and value (~2 us a row less)
            terms, read, n_current = [], 0, 0
            for attribute, value, ttl_days, ingested_at in primed_rows:
                read += 1
                if reads.ttl_lapsed(ingested_at, ttl_days, st.now):
                    continue
                n_current += 1
                for v in (attribute, value):
                    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                        s = str(v).replace("_", " ") if v is attribute else str(v)
                        if s.strip() and s not in terms:
                            terms.append(s)
                if len(terms) >= 10 or n_current >= TERMS_CUT:
                    break
            primed_rows.close()
            if len(terms) >= 10 or n_current >= TERMS_CUT or read < cut:
                break
            # facts past their TTL (not purged yet) took places of the cut: read again with
            # twice the places (the first TERMS_CUT current facts still bound the terms). The
            # cut is a literal in the statement (p_cut), so doubling keeps the number of
            # statement texts small (200, 400, 800, ...: one cursor each on Oracle) where
            # adding the lapsed count made a new text for nearly every refill
            cut *= 2
    return ExpandedQuery(primed_entities=primed_all, temporal_range=st.view.trange, expanded_terms=terms[:10]), primed


#: KC-5.3's expansion terms come from the primed keys' first this many current facts in rank
#: order (a bound on the rows read; facts past their TTL do not count against it)
TERMS_CUT = 200


async def embed_query(st: RetrieveState) -> Optional[str]:
    """``st.qvec``, the query's vector; on a failure None and the warning to give (returned, not
    given here: the caller gives it where the pipeline's warnings expect it). Run as a task
    beside the first reads: the embedder works on the pool meanwhile."""
    texts = [st.query]
    relation: list[str] = []  # "my <word>" as the relation with her relative (KC-5.4 [ext])
    about: list[str] = []  # "my <word>" as her relative's name, "my <attribute>" as hers
    if st.reader is not None:  # KC-5.4 [ext]: I/me read as the reader, then "my" too; each once
        third = in_third_person(st.query, st.reader)
        for q in st.relatives:
            text = in_third_person(q, st.reader)
            if text not in relation and text not in about:
                (relation if q in st.relation_readings else about).append(text)
        attributes = in_third_person_attributes(st.query, st.reader)
        if attributes != third and attributes not in relation and attributes not in about:
            about.append(attributes)
        for text in (third, in_third_person_possessive(st.query, st.reader), *relation, *about):
            if text not in texts:
                texts.append(text)
    try:
        out = await st.rt.embed(texts, True, alongside=True)
        arr = np.asarray(out, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts) or arr.shape[1] != st.rt.dim or not np.all(np.isfinite(arr)):
            raise ValueError(f"embedder returned shape {arr.shape} for {len(texts)} query text(s) of dimension {st.rt.dim}")
        vectors = dict(zip(texts, arr))
        st.qvec = vectors[st.query]
        if st.reader is not None:
            third_vec = vectors[in_third_person(st.query, st.reader)]
            mine = vectors[in_third_person_possessive(st.query, st.reader)]
            st.fact_qvec = None if third_vec is st.qvec else third_vec
            st.reading_qvecs = [vectors[q] for q in relation]
            st.about_qvecs = [vectors[q] for q in about]
            # the fallback reading already searched as an attribute reading ("what is my job?"): once
            searched = [third_vec, *st.reading_qvecs, *st.about_qvecs]
            st.mine_qvec = None if any(mine is v for v in searched) else mine
        return None
    except Exception as exc:  # noqa: BLE001 - KC-7.6: semantic and event signals turn off
        st.qvec = st.fact_qvec = st.mine_qvec = None
        st.reading_qvecs = []
        st.about_qvecs = []
        return f"embedding: {type(exc).__name__}: {exc}; semantic and event signals off"


async def _visible_search(st: RetrieveState, **kwargs: Any) -> list[Any]:
    """A store search over the store records KC-3.8 lets ``st.user_id`` see. The metadata
    filter's ``kg_user`` scope is written by whoever writes a record, so a client of another
    user may write records of *its* scope that claim this one and fill the top-k. The search
    runs once, as before; when a hit's own ``user_id`` (set only by a writer of that scope) is
    neither None nor ``st.user_id``, it runs again per store scope (``reads.store_user``: the
    shared records and, for a user, hers) and the two are merged nearest first (ties by record
    type, then id: SC-6.1), ``k`` in all. Without such a hit the first answer is already the
    top-k of the visible records (they are a subset of what it ranked)."""
    hits: list[Any] = await st.rt.search(**kwargs)
    if all(record.user_id in (None, st.user_id) for record, _ in hits):
        return hits
    scopes = [None] if st.user_id is None else [st.user_id, None]
    found = await asyncio.gather(*(st.rt.search(**kwargs, **reads.store_user(user)) for user in scopes))
    merged = sorted((hit for hits in found for hit in hits), key=lambda h: (float(h[1]), h[0].record_type, h[0].id))
    return merged[: kwargs["k"]]


def _store_filter(st: RetrieveState, filter_keys: Optional[list[str]]) -> dict[str, Any]:
    return reads.with_scope(store_filter(st.view, min_confidence=st.cfg.min_confidence, entity_keys=filter_keys),
                            st.user_id, read=True)


def below_similarity(min_similarity: float) -> float:
    """A store search's ``max_distance`` that keeps every hit of cosine similarity at least
    ``min_similarity`` (``1 - distance >= min_similarity``, which the caller still checks):
    the store then reads and returns no record the signal would drop (a retrieve's event
    search asked for 200 messages and dropped them all on a store where none was similar:
    3 ms at 100k facts). A hair above ``1 - min_similarity``, so rounding never cuts a hit."""
    return max(0.0, 1.0 - min_similarity + 1e-9)


async def semantic_hits(st: RetrieveState, pool: int, filter_keys: Optional[list[str]]) -> list[tuple[Any, float, float]]:
    """The semantic signal's store hits, nearest first, at most ``pool``: per fact its record,
    its distance to the nearest of the query's vectors that count for every fact and its
    distance to the nearest reading about her or a relative of hers
    (:attr:`RetrieveState.about_qvecs`), which counts only for a fact that is not a relation's
    mirror fact (``math.inf``: not found that way)."""
    if st.qvec is None:
        return []

    async def search(vector: np.ndarray) -> list[Any]:
        return await _visible_search(st,
            query_vector=vector, k=pool, agent_id=st.agent_id, record_types=["fact"], strategy="vector",
            metadata_filter=_store_filter(st, filter_keys), max_distance=below_similarity(st.cfg.min_similarity),
        )

    vectors = [st.qvec] + ([] if st.fact_qvec is None else [st.fact_qvec]) + list(st.reading_qvecs)
    about = list(st.about_qvecs)
    if len(vectors) + len(about) == 1:
        hits = [(r, float(d), math.inf) for r, d in await search(st.qvec)]
    else:
        # KC-5.4 [ext]: a fact's similarity is the largest of the query's as spoken, as read in
        # the third person, with "my <word>" read as her relative's name and with "my
        # <attribute>" read as hers, so no fact scores below what the query as spoken gives it
        found = await asyncio.gather(*(search(v) for v in vectors + about))
        best: dict[str, tuple[Any, float, float]] = {}
        for i, hits_ in enumerate(found):
            for record, d in hits_:
                _, every, of_about = best.get(record.id, (record, math.inf, math.inf))
                best[record.id] = ((record, min(every, float(d)), of_about) if i < len(vectors)
                                   else (record, every, min(of_about, float(d))))
        hits = sorted(best.values(), key=lambda h: (min(h[1], h[2]), h[0].record_type, h[0].id))[:pool]
    if not hits and st.mine_qvec is not None:
        # KC-5.4 [ext]: nothing found; "my" read as the reader's too ("what is my job?")
        hits = [(r, float(d), math.inf) for r, d in await search(st.mine_qvec)]
    return hits


async def keyword_hits(st: RetrieveState, pool: int, filter_keys: Optional[list[str]], expanded: ExpandedQuery) -> list[Any]:
    from ...types import SearchStrategy

    if st.rt.store.search_strategy is not SearchStrategy.HYBRID:
        st.warn("keyword signal unavailable")
        return []
    text = " ".join([st.query] + expanded.expanded_terms)
    hits: list[Any] = await _visible_search(st,
        query=text, k=pool, agent_id=st.agent_id, record_types=["fact"], strategy="keyword",
        metadata_filter=_store_filter(st, filter_keys),
    )
    return hits


async def direct_signals(st: RetrieveState, pool: int, filter_keys: Optional[list[str]], expanded: ExpandedQuery,
                         plan: RetrievalPlan) -> tuple[int, int]:
    """The semantic and keyword signals: both store searches, then the hits' fact rows in one
    read (a fact found by both is read once), then the pattern rows (KC-5.2). Returns the
    number of candidates each signal added to."""
    sem_hits, kw_hits = await asyncio.gather(semantic_hits(st, pool, filter_keys), keyword_hits(st, pool, filter_keys, expanded))
    ids = [r.id for r, _, _ in sem_hits] + [r.id for r, _ in kw_hits]
    rows = await st.read(lambda c: st.facts_by_ids(c, ids)) if ids else {}
    sem = 0
    for rec, dist, about_dist in sem_hits:
        row = rows.get(rec.id)
        if row is None:
            continue
        # KC-5.4 [ext]: "my <attribute>" read as hers is about her, "my <word>" read as her
        # relative's name about the relative, neither about the relation between them: "what is
        # Sofia's job?" is nearer "Ines is Sofia's partner" than her job, "what did Dr. Keller
        # assign?" nearer "Dr. Keller manages Jonas" than what he assigned
        if row.get("source_context") != MIRROR_SOURCE_CONTEXT:
            dist = min(dist, about_dist)
        sim = 1.0 - float(dist)
        if sim < st.cfg.min_similarity or not fact_visible(row, st.view):
            continue
        if float(row["confidence"]) < st.cfg.min_confidence:
            continue
        st.add(row, "semantic", sim)
        sem += 1
    kw = 0
    for rec, dist in kw_hits:
        row = rows.get(rec.id)
        if row is None or not fact_visible(row, st.view) or float(row["confidence"]) < st.cfg.min_confidence:
            continue
        st.add(row, "keyword", clip01(1.0 - float(dist)))
        kw += 1
    if plan.pattern_queries:
        pattern_rows = await st.read(lambda c: pattern_facts(st, c, plan, pool, filter_keys))
        for prow in pattern_rows:
            st.add(prow, "keyword", 1.0)
            kw += 1
    return sem, kw


def pattern_facts(st: RetrieveState, conn: sa.Connection, plan: RetrievalPlan, pool: int, filter_keys: Optional[list[str]]) -> list[dict[str, Any]]:
    f, lk = st.t.fact, st.t.link
    out: dict[str, dict[str, Any]] = {}
    for pq in plan.pattern_queries:
        stmt = sa.select(*st.fact_cols()).where(
            reads.visible(f, st.agent_id, st.user_id), f.c.entity_key.like(pq.entity_pattern), *sql_visible(f, st.view)
        )
        if pq.attribute_filter:
            stmt = stmt.where(f.c.attribute_key == pq.attribute_filter)
        if filter_keys is not None:
            stmt = stmt.where(f.c.id.in_(sa.select(lk.c.fact_id).where(reads.visible(lk, st.agent_id, st.user_id), lk.c.entity_key.in_(filter_keys))))
        for r in conn.execute(stmt.order_by(sa.desc(f.c.importance), sa.desc(f.c.valid_from), f.c.id).limit(pool)).mappings():
            d = dict(r)
            if fact_visible(d, st.view):
                out.setdefault(d["id"], d)
    return list(out.values())


def graph_signal(st: RetrieveState, conn: sa.Connection, seeds: list[str], filter_keys: Optional[list[str]]) -> GraphRetrievalResult:
    """KC-5.4 graph signal: BFS from the primed entities over active edges, both directions,
    as one recursive CTE (SQLite and Oracle through SQLAlchemy)."""
    cfg = st.cfg
    res = GraphRetrievalResult()
    if not seeds:
        return res
    t = st.t
    r, e = t.relationship, t.entity
    shared_only, has_trange, hide_stale, current = st.shape()
    max_hop = min(2, len(cfg.graph_hop_factors) - 1)

    def build_walk() -> sa.Select[Any]:
        vis = p_edge_visible(r, current)
        fwd = sa.select(r.c.id.label("rid"), r.c.source_entity_key.label("a"), r.c.target_entity_key.label("b"),
                        r.c.strength.label("s")).where(reads.p_visible(r, shared_only), *vis)
        bwd = sa.select(r.c.id.label("rid"), r.c.target_entity_key.label("a"), r.c.source_entity_key.label("b"),
                        r.c.strength.label("s")).where(reads.p_visible(r, shared_only), *vis)
        und = sa.union_all(fwd, bwd).cte("kg_und")
        walk = (
            sa.select(e.c.canonical_key.label("k"), sa.literal(0, sa.Integer).label("hop"),
                      sa.literal(1.0, sa.Float).label("s"), sa.cast(sa.null(), sa.String(36)).label("rid"))
            .where(reads.p_visible(e, shared_only), e.c.canonical_key.in_(reads.expanding("p_seeds")))
            .cte("kg_walk", recursive=True)
        )
        step = (
            sa.select(und.c.b, (walk.c.hop + 1).label("hop"), und.c.s, und.c.rid)
            .select_from(walk.join(und, und.c.a == walk.c.k))
            .where(walk.c.hop < sa.bindparam("p_max_hop", type_=sa.Integer),
                   sa.or_(walk.c.hop == 0, und.c.s >= sa.bindparam("p_min_strength", type_=sa.Float)))
        )
        walk = walk.union_all(step)
        return sa.select(walk.c.k, walk.c.hop, walk.c.s, walk.c.rid)

    walk_stmt = reads.cached_stmt(r, ("graph_walk", shared_only, current), build_walk)
    rows = conn.execute(walk_stmt, st.params(p_seeds=list(seeds), p_max_hop=max_hop,
                                                p_min_strength=cfg.graph_hop2_min_strength)).all()
    best: dict[str, tuple[int, float, Optional[str]]] = {}
    for k, hop, s, rid in rows:
        cur = best.get(k)
        if cur is None or hop < cur[0] or (hop == cur[0] and float(s) > cur[1]):
            best[k] = (int(hop), float(s), rid)
    rids = sorted({rid for _, _, _, rid in rows if rid})
    edge_rows: dict[str, dict[str, Any]] = {}
    edges_stmt = reads.cached_stmt(r, ("edges_by_ids",), lambda: sa.select(r).where(r.c.id.in_(reads.expanding("p_ids"))))
    for batch in reads.chunked(rids):
        for row in conn.execute(edges_stmt, {"p_ids": batch}).mappings():
            edge_rows[row["id"]] = dict(row)
    ents = reads.load_entities(conn, t, st.agent_id, list(best), st.user_id, read=True)
    best = {k: v for k, v in best.items() if k in ents and ents[k]["is_active"]}
    # neighbour cut per hop: importance, then strength
    kept: dict[str, tuple[int, float, Optional[str]]] = {k: v for k, v in best.items() if v[0] == 0}
    for hop in range(1, max_hop + 1):
        layer = [k for k, v in best.items() if v[0] == hop]
        layer.sort(key=lambda k: (-(ents[k]["importance_score"] or 0.0), -best[k][1], k))
        for k in layer[:MAX_NEIGHBOURS_PER_HOP]:
            kept[k] = best[k]
    res.neighbor_keys = sorted(k for k, v in kept.items() if v[0] > 0)
    names = {k: ents[k]["display_name"] for k in ents}
    seen_edges = set()
    hop_of_edge: dict[str, int] = {}  # an edge's lowest hop among the kept keys it reached
    for v in kept.values():
        if v[2] is not None and (v[2] not in hop_of_edge or v[0] < hop_of_edge[v[2]]):
            hop_of_edge[v[2]] = v[0]
    for rid in rids:
        er = edge_rows.get(rid)
        if er is None:
            continue
        hop = hop_of_edge.get(rid)
        if hop is None:
            continue
        seen_edges.add(rid)
        res.edges.append({
            "source_key": er["source_entity_key"], "source_name": names.get(er["source_entity_key"]),
            "target_key": er["target_entity_key"], "target_name": names.get(er["target_entity_key"]),
            "rel_type": er["rel_type"], "strength": float(er["strength"]), "hop": hop,
        })
    res.edges.sort(key=lambda x: (x["hop"], -x["strength"], x["source_key"], x["rel_type"], x["target_key"]))
    res.edges_traversed = len(seen_edges)
    # facts of the seeds and the neighbours, by hop then recency
    # Hop by hop, the next hop only while the limit is not reached: the rows are ordered by
    # hop first, so this reads the rows one query over every kept key ordered by (hop, ...)
    # would, without reading the neighbours' facts when the seeds' facts fill the limit.
    qwords = " " + " ".join(norm(re.sub(r"[^\w\s]", " ", st.query)).split()) + " "
    taken: dict[str, dict[str, Any]] = {}
    left = cfg.graph_max_facts * 3
    for hop in range(max_hop + 1):
        keys = [k for k, v in kept.items() if v[0] == hop]
        if left <= 0 or not keys:
            continue
        frows = hop_facts(st, conn, keys, left, filter_keys)
        left -= len(frows)
        for frow in frows:
            via = frow.pop("_via")
            if not reads.row_visible(frow, st.agent_id, st.user_id) or not fact_visible(frow, st.view):
                continue
            if frow["id"] not in taken and len(taken) >= cfg.graph_max_facts:
                continue
            _, s, rid = kept[via]
            fact_age = days(frow["valid_from"], st.now)
            edge_factor = 1.0
            if hop > 0 and rid in edge_rows:
                edge_factor = max(0.2, 1.0 / (1.0 + days(edge_rows[rid]["updated_at"], st.now) / 90.0))
            name = norm(names.get(via) or "")
            boost = 1.5 if name and f" {name} " in qwords else 1.0
            score = clip01(s * max(0.1, 1.0 / (1.0 + fact_age / 30.0)) * edge_factor * boost * cfg.graph_hop_factors[hop])
            prev = taken.get(frow["id"])
            if prev is None or score > prev["score"]:
                taken[frow["id"]] = {"fact_id": frow["id"], "entity_key": via, "hop": hop, "score": score, "edge_id": rid}
            st.add(frow, "graph", score, (rid,) if rid else ())
    res.facts = sorted(taken.values(), key=lambda x: (x["hop"], -x["score"], x["fact_id"]))
    return res


def _hop_facts_stmt(st: RetrieveState, n_arms: int, filter_keys: Optional[list[str]]) -> sa.Select[Any]:
    """The facts linked to one hop's keys (``p_k0`` .. ``p_k<n_arms-1>``), newest first (the
    entity key breaks a tie of two links of a fact), the first ``p_limit``. Per key two
    branches, each newest first and cut at ``p_limit``, so a key's facts are read in that
    order and the read stops there, where one ORDER BY over every linked fact read and sorted
    all of them (an entity with 5,000 facts: ~13 ms per retrieve, growing with the entity):

    - the facts *of* the key (their entity_key), from the (agent_id, entity_key, valid_from
      DESC, id) index, each with its link to the key;
    - the facts that only mention the key: its links that are not a fact's primary link,
      whose fact is another entity's. A fact's primary link is the one to its own entity_key
      (KC-4.12: the write path links the fact's entity first; a merge moves a fact's
      entity_key and its primary link together), so the two branches hold every link of the
      key once.

    The scope is on the links (a link has its fact's agent and user) and on the fact's user;
    the caller checks the fact's agent on the rows read (a defence)."""
    f, lk = st.t.fact, st.t.link
    shared_only, has_trange, hide_stale, _ = st.shape()
    cut = sa.bindparam("p_limit", type_=sa.Integer, literal_execute=True)
    fact_conds: list[sa.ColumnElement[bool]] = [
        reads.p_user_visible(f, shared_only), f.c.confidence >= sa.bindparam("p_min_conf", type_=sa.Float),
        *p_sql_visible(f, has_trange, hide_stale)]
    if filter_keys is not None:
        lf = lk.alias("kg_lf")
        fact_conds.append(f.c.id.in_(sa.select(lf.c.fact_id).where(reads.p_visible(lf, shared_only), lf.c.entity_key.in_(reads.expanding("p_fk")))))
    arms: list[sa.Select[Any]] = []
    for i in range(n_arms):
        key = sa.bindparam(f"p_k{i}", type_=f.c.entity_key.type)
        own = lk.alias(f"kg_lo{i}")
        of_key = (
            sa.select(f.c.id, f.c.valid_from, f.c.entity_key.label("via"))
            .where(f.c.agent_id == sa.bindparam("p_agent"), f.c.entity_key == key, *fact_conds,
                   sa.exists().where(own.c.fact_id == f.c.id, own.c.entity_key == key, reads.p_visible(own, shared_only)))
            .order_by(sa.desc(f.c.valid_from), f.c.id).limit(cut).subquery(f"kg_of{i}"))
        men = lk.alias(f"kg_lm{i}")
        mentions = (
            sa.select(f.c.id, f.c.valid_from, men.c.entity_key.label("via"))
            .select_from(men.join(f, f.c.id == men.c.fact_id))
            .where(reads.p_visible(men, shared_only), men.c.entity_key == key, men.c.is_primary == False,  # noqa: E712
                   f.c.entity_key != key, *fact_conds)
            .order_by(sa.desc(f.c.valid_from), f.c.id).limit(cut).subquery(f"kg_mt{i}"))
        arms += [sa.select(of_key), sa.select(mentions)]
    hop_rows = sa.union_all(*arms).subquery("kg_hop")
    return (sa.select(*st.fact_cols(), hop_rows.c.via.label("_via"))
            .select_from(hop_rows.join(f, f.c.id == hop_rows.c.id))
            .order_by(sa.desc(hop_rows.c.valid_from), hop_rows.c.id, hop_rows.c.via)
            .limit(cut))


def hop_facts(st: RetrieveState, conn: sa.Connection, keys: list[str], limit: int,
              filter_keys: Optional[list[str]]) -> list[dict[str, Any]]:
    """The graph signal's facts of one hop: the first ``limit`` (fact, link) rows of ``keys``
    (fact columns and ``_via``, the linked key), newest first, then by fact id and key; one
    statement per ``GRAPH_KEYS_PER_STATEMENT`` keys, merged in the same order."""
    shared_only, has_trange, hide_stale, _ = st.shape()
    params = st.params(p_min_conf=st.cfg.graph_min_confidence, p_limit=limit)
    if filter_keys is not None:
        params["p_fk"] = list(filter_keys)
    found: list[dict[str, Any]] = []
    batches = list(reads.chunked(keys, GRAPH_KEYS_PER_STATEMENT))
    for batch in batches:
        n_arms = reads.rank_arms(len(batch))
        stmt = reads.cached_stmt(st.t.fact, ("graph_hop_facts", n_arms, shared_only, has_trange, hide_stale, filter_keys is not None),
                                 lambda: _hop_facts_stmt(st, n_arms, filter_keys))
        found += reads.rows_of(conn.execute(stmt, {**params, **reads.rank_keys(batch, n_arms)}))
    if len(batches) > 1:
        found.sort(key=lambda row: (row["id"], row["_via"]))
        found.sort(key=lambda row: row["valid_from"], reverse=True)  # stable: newest first, then (id, key)
    return found[:limit]


async def event_signal(st: RetrieveState) -> list[dict[str, Any]]:
    cfg = st.cfg
    if st.qvec is None:
        return []
    hits = await _visible_search(st,
        query_vector=st.qvec, k=cfg.event_max_scan, agent_id=st.agent_id, record_types=["message"], strategy="vector",
        metadata_filter=reads.with_scope({"kg_source": {"$exists": True}}, st.user_id, read=True),
        max_distance=below_similarity(cfg.min_similarity),
    )
    hits = [(rec, 1.0 - float(d)) for rec, d in hits if 1.0 - float(d) >= cfg.min_similarity]
    if not hits:
        return []
    ev = st.t.event

    def load(conn: sa.Connection) -> dict[str, dict[str, Any]]:
        # by primary key, the scope checked on the rows read: with agent_id in the WHERE
        # clause SQLite (no statistics) walks the agent's events by (agent_id, occurred_at)
        out = {}
        stmt = reads.cached_stmt(ev, ("event_rows_by_ids",), lambda: (
            sa.select(ev.c.id, ev.c.text, ev.c.occurred_at, ev.c.importance, ev.c.created_at, ev.c.agent_id, ev.c.user_id)
            .where(ev.c.id.in_(reads.expanding("p_ids")))))
        for batch in reads.chunked([r.id for r, _ in hits]):
            for row in reads.rows_of(conn.execute(stmt, {"p_ids": batch})):
                if reads.row_visible(row, st.agent_id, st.user_id):
                    out[row["id"]] = {k: row[k] for k in ("id", "text", "occurred_at", "importance", "created_at")}
        return out

    rows = await st.read(load)
    w_sim, w_rec, w_imp = cfg.event_score_weights
    out = []
    for rec, sim in hits:
        row = rows.get(rec.id)
        if row is None:
            continue
        if st.view.trange is not None and not (st.view.trange[0] <= row["occurred_at"] < st.view.trange[1]):
            continue
        if st.view.as_of is not None and row["occurred_at"] > st.view.as_of:
            continue
        if row["created_at"] > st.view.known:
            continue
        rec_s = recency_score(row["occurred_at"], st.now, cfg.recency_half_life_days)
        score = w_sim * sim + w_rec * rec_s + w_imp * float(row["importance"])
        out.append({"event_id": row["id"], "text": row["text"], "occurred_at": row["occurred_at"], "score": score})
    out.sort(key=lambda x: (-x["score"], x["event_id"]))
    return out[: cfg.topk_events]
