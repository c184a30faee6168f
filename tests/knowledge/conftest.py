"""Harness of KC §8: ScriptedLLM, HashEmbedder(384), a fresh SQLite store (Oracle when
available), speaker "Pedro", agent "a1", a clock starting at T0=2025-01-01T12:00Z that
advances 1 h per write when ``advance()`` is called."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import HashEmbedder, ScriptedLLM

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)


def oracle_skip_reason() -> str:
    try:
        from oracle import oracle_env

        reason = oracle_env.skip_reason()
    except Exception:  # noqa: BLE001
        reason = "no Oracle database configured"
    base = "KnowledgeMemory on Oracle is written but not runnable here"
    return f"{base}: {reason}" if reason else f"{base}: its PL/SQL deletion hook and commit package are not built (STATUS.md)"


class Clock:
    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: Any) -> datetime:
        self.now = self.now + (timedelta(**kw) if kw else timedelta(hours=1))
        return self.now


@pytest.fixture(params=["sqlite", "oracle"])
def engine(request) -> str:
    if request.param == "oracle":
        reason = oracle_skip_reason()
        print(reason)
        pytest.skip(reason)
    return request.param


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM({"event_emotion": {"emotion": "neutral", "intensity": 0.2, "energy": "medium"}})


@pytest.fixture
def store(engine, tmp_path, clock):
    s = SQLiteMemoryStore(str(tmp_path / "kg.db"), embedder=HashEmbedder(384), clock=clock)
    yield s
    s.close()


@pytest.fixture
def make_km(store, llm, clock):
    made = []

    def factory(**config: Any) -> KnowledgeMemory:
        cfg = KnowledgeConfig(**{"enable_reranker": False, **config})
        km = KnowledgeMemory(store, llm, config=cfg, clock=clock)
        made.append(km)
        return km

    yield factory
    for km in made:
        km.close()


@pytest.fixture
def km(make_km):
    return make_km()


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
