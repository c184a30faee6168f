"""KC-3.10 / KC-6.2 / KC-6.3 / KC-6.7 (red47): what the jobs wrote while an entity carried the
name Alice's erased words gave it. A shared write in her private thread extends the lobby's
"Amelia" to "Amelia Quinlan" (KC-4.9) without a fact of hers about Amelia (the desk noted that
room 12 is ready for Amelia Quinlan). Her ``forget`` gives the entity its name back (kg41), but
the jobs of the shared scope had written, from the lobby's facts only, an entity summary
(``entity_summary`` is shown the display name), a cluster (its label is the display name, and
``cluster_summary`` is shown it) and a community theme (``community`` is shown the clusters'
labels and summaries): "Quinlan" stayed in all three, in every reader's ``entities()`` and
broad retrieve, and in the file. None of them cites her rows, so the erasure did not find
them. Now an erasure that gives an entity its name back also clears that entity's summary
and takes the clusters holding its facts and the community themes citing those facts (the
next runs write them again under the name left)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from oramem import SQLiteMemoryStore
from oramem.knowledge import KnowledgeConfig, KnowledgeMemory
from oramem.testing import HashEmbedder, ScriptedLLM

from .helpers import Clock, extract
from .test_forget import _file_bytes, _table_hits

AGENT = "desk"


def _writes_from_what_it_is_shown(llm) -> None:
    """A model whose texts repeat every name and fact it is shown."""
    llm.route("entity_summary", lambda p: {"summary": f"{p['display_name']}: " + "; ".join(p["facts"])})
    llm.route("cluster_summary", lambda p: {"summary": f"{p['label']}: " + "; ".join(p["facts"])})
    llm.route("community", lambda p: {"title": "Who works where",
                                      "summary": " / ".join(f"{c['label']} ({c['summary']})" for c in p["clusters"])})
    llm.route("consolidate", {"observations": []})
    llm.route("entity_merge", {"should_merge": False})


def _open(tmp_path, **config):
    clock = Clock()
    path = str(tmp_path / "t.db")
    store = SQLiteMemoryStore(path, embedder=HashEmbedder(384), clock=clock, search_strategy="hybrid")
    llm = ScriptedLLM()
    # every two clusters form a community (a theme is written over Amelia's and the pool's)
    km = KnowledgeMemory(store, llm, config=KnowledgeConfig(enable_reranker=False, community_min_clusters=2,
                                                             community_similarity_threshold=-1.0, **config),
                         clock=clock)
    return path, store, km, llm, clock


def _lobby(km, llm, clock, entity, facts) -> None:
    llm.route("extract", extract([entity], [(entity[0], f) for f in facts]))
    km.write(AGENT, "the desk's own notes", "Desk", session_id="lobby")
    clock.advance(minutes=1)


def _world(tmp_path, *, lobby_says_quinlan: bool = False):
    path, store, km, llm, clock = _open(tmp_path)
    _lobby(km, llm, clock, ("Amelia", "person"), ["Amelia works on the third floor", "Amelia parks in bay 4"])
    store.add(["alice: please tell amelia quinlan"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Amelia Quinlan", "person"), ("Room 12", "place")], [("Room 12", "Room 12 is ready")]))
    km.write(AGENT, "Tell Amelia Quinlan room 12 is ready", "Desk", session_id="alice-chat")  # shared, in her thread
    clock.advance(minutes=1)
    if lobby_says_quinlan:  # the lobby uses the longer name too: it stays (kg41)
        _lobby(km, llm, clock, ("Amelia Quinlan", "person"), ["Amelia Quinlan speaks Portuguese"])
    _lobby(km, llm, clock, ("Pool", "place"), ["The pool opens at 9", "The pool closes at 8"])
    _writes_from_what_it_is_shown(llm)
    assert not km.run_background(AGENT).errors
    return path, store, km, llm, clock


def _derived(km) -> list[str]:
    t = km.runtime.tables
    with km.runtime.backend.read() as conn:
        out = [f"entity {r[0]}: {r[1]}" for r in conn.execute(sa.select(t.entity.c.display_name, t.entity.c.summary_text))]
        out += [f"cluster {r[0]}: {r[1]}" for r in conn.execute(sa.select(t.cluster.c.label, t.cluster.c.summary_text))]
        out += [f"theme {r[0]}: {r[1]}" for r in conn.execute(sa.select(t.meta_observation.c.title, t.meta_observation.c.text))]
    return out


def test_what_the_jobs_wrote_under_the_name_her_words_extended_goes_with_her(tmp_path):
    path, store, km, llm, clock = _world(tmp_path)
    try:
        before = _derived(km)
        # the jobs wrote the longer name into Amelia's summary, her cluster and the theme
        assert [x.split(":")[0] for x in before if "Quinlan" in x] == [
            "entity Amelia Quinlan", "cluster Amelia Quinlan", "theme Who works where"], before
        assert "Quinlan" in km.retrieve(AGENT, "tell me everything about Amelia", user_id="bob").context

        km.forget(user_id="alice")

        after = _derived(km)
        assert not [x for x in after if "uinlan" in x], after
        assert _table_hits(path, "uinlan") == {}
        assert "uinlan" not in km.retrieve(AGENT, "tell me everything about Amelia", user_id="bob").context
        # the lobby's rows stay, and the next runs write Amelia's summary and cluster again
        assert sorted(f.fact_text for f in km.get_all(AGENT)) == [
            "Amelia parks in bay 4", "Amelia works on the third floor", "The pool closes at 8", "The pool opens at 9"]
        assert [x.split(":")[0] for x in after if x.startswith("cluster")] == ["cluster Pool"], after
        assert not km.run_background(AGENT).errors
        again = _derived(km)
        assert any(x.startswith("entity Amelia: Amelia: ") for x in again), again
        assert any(x.startswith("cluster Amelia: Amelia: ") for x in again), again
        assert not [x for x in again if "uinlan" in x], again
    finally:
        km.close()
        store.close()
    assert b"uinlan" not in _file_bytes(path)


def test_when_the_lobby_also_used_the_longer_name_what_the_jobs_wrote_stays(tmp_path):
    """Not an over-reach: the name stays (the lobby used it too, kg41), so does what the jobs
    wrote under it."""
    path, store, km, llm, clock = _world(tmp_path, lobby_says_quinlan=True)
    try:
        before = sorted(_derived(km))
        assert any("Quinlan" in x and x.startswith("cluster") for x in before)
        km.forget(user_id="alice")
        # her Room 12 (born of her words, kg41) goes; the rest as it was
        assert sorted(_derived(km)) == [x for x in before if "Room 12" not in x]
    finally:
        km.close()
        store.close()


def _erase_then(store, reply):
    def route(payload):
        store.forget(user_id="alice")  # commits while the job awaits the model
        return reply(payload)
    return route


def _renamed_before_the_jobs(tmp_path, **config):
    """Her write extends Amelia's name; no job has run yet."""
    path, store, km, llm, clock = _open(tmp_path, **config)
    _lobby(km, llm, clock, ("Amelia", "person"), ["Amelia works on the third floor", "Amelia parks in bay 4"])
    store.add(["alice: please tell amelia quinlan"], "message", thread_ids="alice-chat", user_ids="alice",
              agent_ids=AGENT, roles="user")
    llm.route("extract", extract([("Amelia Quinlan", "person"), ("Room 12", "place")], [("Room 12", "Room 12 is ready")]))
    km.write(AGENT, "Tell Amelia Quinlan room 12 is ready", "Desk", session_id="alice-chat")
    clock.advance(minutes=1)
    _writes_from_what_it_is_shown(llm)
    return path, store, km, llm, clock


def test_a_summary_written_while_her_erasure_gave_the_name_back_is_not_stored(tmp_path):
    path, store, km, llm, clock = _renamed_before_the_jobs(tmp_path)
    try:
        llm.route("entity_summary", _erase_then(store, lambda p: {"summary": f"{p['display_name']}: " + "; ".join(p["facts"])}))
        km.refresh_summaries(AGENT)
        assert [x for x in llm.calls_for("entity_summary") if "Quinlan" in x["display_name"]]  # shown the old name
        assert not [x for x in _derived(km) if "uinlan" in x], _derived(km)
    finally:
        km.close()
        store.close()


def test_a_cluster_written_while_her_erasure_gave_the_name_back_is_not_stored(tmp_path):
    path, store, km, llm, clock = _renamed_before_the_jobs(tmp_path)
    try:
        llm.route("cluster_summary", _erase_then(store, lambda p: {"summary": f"{p['label']}: " + "; ".join(p["facts"])}))
        km.cluster_facts(AGENT)
        assert [x for x in llm.calls_for("cluster_summary") if "Quinlan" in x["label"]]  # shown the old name
        assert not [x for x in _derived(km) if "uinlan" in x], _derived(km)
        # the next run writes Amelia's cluster under the name left
        km.cluster_facts(AGENT)
        assert any(x.startswith("cluster Amelia: Amelia: ") for x in _derived(km)), _derived(km)
    finally:
        km.close()
        store.close()


def test_a_merge_decided_while_her_erasure_gave_the_name_back_is_not_made(tmp_path):
    """memify's merge writes the winner's display name into the loser's facts (and the loser's
    names as the winner's aliases, KC-6.5), as read before the ``entity_merge`` call."""
    path, store, km, llm, clock = _renamed_before_the_jobs(tmp_path, memify_merge_similarity_threshold=-1.0)
    try:
        _lobby(km, llm, clock, ("Amy", "person"), ["Amy answers the phone"])
        llm.route("entity_merge", _erase_then(store, lambda p: {"should_merge": True}))
        result = km.memify(AGENT)
        asked = llm.calls_for("entity_merge")
        assert asked and "Quinlan" in repr(asked[0]), asked  # shown the old name
        assert _table_hits(path, "uinlan") == {}
        assert result.merges_executed == 0
        assert {e.display_name for e in km.entities(AGENT)} == {"Amelia", "Amy"}
    finally:
        km.close()
        store.close()


@pytest.mark.xfail(strict=True, reason=(
    "red47, found, not fixed (the erasure's rename step is deletes.py, being changed by obs47): a fact the "
    "lobby writes about Amelia while she is 'Amelia Quinlan' stores that name as its entity_name and in its "
    "store record's chunk text (and keyword index); her forget gives the entity its name back, not the facts"))
def test_a_lobby_fact_written_under_the_name_her_words_extended_keeps_no_trace_of_it(tmp_path):
    path, store, km, llm, clock = _renamed_before_the_jobs(tmp_path)
    try:
        _lobby(km, llm, clock, ("Amelia", "person"), ["Amelia parks in bay 5"])
        km.forget(user_id="alice")
        assert [e.display_name for e in km.entities(AGENT) if e.canonical_key == "person:amelia"] == ["Amelia"]
        # the agent's shared records (what every user's retrieve searches): "Quinlan" finds the fact
        hits = [r[0].content for r in store.search("Quinlan", record_types=["fact"], strategy="keyword")]
        assert (hits, _table_hits(path, "uinlan")) == ([], {})
    finally:
        km.close()
        store.close()
