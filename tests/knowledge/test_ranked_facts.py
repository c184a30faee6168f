"""Issue 25 item 6 (round f): spreading's facts per entity read per key from the rank index
(``queries.ranked_facts``) are the rows, in the order, that one ranked query over every key
returned: per key, the first ``per * 4`` facts the SQL conditions keep, by importance, then
valid_from, newest first, then id, for every scope, with ties, stale, invalidated and
superseded rows, the ``entity_keys`` filter and an ``as_of`` view."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeMemory
from oramem.knowledge.read.spreading import facts_of
from oramem.knowledge.read.state import RetrieveState
from oramem.testing import HashEmbedder

from .helpers import Clock

KEYS = ["person:ana", "person:bo", "person:cy"]


@pytest.fixture(scope="module")
def km(tmp_path_factory):
    clock = Clock()
    store = SQLiteMemoryStore(str(tmp_path_factory.mktemp("rank") / "rank.db"), embedder=HashEmbedder(384), clock=clock)
    km = KnowledgeMemory(store, None, clock=clock)
    for user in ("ana", None, "bo"):
        for name in ("Ana", "Bo", "Cy"):
            for i in range(9):
                km.add_fact("a", name, f"{name} fact {i} of {user}", subject_type="person", user_id=user)
    f = km.runtime.tables.fact
    t0 = clock()
    with km.runtime.backend.sa_engine.begin() as c:
        # in the order of the texts (ids are random), so which facts tie, go stale or end
        # is the same on every run
        ids = [r[0] for r in c.execute(sa.select(f.c.id).order_by(f.c.fact_text))]
        for n, fid in enumerate(ids):  # importance and valid_from with many ties
            c.execute(sa.update(f).where(f.c.id == fid).values(
                importance=(0.5, 0.7, 0.9)[n % 3], valid_from=t0 - timedelta(days=n % 4),
                is_stale=n % 11 == 0,
                invalidated_at=t0 - timedelta(hours=1) if n % 13 == 0 else None,
                valid_to=t0 - timedelta(hours=2) if n % 17 == 0 else None))
    try:
        yield km, clock
    finally:
        km.close()
        store.close()


def _reference(km, st, keys, per, filter_keys):
    lk = km.runtime.tables.link
    v = st.view
    with km.runtime.backend.read() as c:
        rows = [dict(r) for r in c.execute(sa.select(*st.fact_cols())).mappings()]
        linked = {r[0] for r in c.execute(sa.select(lk.c.fact_id).where(lk.c.entity_key.in_(filter_keys or [])))}
    out = {}
    for k in keys:
        kept = [r for r in rows if r["entity_key"] == k and r["agent_id"] == "a" and r["user_id"] in (None, st.user_id)
                and r["ingested_at"] <= v.known and (r["invalidated_at"] is None or r["invalidated_at"] > v.known)
                and r["valid_from"] <= v.at and (r["valid_to"] is None or r["valid_to"] > v.at)
                and not (v.hide_stale and r["is_stale"]) and (filter_keys is None or r["id"] in linked)]
        kept.sort(key=lambda r: r["id"])
        kept.sort(key=lambda r: (r["importance"], r["valid_from"]), reverse=True)
        if kept[: per * 4]:
            out[k] = [r["id"] for r in kept[: per * 4]]
    return out


@pytest.mark.parametrize("user", ["ana", "bo", None])
@pytest.mark.parametrize("as_of_days", [None, 2])
@pytest.mark.parametrize("filter_keys", [None, ["person:bo"]])
@pytest.mark.parametrize("per", [1, 2])
def test_facts_per_entity_are_the_ranked_rows(km, user, as_of_days, filter_keys, per):
    km, clock = km
    now = clock()
    st = RetrieveState.start(km.runtime, agent_id="a", query="q", session_id=None, entity_keys=None,
                             as_of=None if as_of_days is None else now - timedelta(days=as_of_days), known_at=None,
                             include_directives=False, cfg=km.config, now=now, verbose=False, user_id=user)
    with km.runtime.backend.read() as conn:
        got = facts_of(st, conn, km.runtime.tables.fact.c.entity_key, KEYS + ["person:nobody"], per, filter_keys)
    want = _reference(km, st, KEYS, per, filter_keys)
    assert {k: [r["id"] for r in v] for k, v in got.items()} == want
    if filter_keys is None and user is not None:  # her 9 and the 9 shared facts of a key
        assert any(len(v) == per * 4 for v in want.values())  # the cut is exercised
