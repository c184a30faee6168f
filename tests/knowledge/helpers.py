"""Reply builders and the clock of the KC §8 harness; a scope's rows for the B-vs-A tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import sqlalchemy as sa

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: Any) -> datetime:
        self.now = self.now + (timedelta(**kw) if kw else timedelta(hours=1))
        return self.now


def extract(entities=(), facts=(), relations=(), intentions=(), observations=(), **extra) -> dict:
    """An ``extract`` reply. Entities: (name, type[, aliases]); facts: dicts or
    (subject, fact[, attribute_key[, category]]); relations: (source, target, rel_type)."""
    ents = []
    for e in entities:
        d = {"name": e[0], "type": e[1]}
        if len(e) > 2:
            d["aliases"] = list(e[2])
        ents.append(d)
    fs = []
    for f in facts:
        if isinstance(f, dict):
            fs.append(f)
            continue
        d = {"subject": f[0], "fact": f[1], "confidence": "explicit_statement"}
        if len(f) > 2 and f[2]:
            d["attribute_key"] = f[2]
        if len(f) > 3 and f[3]:
            d["category"] = f[3]
        fs.append(d)
    reply = {
        "entities": ents,
        "facts": fs,
        "relations": [{"source": s, "target": t, "rel_type": r} for s, t, r in relations],
        "intentions": list(intentions),
        "observations": list(observations),
    }
    reply.update(extra)
    return reply


def reconcile(*decisions: tuple) -> dict:
    """``reconcile(("UPDATE", 1, 1), ("NOOP", 2, 1), ("UPDATE", 1, 1, "correction"))``."""
    out = []
    for d in decisions:
        item = {"action": d[0], "new_fact_index": d[1]}
        if len(d) > 2 and d[2] is not None:
            item["existing_fact_index"] = d[2]
        if len(d) > 3:
            item["update_kind"] = d[3]
        out.append(item)
    return {"decisions": out}


def write_keeper(km, llm, clock, user, who: str, thing: str, message: str) -> None:
    """One write in scope ``user``: ``who`` keeps ``thing`` in the drawer and likes tea, a
    friend knows about it, and an edge joins them (so graph BFS and spreading activation run)."""
    llm.route("extract", extract(entities=[(who, "person"), (f"{who} Friend", "person")],
                                 facts=[(who, f"{who} keeps {thing} in the drawer"), (who, f"{who} likes tea"),
                                        (f"{who} Friend", f"{who} Friend knows about {thing}")],
                                 relations=[(who, f"{who} Friend", "friend")]))
    km.write("desk", message, who, user_id=user)
    clock.advance(minutes=1)


#: an ``event_emotion`` reply
NEUTRAL = {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}


def add_all(payload: dict[str, Any]) -> dict[str, Any]:
    """A ``reconcile`` reply that adds every new fact."""
    return {"decisions": [{"new_fact_index": f["index"], "action": "ADD"} for f in payload["new_facts"]]}


def adding_llm():
    """A scripted LLM whose writes add every extracted fact (the extraction is routed per write)."""
    from oramem.testing import ScriptedLLM

    return ScriptedLLM({"event_emotion": NEUTRAL, "reconcile": add_all, "resolve_entity": {"match_index": 0}})


def scope_rows(km, store, user: Optional[str], record_types=("message", "fact")) -> dict[str, Any]:
    """Every knowledge row of scope ``user`` (None: the agent's shared scope), per table, and
    the store records of that user of ``record_types``: compared before and after another
    user's calls, not one byte of the scope may change."""
    t = km.runtime.tables
    out: dict[str, Any] = {}
    with km.runtime.backend.read() as conn:
        for table in t.all_agent_tables():
            if "user_id" not in table.c:
                continue
            cond = table.c.user_id.is_(None) if user is None else table.c.user_id == user
            rows = conn.execute(sa.select(table).where(cond)).mappings().all()
            out[table.name] = sorted(repr(sorted((k, repr(v)) for k, v in r.items())) for r in rows)
    for rtype in record_types:
        out[f"store:{rtype}"] = sorted(
            (r.id, r.content, repr(r.metadata), r.thread_id, r.agent_id, r.expires_at)
            for r in store.list(rtype, limit=None) if r.user_id == user)
    return out
